"""The `tail --resume` state: where the current startup began, how far it was read, what was said.

A small JSON file, written atomically. The position is saved as lines are consumed (at most
once every SAVE_EVERY seconds, and at once when something is reported), so a killed tail loses
at most that much, and lines read twice are not reported twice. For a file the position names
the file by identity (device, inode, a fingerprint of its head), so that a resumed tail finds it
after a rotation and notices a truncation. A state file that is not one is an error (exit 2), and
so is a state another tail is using: each run holds a lock on `<state>.lock` while it lives.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import datetime, timezone
from typing import Any

from logsense.errors import SourceError

SCHEMA = 2
SAVE_EVERY = 1.0  # seconds between two writes while lines come in

_FILE_POS: dict[str, type | tuple[type, ...]] = {"dev": (int, type(None)), "ino": (int, type(None)), "offset": int, "line": int, "head_len": int,
             "head": str}
_JOURNAL_POS: dict[str, type | tuple[type, ...]] = {"cursor": (str, type(None)), "usec": (str, type(None)), "line": int}


class State:
    """Where a tail run is; `fresh` until something was read."""

    def __init__(self, path: str, key: dict[str, Any], data: dict[str, Any] | None = None) -> None:
        self.path = path
        self.key = key
        self.data: dict[str, Any] = data if data is not None else {"schema": SCHEMA, **key}
        self.note: str | None = None
        self._saved_at: float | None = None

    @property
    def fresh(self) -> bool:
        return not self.data.get("position")

    @property
    def start(self) -> dict | None:
        return self.data.get("start")

    @property
    def position(self) -> dict | None:
        return self.data.get("position")

    @property
    def reported(self) -> set[str]:
        return set(self.data.get("reported") or ())

    def began(self, where: dict | None) -> None:
        """A startup began at `where`: a resumed run replays from there."""
        if where is not None:
            self.data["start"] = where

    def moved(self, position: dict, reported: set[str], now: float, force: bool = False) -> None:
        """Lines were consumed up to `position`: saved when SAVE_EVERY has passed, or now with `force`."""
        self.data["position"] = position
        self.data["reported"] = sorted(reported)
        if force or self._saved_at is None or now - self._saved_at >= SAVE_EVERY:
            self.save()
            self._saved_at = now

    def save(self) -> None:
        self.data["updated"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        tmp = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.data, fh, indent=1)
                fh.write("\n")
            os.replace(tmp, self.path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def key_for(kind: str, target: str | None, files: list[str], directory: str | None) -> dict[str, Any]:
    if kind == "file":
        return {"kind": "file", "target": os.path.abspath(target or "")}
    return {"kind": "journal", "target": target, "files": sorted(os.path.abspath(f) for f in files),
            "directory": os.path.abspath(directory) if directory else None}


def load(path: str, key: dict[str, Any]) -> State:
    """The state in `path` for this target; a new one when there is none, or it is for another target.
    The state is locked for as long as this process lives."""
    _lock(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        st = State(path, key)
        st.note = f"{path}: no state yet; it will be written"
        return st
    except OSError as e:
        raise SourceError(f"{path}: cannot read the --resume state: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise SourceError(f"{path}: not a logsense tail state (not JSON); remove it or give another --resume path") \
            from None
    problem = _problem(data)
    if problem:
        raise SourceError(f"{path}: not a usable logsense tail state: {problem}; remove it or give another "
                          "--resume path")
    if any(data.get(k) != v for k, v in key.items()):
        st = State(path, key)
        st.note = f"{path}: the state is for {data.get('kind')} {data.get('target')}; starting afresh"
        return st
    st = State(path, key, data)
    st.note = f"{path}: resuming at line {(data.get('position') or {}).get('line', 0)}"
    return st


_held: dict[str, int] = {}  # lock file -> its descriptor, open while the process lives


def _lock(path: str) -> None:
    """Two runs on one state would each overwrite the other's position: the second one is refused."""
    lock = os.path.abspath(path) + ".lock"
    if lock in _held:
        return
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise SourceError(f"{lock}: cannot lock the --resume state: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise SourceError(f"{path}: another logsense tail is using this --resume state; stop it or give "
                          "another --resume path") from None
    _held[lock] = fd


def _problem(data: Any) -> str | None:
    """What makes `data` not a state this version can use; None when it is one."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("schema") != SCHEMA:
        return f"schema {data.get('schema')!r}, this version writes {SCHEMA}"
    kind = data.get("kind")
    if kind not in ("file", "journal"):
        return f"'kind' is {kind!r}, not 'file' or 'journal'"
    if not isinstance(data.get("target"), (str, type(None))):
        return "'target' is not a string"
    fields = _FILE_POS if kind == "file" else _JOURNAL_POS
    for name in ("start", "position"):
        pos = data.get(name)
        if pos is None:
            continue
        if not isinstance(pos, dict):
            return f"'{name}' is not an object"
        for k, types in fields.items():
            v = pos.get(k)
            if k not in pos or isinstance(v, bool) or not isinstance(v, types):
                return f"'{name}.{k}' is {'missing' if k not in pos else type(v).__name__}"
            if isinstance(v, int) and v < 0:
                return f"'{name}.{k}' is negative"
    reported = data.get("reported", [])
    if not isinstance(reported, list) or not all(isinstance(x, str) for x in reported):
        return "'reported' is not a list of strings"
    return None
