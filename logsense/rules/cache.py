"""Compiled rule packs as plain data, for logsense.cache: parsing and compiling the YAML is most of a small run.

An entry is keyed by the pack file's bytes and the code that reads it (the parser's own source,
the fact names a fix may use, the taxonomy the causes are checked against). It is rebuilt into
the dataclasses `_types()` names and nothing else, and what does not come back exactly as it
was stored is not stored: a wrong or corrupt entry costs a re-parse, never a wrong rule.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

from logsense import cache

_HERE = Path(__file__).resolve().parent
# The code whose behaviour an entry depends on, besides the pack: the parser, the compiler, the
# field tables, this codec, the fact names a fix template may use, and the cause ids.
_CODE = (_HERE / "loader.py", _HERE / "compile.py", _HERE / "schema.py", _HERE / "phases.py", _HERE / "cache.py",
         _HERE.parent / "facts.py", _HERE.parent / "taxonomy.yaml")


def key(kind: str, data: bytes) -> str:
    """The entry name for a pack (or phase) file's bytes."""
    return cache.key(f"rules-{kind}-{_code_key()}", data)


@lru_cache(maxsize=1)
def _types() -> dict[str, type]:
    from logsense.model import FixKind, Role, RuleStatus
    from logsense.rules.compile import CompiledRule
    from logsense.rules.loader import ExampleSpec, FixSpec, PatternSpec, RuleSpec
    from logsense.rules.phases import PhaseSpec

    return {t.__name__: t for t in (CompiledRule, PhaseSpec, RuleSpec, PatternSpec, FixSpec, ExampleSpec,
                                    Role, RuleStatus, FixKind)}


_DATACLASS, _PATTERN, _TAGGED_TUPLE, _ENUM = 0, 1, 2, 3
_TAG = "\0logsense"  # first item of a tuple that stands for a dataclass or a pattern
_LEAVES = (str, int, float, bool, type(None), bytes)


def encode(value: Any) -> Any:
    """Plain data (marshal can write it) for a value made of the cached dataclasses, patterns and plain values.

    A dataclass is (_TAG, _DATACLASS, its type's name, its field values in order): the field
    names are part of the entry's key (`_code_key`).
    """
    from logsense.rules.compile import Pattern

    if isinstance(value, Enum):  # before the leaves: a str enum is a str, but marshal takes no subclass
        name = type(value).__name__
        if _types().get(name) is not type(value):
            raise TypeError(f"{name} is not a cached type")
        return (_TAG, _ENUM, name, value.value)
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, Pattern):
        return (_TAG, _PATTERN, encode(value.spec), tuple(value.literals), bool(value.icase), value.freeze())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _types().get(name) is not type(value):
            raise TypeError(f"{name} is not a cached type")
        return (_TAG, _DATACLASS, name, *(encode(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, tuple):
        items = tuple(encode(x) for x in value)
        return (_TAG, _TAGGED_TUPLE, *items) if items and items[0] == _TAG else items
    if isinstance(value, list):
        return [encode(x) for x in value]
    if isinstance(value, dict):
        return {encode(k): encode(x) for k, x in value.items()}
    if isinstance(value, frozenset):
        return frozenset(encode(x) for x in value)
    raise TypeError(f"{type(value).__name__} cannot be cached")


def decode(value: Any) -> Any:
    """The value `encode` was given; TypeError/ValueError/KeyError/IndexError on anything else."""
    from logsense.rules.compile import Pattern
    from logsense.rules.loader import PatternSpec

    types = _types()

    def walk(v: Any) -> Any:
        t = type(v)
        if t is tuple:
            if v and v[0] == _TAG:
                kind = v[1]
                if kind == _DATACLASS:
                    return types[v[2]](*[x if type(x) in _LEAVES else walk(x) for x in v[3:]])
                if kind == _PATTERN:
                    spec = walk(v[2])
                    if (not isinstance(spec, PatternSpec) or type(v[3]) is not tuple or type(v[4]) is not bool
                            or type(v[5]) is not bytes):
                        raise TypeError("not a pattern")
                    return Pattern(spec, v[3], v[4], frozen=v[5])
                if kind == _TAGGED_TUPLE:
                    return tuple([x if type(x) in _LEAVES else walk(x) for x in v[2:]])
                if kind == _ENUM:
                    return types[v[2]](v[3])
                raise ValueError(f"unknown tag {kind!r}")
            return tuple([x if type(x) in _LEAVES else walk(x) for x in v])
        if t is list:
            return [x if type(x) in _LEAVES else walk(x) for x in v]
        if t is dict:
            return {walk(k): walk(x) for k, x in v.items()}
        if t is frozenset:
            return frozenset(walk(x) for x in v)
        if t in _LEAVES:
            return v
        raise TypeError(f"{t.__name__} is not plain data")

    return walk(value)


def _layout(t: Any) -> tuple[str, ...]:
    """A cached type's shape: an enum's values, a dataclass's field names."""
    return tuple(m.value for m in t) if issubclass(t, Enum) else tuple(f.name for f in dataclasses.fields(t))


@lru_cache(maxsize=1)
def _code_key() -> str:
    """The reading code's source and each cached type's field names (an enum's values): other code, other entries."""
    layout = {name: _layout(t) for name, t in sorted(_types().items())}
    return cache.source_digest(_CODE) + cache.digest_of(repr(layout).encode()).hex()[:16]


def load(name: str) -> Any:
    """The compiled value stored as `name`, or None."""
    value = cache.load(name)
    if value is None:
        return None
    try:
        return decode(value)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None


def store(name: str, value: Any) -> None:
    """Keep `value` as entry `name` when it comes back the same; quietly not otherwise."""
    try:
        plain = encode(value)
        if encode(decode(plain)) != plain:
            return  # something that does not come back the same: parse it each time
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return
    cache.store(name, plain)
