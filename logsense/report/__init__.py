"""Rendering reports: text (report.term; rich only for tables), json (the contract); report.formats names each kind's formats."""
