"""Translate a rule pattern to POSIX ERE for `grep -E -f` (the benchmark's reference scanner)."""

from __future__ import annotations

import re

_NAMED = re.compile(r"\(\?P<\w+>")
_NONCAP = re.compile(r"\(\?:")


def to_ere(pattern: str) -> str | None:
    """The pattern as grep -E reads it, or None when it uses what ERE lacks (lookarounds, backrefs)."""
    p = pattern
    icase = False
    if p.startswith("(?i)"):
        icase, p = True, p[4:]
    if re.search(r"\(\?[=!<]|\\[1-9]|\(\?\w", _NONCAP.sub("(", _NAMED.sub("(", p))):
        return None
    p = _NAMED.sub("(", p)
    p = _NONCAP.sub("(", p)
    p = p.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\w", "[[:alnum:]_]")
    p = p.replace(r"\S", "[^[:space:]]").replace(r"\D", "[^0-9]").replace(r"\W", "[^[:alnum:]_]")
    p = re.sub(r"\\b", "", p)
    p = re.sub(r"(\*|\+|\?|\})\?", r"\1", p)  # lazy quantifiers: same lines match
    if icase:
        p = re.sub(r"[A-Za-z]", lambda m: f"[{m.group(0).lower()}{m.group(0).upper()}]", p)
    return p
