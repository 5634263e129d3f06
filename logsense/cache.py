"""The user's cache dir: what logsense can recompute (compiled rule packs, the taxonomy), kept to start fast.

An entry is marshal data of plain values only (never pickle: nothing in it is ever run), named
by a hash of everything it was computed from, and checked against its BLAKE2b digest before marshal
reads it. Whatever is missing, damaged, of another schema or under another name is a miss: a
wrong or corrupt cache costs the recomputation, never a wrong answer. LOGSENSE_NO_CACHE=1 turns
the cache off; an unwritable dir only costs the recomputation next time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

try:  # CPython's own BLAKE2: `import hashlib` would first initialise OpenSSL, ~10 ms of every start
    from _blake2 import blake2b as _blake2b
except ImportError:  # another Python
    from hashlib import blake2b as _blake2b

SCHEMA = 1
KEEP = 256  # entries kept (~50 KB each): a rule set is ~25, each edit of a pack adds one, the oldest go
KEEP_PARTS = 8  # entries with parts kept (a whole rule set, ~1 MB each): one per rule set in use
_ERRORS = (OSError, ValueError, TypeError, EOFError, RecursionError)


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/logsense (default ~/.cache/logsense); None when LOGSENSE_NO_CACHE is set."""
    if os.environ.get("LOGSENSE_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "logsense"


def key(kind: str, data: bytes) -> str:
    """The entry name for `data` read as `kind` (which names the code that reads it) by this logsense and Python."""
    from logsense import __version__

    h = _blake2b(f"{kind}\0logsense {__version__}\0schema {SCHEMA}\0python {sys.version}\0".encode(), digest_size=32)
    h.update(data)
    return h.hexdigest()


def digest_of(data: bytes) -> bytes:
    """A 32-byte digest of `data` (BLAKE2b)."""
    return _blake2b(data, digest_size=32).digest()


def source_digest(paths: tuple[Path, ...]) -> str:
    """A digest of source files, for a `kind` that changes whenever the code that reads an entry does."""
    h = _blake2b(digest_size=32)
    for path in paths:
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing " + path.name.encode())  # an installed build without sources: the version decides
    return h.hexdigest()[:16]


def load(name: str) -> Any:
    """The plain value stored as `name`, or None (missing, unreadable, damaged or not this entry)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        blob = (folder / "entries" / f"{name}.bin").read_bytes()
        digest, body = blob[:32], blob[32:]
        if digest_of(body) != digest:
            return None  # truncated or damaged: marshal is only ever given the bytes store() wrote
        import marshal

        header, value = marshal.loads(body)
        return value if header == (SCHEMA, name) else None
    except _ERRORS:
        return None


def store(name: str, value: Any) -> None:
    """Keep plain `value` as entry `name`, quietly not when it cannot be (an unwritable dir, a value marshal refuses)."""
    folder = cache_dir()
    if folder is None:
        return
    import marshal

    try:
        body = marshal.dumps(((SCHEMA, name), value))
        entries = folder / "entries"
        entries.mkdir(parents=True, exist_ok=True)
        tmp = entries / f".{name}.{os.getpid()}.tmp"
        tmp.write_bytes(digest_of(body) + body)
        tmp.replace(entries / f"{name}.bin")  # readers see the old entry or the new one, never half of one
        _prune(entries)
    except _ERRORS:
        pass


def store_parts(name: str, value: Any, parts: list[bytes]) -> None:
    """Keep `value` as entry `name` with `parts` (bytes) in a file beside it, each checked only when read.

    The parts file is named by its contents, and the entry names it: two processes keeping the
    same entry at once each pair their own (a part's bytes may differ from one process to the
    next: the `regex` module's compiled form follows the string hashes). The parts go first.
    """
    folder = cache_dir()
    if folder is None:
        return
    index = [(len(p), digest_of(p)) for p in parts]
    token = digest_of(b"".join(d for _, d in index)).hex()[:16]
    try:
        entries = folder / "entries"
        entries.mkdir(parents=True, exist_ok=True)
        tmp = entries / f".{name}.{os.getpid()}.parts.tmp"
        tmp.write_bytes(b"".join(parts))
        tmp.replace(entries / f"{name}.{token}.parts")
    except _ERRORS:
        return
    store(name, (value, token, index))
    for other in _parts_files(folder / "entries", name):
        if other.name != f"{name}.{token}.parts":
            other.unlink(missing_ok=True)


def load_parts(name: str) -> tuple[Any, Parts] | None:
    """What `store_parts` kept as `name`: its value and its parts, or None."""
    entry = load(name)
    folder = cache_dir()
    if entry is None or folder is None:
        return None
    try:
        value, token, index = entry
        data = (folder / "entries" / f"{name}.{token}.parts").read_bytes()
        return value, Parts(data, index)
    except _ERRORS:
        return None


def drop(name: str) -> None:
    """Remove entry `name` and its parts, quietly when there is none or the dir is not writable."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        for path in [folder / "entries" / f"{name}.bin", *_parts_files(folder / "entries", name)]:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def _parts_files(entries: Path, name: str) -> list[Path]:
    return list(entries.glob(f"{name}.*.parts"))


class Parts:
    """An entry's parts, each checked against its digest when taken: `parts[i]` raises ValueError when damaged."""

    def __init__(self, data: bytes, index: list[tuple[int, bytes]]) -> None:
        self._data = data
        self._index = index
        self._starts = [0]
        for size, _digest in index:
            self._starts.append(self._starts[-1] + size)

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, i: int) -> bytes:
        size, digest = self._index[i]
        part = self._data[self._starts[i] : self._starts[i] + size]
        if len(part) != size or digest_of(part) != digest:
            raise ValueError(f"part {i} is damaged")
        return part


def _prune(entries: Path) -> None:
    for old in sorted(entries.glob("*.bin"), key=lambda p: p.stat().st_mtime)[:-KEEP]:
        old.unlink(missing_ok=True)
        for parts in _parts_files(entries, old.stem):
            parts.unlink(missing_ok=True)
    for old in sorted(entries.glob("*.parts"), key=lambda p: p.stat().st_mtime)[:-KEEP_PARTS]:
        old.unlink(missing_ok=True)
        (entries / f"{old.name.split('.')[0]}.bin").unlink(missing_ok=True)
