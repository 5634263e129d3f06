"""A server's arguments as its log dumps them (`Name(a=1, ...)`, `{'a': 1}`, `a=1, ...`), read as Python values."""

from __future__ import annotations

import re
from typing import Any

from logsense import re_cache

_ARG = re_cache.compile(r"(\w+)=")
_CALL = re_cache.compile(r"[A-Za-z_]\w*\(")


def parse_args_body(body: str) -> dict[str, Any]:
    """`Name(a=1, ...)`, `{'a': 1, ...}` or `a=1, b='x', ...` -> {name: Python value}."""
    out: dict[str, Any] = {}
    named = _CALL.match(body)  # a class's name before the fields: "ServerArgs("
    i = named.end() if named else 1 if body[:1] in "({" else 0
    dict_form = body[:1] == "{"
    n = len(body)
    while i < n:
        while i < n and body[i] in " ,\n":
            i += 1
        if dict_form:
            m = re.compile(r"['\"](\w+)['\"]\s*:\s*").match(body, i)
        else:
            m = _ARG.match(body, i)
        if not m:
            break
        key = m.group(1)
        j = m.end()
        val, j = _value(body, j)
        out[key] = val
        i = j
    return out


def _value(s: str, i: int) -> tuple[Any, int]:
    n = len(s)
    if i >= n:
        return None, i
    ch = s[i]
    if ch in "'\"":
        j = i + 1
        while j < n and s[j] != ch:
            j += 2 if s[j] == "\\" else 1
        return s[i + 1 : j], j + 1
    call = _CALL.match(s, i)  # a nested config object's repr: "PhaseConfig(backend='x', bs=[4, 8])"
    if ch in "[({" or call:
        depth, j = 0, call.end() - 1 if call else i
        while j < n:
            c = s[j]
            if c in "'\"":
                _, j = _value(s, j)
                continue
            if c in "[({":
                depth += 1
            elif c in "])}":
                depth -= 1
                if depth == 0:
                    return s[i : j + 1], j + 1
            j += 1
        return s[i:], n
    j = i
    while j < n and s[j] not in ",)}":
        j += 1
    raw = s[i:j].strip()
    if raw in ("None", "null"):
        return None, j
    if raw in ("True", "true"):
        return True, j
    if raw in ("False", "false"):
        return False, j
    try:
        return (int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw)), j
    except ValueError:
        return raw, j
