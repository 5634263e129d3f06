"""Translate a rule pattern to POSIX ERE for `grep -E -f` (the benchmark's reference scanner)."""

from __future__ import annotations

import re

_NAMED = re.compile(r"\(\?P<\w+>")
_NONCAP = re.compile(r"\(\?:")


def to_ere(pattern: str) -> str | None:
    """The pattern as grep -E reads it, or None when it uses what ERE lacks (lookarounds, backrefs, conditionals)."""
    p = pattern
    icase = False
    if p.startswith("(?i)"):
        icase, p = True, p[4:]
    if re.search(r"\(\?[=!<(]|\\[1-9]|\(\?\w", _NONCAP.sub("(", _NAMED.sub("(", p))):
        return None
    p = _NAMED.sub("(", p)
    p = _NONCAP.sub("(", p)
    p = re.sub(r"\\b", "", p)
    p = re.sub(r"(\*|\+|\?|\})\?", r"\1", p)  # lazy quantifiers: same lines match
    return _shorthands(p, icase)


_OUTSIDE = {"d": "[0-9]", "s": "[[:space:]]", "w": "[[:alnum:]_]", "D": "[^0-9]", "S": "[^[:space:]]",
            "W": "[^[:alnum:]_]"}
_INSIDE = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}  # within a bracket expression


def _shorthands(p: str, icase: bool) -> str | None:
    """`\\d`, `\\s`, `\\w` and their negations as ERE classes, inside brackets too, and each letter in both
    cases when `icase`; None when ERE cannot say it (a negated shorthand or an escaped letter
    inside a bracket, as in `[\\S,]`, or a letter inside a bracket with `icase`)."""
    out: list[str] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            out.append(_OUTSIDE.get(p[i + 1], p[i : i + 2]))
            i += 2
        elif c == "[":
            end = _bracket(p, i + 1, icase)
            if end is None:
                return None
            out.append(end[0])
            i = end[1]
        else:
            out.append(f"[{c.lower()}{c.upper()}]" if icase and c.isascii() and c.isalpha() else c)
            i += 1
    return "".join(out)


def _bracket(p: str, i: int, icase: bool) -> tuple[str, int] | None:
    """The bracket expression whose members start at `i`, as ERE writes it, and where it ends; None if ERE cannot.

    ERE has no escapes in brackets: a ']' is a member when first, a '-' when last. A line holds
    no newline, so `\\n` is no member (`[^\\n]` is any character).
    """
    negate = p[i : i + 1] == "^"
    i += negate
    members: list[str] = []
    close = dash = False
    first = True
    while i < len(p):
        c = p[i]
        if c == "]" and not first:
            body = ("]" if close else "") + "".join(members) + ("-" if dash else "")
            if not body:  # only newlines: [^\n] is any character, [\n] none
                return (".", i + 1) if negate else None
            return f"[{'^' if negate else ''}{body}]", i + 1
        first = False
        if c == "\\" and i + 1 < len(p):
            x = p[i + 1]
            i += 2
            if x in _INSIDE:
                members.append(_INSIDE[x])
            elif x == "n":
                pass
            elif x.isalnum():
                return None  # \S, \t, \x41 ...
            elif x == "]":
                close = True
            elif x == "-":
                dash = True
            else:
                members.append(x)
            continue
        if c == "]":
            close = True
        elif icase and c.isascii() and c.isalpha():
            return None
        else:
            members.append(c)
        i += 1
    return None  # no closing bracket
