"""Rendering a Report: text (report.term; rich only for tables), json (the contract); FORMATS names them."""

FORMATS = ("text", "json")
