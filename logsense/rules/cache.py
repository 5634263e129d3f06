"""The compiled-pack cache: what a pack file parses to, kept as plain data in the user's cache dir.

Parsing, validating and compiling the YAML packs is most of what a small `analyze` costs; their
result is plain data. An entry is keyed by the file's bytes, the code that reads it (logsense's
version, the parser's own source, the taxonomy the causes are checked against) and the Python
version, so an edit anywhere is a miss. An entry is marshal data of plain values only (never
pickle: nothing in it is run), checked against its SHA-256 before it is read, and rebuilt into
the dataclasses `_types()` names and nothing else; whatever does not come back exactly is a miss.
So a wrong or corrupt cache costs a re-parse, never a wrong rule. LOGSENSE_NO_CACHE=1 turns it
off; an unwritable dir only costs the parse next time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA = 1
KEEP = 64  # entries kept: each edit of a pack adds one, the oldest go

_HERE = Path(__file__).resolve().parent
# The code whose behaviour an entry depends on, besides the pack: the parser, the compiler, the
# field tables, the fact names a fix template may use, and the cause ids.
_CODE = (_HERE / "loader.py", _HERE / "compile.py", _HERE / "schema.py", _HERE / "phases.py", _HERE / "cache.py",
         _HERE.parent / "facts.py", _HERE.parent / "taxonomy.yaml")


def cache_dir() -> Path | None:
    """Where logsense keeps what it can recompute (None: LOGSENSE_NO_CACHE is set)."""
    if os.environ.get("LOGSENSE_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "logsense"


@lru_cache(maxsize=1)
def _salt() -> bytes:
    from logsense import __version__

    h = hashlib.sha256(f"logsense {__version__} schema {SCHEMA} python {sys.version}".encode())
    for path in _CODE:
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing " + path.name.encode())  # an installed .pyc-only build: the version decides
    return h.digest()


def key(kind: str, data: bytes) -> str:
    """The entry name for `data` (a pack file's bytes) read as `kind`."""
    return hashlib.sha256(_salt() + kind.encode() + b"\0" + data).hexdigest()


@lru_cache(maxsize=1)
def _types() -> dict[str, type]:
    from logsense.rules.compile import CompiledRule
    from logsense.rules.loader import ExampleSpec, FixSpec, PatternSpec, RuleSpec
    from logsense.rules.phases import PhaseSpec

    return {t.__name__: t for t in (CompiledRule, PhaseSpec, RuleSpec, PatternSpec, FixSpec, ExampleSpec)}


_DATACLASS, _PATTERN, _TAGGED_TUPLE = 0, 1, 2
_TAG = "\0logsense"  # first item of a tuple that stands for a dataclass or a pattern
_LEAVES = (str, int, float, bool, type(None), bytes)


def encode(value: Any) -> Any:
    """Plain data (marshal can write it) for a value made of the cached dataclasses, patterns and plain values.

    A dataclass is (_TAG, _DATACLASS, its type's name, its field values in order); field names
    are checked separately (see `_layout`).
    """
    from logsense.rules.compile import Pattern

    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, Pattern):
        return (_TAG, _PATTERN, encode(value.spec), tuple(value.literals), bool(value.icase))
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
                    if not isinstance(spec, types["PatternSpec"]) or type(v[3]) is not tuple or type(v[4]) is not bool:
                        raise TypeError("not a pattern")
                    return Pattern(spec, v[3], v[4])
                if kind == _TAGGED_TUPLE:
                    return tuple([x if type(x) in _LEAVES else walk(x) for x in v[2:]])
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


def _layout() -> dict[str, tuple[str, ...]]:
    """Each cached type's field names: an entry written for other fields is a miss."""
    return {name: tuple(f.name for f in dataclasses.fields(t)) for name, t in sorted(_types().items())}


def load(name: str) -> Any:
    """The entry `name`, or None when it is missing, unreadable or not what was stored."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        blob = (folder / "packs" / f"{name}.bin").read_bytes()
        digest, body = blob[:32], blob[32:]
        if hashlib.sha256(body).digest() != digest:
            return None  # truncated or damaged: marshal is only ever given bytes this module wrote
        import marshal

        header, value = marshal.loads(body)
        if header != (SCHEMA, name, _layout_key()):
            return None
        return decode(value)
    except (OSError, ValueError, TypeError, KeyError, IndexError, EOFError, RecursionError):
        return None


@lru_cache(maxsize=1)
def _layout_key() -> str:
    return hashlib.sha256(repr(_layout()).encode()).hexdigest()


def store(name: str, value: Any) -> None:
    """Keep `value` as entry `name` when it decodes back to the same; quietly not otherwise."""
    folder = cache_dir()
    if folder is None:
        return
    import marshal

    try:
        plain = encode(value)
        body = marshal.dumps(((SCHEMA, name, _layout_key()), plain))
        if encode(decode(marshal.loads(body)[1])) != plain:
            return  # something that does not come back the same: parse it each time
        packs = folder / "packs"
        packs.mkdir(parents=True, exist_ok=True)
        tmp = packs / f".{name}.{os.getpid()}.tmp"
        tmp.write_bytes(hashlib.sha256(body).digest() + body)
        tmp.replace(packs / f"{name}.bin")  # readers see the old entry or the new one, never half of one
        _prune(packs)
    except (OSError, ValueError, TypeError, KeyError, IndexError, EOFError, RecursionError):
        pass


def _prune(packs: Path) -> None:
    entries = sorted(packs.glob("*.bin"), key=lambda p: p.stat().st_mtime)
    for old in entries[:-KEEP]:
        old.unlink(missing_ok=True)
