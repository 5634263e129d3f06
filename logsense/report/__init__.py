"""Rendering a Report: text (rich), json (the contract); FORMATS names them."""

FORMATS = ("text", "json")
