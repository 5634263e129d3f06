"""journald as a live source: a unit's entries from its latest start, followed as they are written.

Two readers give the same entries. systemd-python's `journal.Reader` (imported only here,
when a journal is read) is used when it is installed; otherwise `journalctl -o export` runs
as a subprocess. `LOGSENSE_JOURNAL_BACKEND=systemd|journalctl` forces one (default `auto`).
Either way an entry is handed out as a dict of strings named as in journalctl's JSON, which
`Normalizer.feed_entry` turns into records.

A unit matches on `_SYSTEMD_UNIT` (its own output), `UNIT` (systemd's messages about it) and
`OBJECT_SYSTEMD_UNIT` (other daemons' messages about it), for `NAME` and `NAME.service`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from typing import IO, TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import subprocess

from logsense.errors import SourceError, UsageError
from logsense.normalize import journal_message

BACKEND_ENV = "LOGSENSE_JOURNAL_BACKEND"
BACKENDS = ("auto", "systemd", "journalctl")
JOURNAL_DIRS = ("/run/log/journal", "/var/log/journal")
SCAN_LIMIT = 200_000  # entries looked at, newest first, to find where the latest run began
JUMP_AFTER = 2_000  # past this many, a run with an invocation id is looked up by it in the journal's index
BATCH = 2000  # entries handed out per read, so a long backlog does not hold up the live view
UNIT_FIELDS = ("_SYSTEMD_UNIT", "UNIT", "OBJECT_SYSTEMD_UNIT")
_UNIT_SUFFIXES = (".service", ".socket", ".target", ".scope", ".slice", ".mount", ".timer", ".path", ".swap")

# MESSAGE_IDs of systemd's own unit messages (systemd.catalog)
_STARTING = "7d4958e842da4a758f6c1cdc7b36dcc5"  # a start job has begun
_STARTED = "39f53479d3a045ac8e11786248231fbf"  # a start job has finished
_STOPS = {
    "be02cf6855d2428ba40df7e9d022f03d",  # a start job has failed ("Failed to start ...")
    "de5b426a63be47a7b6ac3eaac82e2f6f",  # a stop job has begun ("Stopping ...")
    "9d1aaa27d60140bd96365438aad20286",  # a stop job has finished ("Stopped ...")
    "98e322203f7a4ed290d09fe03c09fe15",  # unit process exited ("Main process exited, ...")
    "d9b373ed55a64feb8242e02dbe79a49c",  # unit failed ("Failed with result ...")
    "7ad2d189f7e94e70a38c781354912448",  # unit succeeded ("Deactivated successfully.")
}
_SCAN_FIELDS = ("MESSAGE", "MESSAGE_ID", "_PID", "_COMM", "SYSLOG_IDENTIFIER", "UNIT", "USER_UNIT",
                "OBJECT_SYSTEMD_UNIT", "_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "USER_INVOCATION_ID")
_START_TEXT = re.compile(r"^Start(?:ing|ed) ")
_STOP_TEXT = re.compile(
    r"^(?:Stopping|Stopped|Failed to start) "
    r"|: (?:Main process exited|Control process exited|Failed with result|Deactivated successfully)"
)


def unit_names(unit: str | None) -> tuple[str, ...]:
    """The names a unit goes by in the journal: `NAME` and `NAME.service` (unless it has a type)."""
    if not unit:
        return ()
    if unit.endswith(_UNIT_SUFFIXES):
        return (unit,)
    return (unit, unit + ".service")


def lifecycle(entry: dict, names: tuple[str, ...]) -> str | None:
    """'start' or 'stop' when the entry is systemd's own word about one of the units, else None."""
    if not names:
        return None
    unit = entry.get("UNIT") or entry.get("USER_UNIT") or entry.get("OBJECT_SYSTEMD_UNIT")
    if unit not in names:
        return None
    if entry.get("_PID") != "1" and entry.get("SYSLOG_IDENTIFIER") != "systemd" and entry.get("_COMM") != "systemd":
        return None
    mid = entry.get("MESSAGE_ID")
    if mid in (_STARTING, _STARTED):
        return "start"
    if mid in _STOPS:
        return "stop"
    return unit_word(message(entry))


def unit_word(text: str) -> str | None:
    """'start' | 'stop' when systemd's message about a unit says it starts or stops."""
    if _START_TEXT.match(text):
        return "start"
    if _STOP_TEXT.search(text):
        return "stop"
    return None


def is_starting(entry: dict) -> bool:
    return entry.get("MESSAGE_ID") == _STARTING or message(entry).startswith("Starting ")


def invocation(entry: dict) -> str | None:
    return entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID") or entry.get("USER_INVOCATION_ID")


def message(entry: dict) -> str:
    """A journal entry's MESSAGE as text ("" when it has none)."""
    return journal_message(entry) or ""


def entry_epoch(entry: dict) -> float | None:
    ts = entry.get("__REALTIME_TIMESTAMP")
    return int(ts) / 1e6 if isinstance(ts, str) and ts.isdigit() else None


def find_run_start(newest_first: Iterator[dict], names: tuple[str, ...], limit: int = SCAN_LIMIT,
                   first_of: Callable[[str], dict | None] | None = None) -> dict | None:
    """The first entry of the unit's latest run, looking from the newest entry back.

    A run begins at systemd's "Starting" entry; it also ends (going back) where another
    invocation id appears, or at a stop of the previous run once this run's "Started" was
    passed (services that log only "Started"). A run longer than JUMP_AFTER entries with an
    invocation id begins at that id's first entry (`first_of`, the journal's own index);
    without one, at the oldest entry looked at.
    """
    first = None
    inv = None
    started = False
    for n, e in enumerate(newest_first):
        if n >= limit or (n >= JUMP_AFTER and inv is not None and first_of is not None):
            return (first_of(inv) if inv is not None and first_of is not None else None) or first
        life = lifecycle(e, names)
        eid = invocation(e)
        if eid:
            if inv is None:
                inv = eid
            elif eid != inv:
                break
        if life == "stop" and started:
            break
        first = e
        if life == "start":
            if is_starting(e):
                break
            started = True
    return first


# -- times -------------------------------------------------------------------------------------

_SPAN_UNITS = {
    "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800, "weeks": 604800,
}
_SPAN_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)")


def parse_span(text: str, default_unit: str = "s") -> float | None:
    """A time span as systemd writes it: '90s', '20m', '1h30min', '2 days'; a bare number is seconds."""
    s = text.strip().lower()
    if not s:
        return None
    total, pos = 0.0, 0
    while pos < len(s):
        m = _SPAN_PART.match(s, pos)
        if not m or m.end() == pos:
            return None
        unit = m[2] or default_unit
        if unit not in _SPAN_UNITS:
            return None
        total += float(m[1]) * _SPAN_UNITS[unit]
        pos = m.end()
        while pos < len(s) and s[pos] == " ":
            pos += 1
    return total


def parse_since(text: str, now: float | None = None) -> float:
    """journalctl's --since forms -> epoch seconds: '2026-01-01 10:00[:00]', '10:00', 'today', 'yesterday',
    'now', '-2h', '2h ago', '@EPOCH'; local time unless it ends in ' UTC' or 'Z'."""
    now = time.time() if now is None else now
    s = text.strip()
    low = s.lower()
    try:
        if low.startswith("@"):
            return float(low[1:])
        if low == "now":
            return now
        if low in ("today", "yesterday", "tomorrow"):
            day = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
            return (day + timedelta(days={"today": 0, "yesterday": -1, "tomorrow": 1}[low])).timestamp()
        if low[:1] in "+-" or low.endswith(" ago"):
            span = parse_span(low[1:] if low[:1] in "+-" else low[:-4])
            if span is not None:
                return now + span if low[:1] == "+" else now - span
        tz = None
        for suffix in (" utc", "z"):
            if low.endswith(suffix):
                s, tz = s[: -len(suffix)].strip(), timezone.utc
                break
        s = s.replace("T", " ")
        if re.fullmatch(r"\d\d:\d\d(?::\d\d(?:\.\d+)?)?", s):
            s = datetime.fromtimestamp(now, tz).strftime("%Y-%m-%d ") + s
        dt = datetime.fromisoformat(s)
        if tz is not None:
            dt = dt.replace(tzinfo=tz)
        return dt.timestamp()
    except (ValueError, OverflowError):
        pass
    raise UsageError(f"--since {text!r}: use 'YYYY-MM-DD HH:MM:SS', 'HH:MM', 'today', 'yesterday', '-2h', "
                     "'2h ago' or '@EPOCH'")


def _boot_spec(boot: str) -> tuple[str | None, int | None]:
    """--boot as journalctl takes it: a boot id (32 hex digits), or an offset (0 latest, -1 the one before, 1 the first)."""
    s = boot.strip()
    hexid = s.replace("-", "").lower()
    if re.fullmatch(r"[0-9a-f]{32}", hexid):
        return hexid, None
    if re.fullmatch(r"[+-]?\d+", s):
        return None, int(s)
    raise UsageError(f"--boot {boot!r}: give a boot id (32 hex digits) or an offset (0, -1, ...)")


# -- the source --------------------------------------------------------------------------------


class JournalSource:
    """A unit's journal entries, from the start of its latest run (or a cursor, or --since), followed."""

    def __init__(
        self,
        unit: str | None,
        files: list[str] | None = None,
        directory: str | None = None,
        since: str | None = None,
        boot: str | None = None,
        cursor: str | None = None,
        follow: bool = True,
        backend: str | None = None,
    ) -> None:
        if files and directory:
            raise UsageError("--file and --directory: give one or the other, as for journalctl")
        self.unit = unit
        self.names = unit_names(unit)
        self.files = [os.path.abspath(f) for f in files or []]  # the journal's inotify watch needs absolute paths
        self.directory = os.path.abspath(directory) if directory else None
        self.follow = follow
        self.done = False
        self.run_start: dict | None = None  # the entry the run began at, when it was looked for
        _check_readable(self.files, self.directory)
        since_epoch = parse_since(since) if since else None
        boot_spec = _boot_spec(boot) if boot else None
        self.backend, self.reason = choose_backend(backend)
        if self.backend == "systemd":
            self._impl: _Backend = _ReaderBackend(self, boot_spec)
        else:
            self._impl = _JournalctlBackend(self, boot)
        # the newest entry when reading began: the backlog is read once it is passed (tail decides only then)
        entries = self._impl.newest_first()
        try:
            newest = next(entries, None)
        finally:
            entries.close()  # type: ignore[attr-defined]
        self.newest_cursor: str | None = newest.get("__CURSOR") if newest else None
        self.newest_usec = int(newest.get("__REALTIME_TIMESTAMP") or 0) if newest else 0
        if cursor:
            self._impl.start(cursor=cursor)
        elif since_epoch is not None:
            self._impl.start(since=since_epoch)
        elif not self.names:
            self._impl.start()  # no unit: every entry is of interest, from the first
        else:
            entries = self._impl.newest_first()
            try:
                first = find_run_start(entries, self.names, SCAN_LIMIT, self._impl.first_of)
            finally:
                entries.close()  # type: ignore[attr-defined]
            self.run_start = first
            if first is not None and first.get("__CURSOR"):
                self._impl.start(cursor=first["__CURSOR"])
            else:
                self._impl.start()

    @property
    def description(self) -> str:
        what = f"unit {self.unit}" if self.unit else "the journal"
        where = ", ".join(self.files) if self.files else (self.directory or "the system journal")
        return f"{what} in {where}"

    def read(self, timeout: float = 0.0) -> list[dict]:
        """Entries written since the last call (at most BATCH); when none, waits up to `timeout` seconds."""
        if self.done:
            return []
        out = self._impl.read(timeout)
        if not out and not self.follow and self._impl.exhausted:
            self.done = True
        return out

    @property
    def lean(self) -> bool:
        """Whether a backlog can be read by blocks (`take_lean`, `entries_at`)."""
        return self._impl.lean

    def take_lean(self, limit: int) -> LeanBatch:
        """Up to `limit` entries from here: their messages and times only."""
        return self._impl.take_lean(limit)

    def entries_at(self, first_cursor: str, indices: Iterable[int]) -> Iterator[dict]:
        """Whole entries, counted from the one at `first_cursor`, without moving this source."""
        return self._impl.entries_at(first_cursor, indices)

    def rewind(self, cursor: str) -> None:
        """Read on from the entry at `cursor` (itself included)."""
        self._impl.start(cursor=cursor)

    def close(self) -> None:
        self._impl.close()


class LeanBatch(NamedTuple):
    """Entries read for their messages alone (`take_lean`)."""

    first: str | None  # the first entry's cursor
    last: str | None  # the last one's
    messages: list[bytes]
    times: list[int]  # __REALTIME_TIMESTAMP, usec


class _Backend:
    exhausted = False
    lean = False

    def newest_first(self) -> Iterator[dict]:
        raise NotImplementedError

    def start(self, cursor: str | None = None, since: float | None = None) -> None:
        raise NotImplementedError

    def first_of(self, invocation: str) -> dict | None:
        """The oldest entry of one invocation of the unit (its own lines or systemd's about it)."""
        raise NotImplementedError

    def take_lean(self, limit: int) -> LeanBatch:
        raise NotImplementedError

    def entries_at(self, first_cursor: str, indices: Iterable[int]) -> Iterator[dict]:
        raise NotImplementedError

    def read(self, timeout: float) -> list[dict]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def choose_backend(wanted: str | None = None) -> tuple[str, str]:
    """('systemd' | 'journalctl', why): the binding when it is there, unless LOGSENSE_JOURNAL_BACKEND says."""
    wanted = (wanted or os.environ.get(BACKEND_ENV) or "auto").strip().lower()
    if wanted not in BACKENDS:
        raise UsageError(f"{BACKEND_ENV}={wanted!r}: choose from {', '.join(BACKENDS)}")
    if wanted == "journalctl":
        return "journalctl", f"{BACKEND_ENV}=journalctl"
    try:
        from systemd import journal  # noqa: F401 - only whether the binding is there
    except ImportError:
        if wanted == "systemd":
            raise SourceError(f"{BACKEND_ENV}=systemd: the systemd Python binding is not installed "
                              "(pip install systemd-python)") from None
        return "journalctl", "the systemd Python binding is not installed"
    return "systemd", f"{BACKEND_ENV}=systemd" if wanted == "systemd" else "the systemd Python binding is installed"


def _check_readable(files: list[str], directory: str | None) -> None:
    """A journal that cannot be read at all is a clear one-line error, before any reader is started."""
    for f in files:
        try:
            st = os.stat(f)
        except FileNotFoundError:
            raise SourceError(f"{f}: no such file") from None
        except OSError as e:
            raise SourceError(f"{f}: cannot open: {e.strerror or e}") from None
        if os.path.isdir(f):
            raise SourceError(f"{f}: is a directory (use --directory)")
        if not os.access(f, os.R_OK) or not st.st_size:
            raise SourceError(f"{f}: permission denied" if st.st_size else f"{f}: empty, not a journal file")
    if files:
        return
    dirs = [directory] if directory else list(JOURNAL_DIRS)
    if directory and not os.path.isdir(directory):
        raise SourceError(f"{directory}: no such directory")
    readable = unreadable = 0
    for d in dirs:
        for path in _journal_files(d):
            if os.access(path, os.R_OK):
                readable += 1
            else:
                unreadable += 1
    if readable:
        return
    if unreadable:
        raise SourceError("cannot read the journal: permission denied (run as root, or join the "
                          "'systemd-journal' or 'adm' group)")
    if directory:
        raise SourceError(f"{directory}: no journal files in it")
    raise SourceError(f"cannot read the journal: no journal files in {' or '.join(JOURNAL_DIRS)} "
                      "(is systemd-journald running? --file and --directory read journal files)")


def _journal_files(d: str, depth: int = 2) -> Iterator[str]:
    try:
        with os.scandir(d) as it:
            entries = list(it)
    except OSError:
        return
    for e in entries:
        if e.name.endswith((".journal", ".journal~")) and e.is_file():
            yield e.path
        elif depth > 1 and e.is_dir():
            yield from _journal_files(e.path, depth - 1)


# -- systemd-python ----------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _plain(entry: dict) -> dict:
    """A Reader entry (ints, UUIDs, datetimes, bytes) -> the strings journalctl -o json would give."""
    import uuid

    out = {}
    for k, v in entry.items():
        if isinstance(v, list):
            v = v[0] if v else ""
        if isinstance(v, str):
            out[k] = v
        elif isinstance(v, bytes):
            out[k] = v.decode("utf-8", "replace")
        elif isinstance(v, datetime):
            out[k] = str((v - _EPOCH) // timedelta(microseconds=1))
        elif isinstance(v, uuid.UUID):
            out[k] = v.hex
        elif k == "__MONOTONIC_TIMESTAMP":
            out[k] = str(getattr(v, "timestamp", v) // timedelta(microseconds=1))
        else:
            out[k] = str(v)
    return out


class _ReaderBackend(_Backend):
    lean = True  # reads a backlog's messages alone, and whole entries only where asked (`take_lean`, `entries_at`)

    def __init__(self, src: JournalSource, boot: tuple[str | None, int | None] | None) -> None:
        self.src = src
        self.r = r = self._open()
        self._pos: str | None = None  # the cursor of the last entry read in order
        self._moved = False  # `entries_at` moved the reader away from it
        if boot is not None:
            r.add_match(_BOOT_ID=self._boot_id(*boot))
            r.add_conjunction()
        for i, fld in enumerate(UNIT_FIELDS if src.names else ()):
            if i:
                r.add_disjunction()
            r.add_match(*[f"{fld}={n}" for n in src.names])

    def _open(self):
        from systemd import journal

        src = self.src
        try:
            if src.files:
                return journal.Reader(files=src.files)
            if src.directory:
                return journal.Reader(path=src.directory)
            return journal.Reader()
        except OSError as e:
            where = ", ".join(src.files) or src.directory or "the system journal"
            raise SourceError(f"{where}: not a readable journal ({e.strerror or e})") from None

    def take_lean(self, limit: int) -> LeanBatch:
        """Up to `limit` entries from here, read lean: each MESSAGE (bytes) and time (usec), the first one's and
        the last one's cursor; whole entries are read again by `entries_at` where they are needed."""
        self._back()
        r = self.r
        nxt, get, realtime = r._next, r._get, r._get_realtime
        msgs: list[bytes] = []
        times: list[int] = []
        first = None
        while len(msgs) < limit and nxt():
            if first is None:
                first = r._get_cursor()
            try:
                msgs.append(get("MESSAGE"))
            except KeyError:  # an entry without a MESSAGE field
                msgs.append(b"")
            times.append(realtime())
        if msgs:
            self._pos = r._get_cursor()
        return LeanBatch(first, self._pos if msgs else None, msgs, times)

    def entries_at(self, first_cursor: str, indices: Iterable[int]) -> Iterator[dict]:
        """The whole entries at `indices` (ascending) counted from the one at `first_cursor`, as `read` gives them;
        the next read in order goes on from where it was (one reader: a second one would map the files again)."""
        self._moved = True
        r = self.r
        r.seek_cursor(first_cursor)
        at = -1
        for i in indices:
            e = r.get_next(i - at)
            at = i
            if not e:
                return
            yield _plain(e)

    def first_of(self, invocation: str) -> dict | None:
        r = self._open()  # a reader of its own: this one's matches stay as they are
        try:
            r.add_match(_SYSTEMD_INVOCATION_ID=invocation)
            r.add_disjunction()
            r.add_match(INVOCATION_ID=invocation)
            r.seek_head()
            e = r.get_next()
            return _plain(e) if e else None
        finally:
            r.close()

    def _boot_id(self, boot_id: str | None, offset: int | None) -> str:
        if boot_id:
            return boot_id
        if offset == 0 and not self.src.files and not self.src.directory:
            from systemd import id128

            return id128.get_boot().hex
        r = self.r
        firsts = []
        for b in r.query_unique("_BOOT_ID"):
            hexid = getattr(b, "hex", b)
            r.flush_matches()
            r.add_match(_BOOT_ID=hexid)
            r.seek_head()
            e = r.get_next()
            if e:
                firsts.append((_plain(e).get("__REALTIME_TIMESTAMP", "0"), hexid))
        r.flush_matches()
        boots = [b for _, b in sorted(firsts, key=lambda t: int(t[0]))]
        assert offset is not None
        i = len(boots) - 1 + offset if offset <= 0 else offset - 1
        if not 0 <= i < len(boots):
            raise SourceError(f"--boot {offset}: no such boot in the journal ({len(boots)} boot(s) in it)")
        return boots[i]

    def newest_first(self) -> Iterator[dict]:
        self.r.seek_tail()
        while True:
            e = self.r.get_previous()
            if not e:
                return
            yield _plain(e)

    def _back(self) -> None:
        """Back to the last entry read in order, after `entries_at` read elsewhere."""
        if self._moved:
            self._moved = False
            if self._pos is not None:
                self.r.seek_cursor(self._pos)
                self.r._next()  # onto it: the next entry read is the one after it

    def start(self, cursor: str | None = None, since: float | None = None) -> None:
        self._pos, self._moved = None, False
        if cursor:
            self.r.seek_cursor(cursor)
        elif since is not None:
            self.r.seek_realtime(since)
        else:
            self.r.seek_head()

    def read(self, timeout: float) -> list[dict]:
        out = self._take()
        if out or not self.src.follow:
            self.exhausted = not out
            return out
        try:
            self.r.wait(max(timeout, 0.0))
        except OSError as e:
            raise SourceError(f"cannot follow the journal: {e.strerror or e}") from None
        return self._take()

    def _take(self) -> list[dict]:
        self._back()
        out: list[dict] = []
        while len(out) < BATCH:
            e = self.r.get_next()
            if not e:
                break
            out.append(_plain(e))
        if out:
            self._pos = out[-1].get("__CURSOR") or self._pos
        return out

    def close(self) -> None:
        try:
            self.r.close()
        except Exception:  # noqa: BLE001 - closing must not hide the reason we stop
            pass


# -- journalctl -o export ----------------------------------------------------------------------

# One entry of journalctl's export format whose fields are all text lines: its cursor, time and message. An
# entry this does not take (a field in the binary form, no MESSAGE) is read by `_export_entry`.
_LEAN_ENTRY = re.compile(rb"__CURSOR=([^\n]*)\n(?:[A-Za-z0-9_]+=[^\n]*\n)*?__REALTIME_TIMESTAMP=(\d+)\n"
                         rb"(?:[A-Za-z0-9_]+=[^\n]*\n)*?MESSAGE=([^\n]*)\n(?:[A-Za-z0-9_]+=[^\n]*\n)*\n")
_READ_SIZE = 1 << 20
_LEAN_WAIT = 5.0  # seconds without output that end a block read while following (the backlog is read)


def _export_entry(buf: bytes | bytearray, pos: int) -> tuple[dict, int] | None:
    """The entry of journalctl's export format at `pos` as a dict of strings (as `-o json` gives them, a field's
    first value when it has several) and where it ends; None when `buf` ends inside it."""
    out: dict[str, str] = {}
    n = len(buf)
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            return None
        if nl == pos:  # the empty line after the entry's fields
            return out, nl + 1
        eq = buf.find(b"=", pos, nl)
        if eq >= 0:
            key, value, pos = buf[pos:eq], buf[eq + 1: nl], nl + 1
        else:  # the binary form: the name, the size (64 bits, little-endian), the bytes, a newline
            if nl + 9 > n:
                return None
            end = nl + 9 + int.from_bytes(buf[nl + 1: nl + 9], "little")
            if end >= n:
                return None
            key, value, pos = buf[pos:nl], buf[nl + 9: end], end + 1
        name = key.decode("ascii", "replace")
        if name not in out:
            out[name] = value.decode("utf-8", "replace")


class _JournalctlBackend(_Backend):
    lean = True  # a backlog's block is read once, lean, and kept until its whole entries are asked for

    def __init__(self, src: JournalSource, boot: str | None) -> None:
        import shutil  # this reader's modules are imported when it is used: `tail FILE` needs none

        self.src = src
        exe = shutil.which("journalctl")
        if exe is None:
            raise SourceError("cannot read the journal: journalctl is not installed, nor the systemd Python "
                              "binding (pip install systemd-python)")
        args = [exe, "--no-pager", "--all", "-o", "export"]
        for f in src.files:
            args.append(f"--file={f}")
        if src.directory:
            args.append(f"--directory={src.directory}")
        self.where = list(args)  # the journal read, without the matches
        if boot is not None:
            args.append(f"--boot={boot}")
        for i, fld in enumerate(UNIT_FIELDS if src.names else ()):
            if i:
                args.append("+")
            args.extend(f"{fld}={n}" for n in src.names)
        self.base = args
        self.proc: subprocess.Popen | None = None
        self._err: IO[bytes] | None = None
        self._buf = bytearray()
        self._pos = 0  # where the next entry in `_buf` begins
        self._block: tuple[str, bytes, list[int]] | None = None  # the last lean block: first cursor, bytes, ends

    def _spawn(self, extra: list[str], base: list[str] | None = None) -> tuple[subprocess.Popen, IO[bytes]]:
        import subprocess
        import tempfile

        err = tempfile.TemporaryFile()
        try:
            p = subprocess.Popen((base or self.base) + extra, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=err)
        except OSError as e:
            err.close()
            raise SourceError(f"cannot run journalctl: {e.strerror or e}") from None
        return p, err

    def _failure(self, p: subprocess.Popen, err: IO[bytes] | None) -> SourceError:
        text: list[str] = []
        if err is not None:
            err.seek(0)
            text = err.read().decode("utf-8", "replace").strip().splitlines()
        where = ", ".join(self.src.files) or self.src.directory or "the journal"
        return SourceError(f"{where}: journalctl: {text[-1] if text else f'exit status {p.returncode}'}")

    def newest_first(self) -> Iterator[dict]:
        return self._entries(["--reverse", "--output-fields=" + ",".join(_SCAN_FIELDS)])

    def _entries(self, extra: list[str], base: list[str] | None = None) -> Iterator[dict]:
        """The entries one journalctl run prints; the run is stopped when the caller stops taking them."""
        p, err = self._spawn(extra, base)
        finished = False
        try:
            assert p.stdout is not None
            buf, pos = bytearray(), 0
            while data := p.stdout.read1(_READ_SIZE):  # type: ignore[attr-defined]
                buf += data
                while (got := _export_entry(buf, pos)) is not None:
                    entry, pos = got
                    yield entry
                del buf[:pos]
                pos = 0
            finished = True
        finally:
            if not finished:
                p.kill()
            rc = p.wait()
            if p.stdout is not None:
                p.stdout.close()
            if finished and rc != 0:
                exc = self._failure(p, err)
                err.close()
                raise exc
            err.close()

    def first_of(self, invocation: str) -> dict | None:
        entries = self._entries([f"_SYSTEMD_INVOCATION_ID={invocation}", "+", f"INVOCATION_ID={invocation}"],
                                base=self.where)
        try:
            return next(entries, None)
        finally:
            entries.close()  # type: ignore[attr-defined]

    def start(self, cursor: str | None = None, since: float | None = None) -> None:
        self.close()
        self.exhausted = False
        self._buf, self._pos, self._block = bytearray(), 0, None
        extra = ["--no-tail"]  # --follow alone shows only the last 10 entries, even after --cursor
        if cursor:
            extra.append(f"--cursor={cursor}")
        elif since is not None:
            extra.append(f"--since=@{since:.6f}")
        if self.src.follow:
            extra.append("--follow")
        self.proc, self._err = self._spawn(extra)
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)

    def _fill(self, timeout: float) -> bool:
        """More of journalctl's output into the buffer, waiting up to `timeout` s for it; False when none came
        (or it ended)."""
        import select

        p = self.proc
        if p is None or p.stdout is None or self.exhausted:
            return False
        fd = p.stdout.fileno()
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                return False
            try:
                data = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not data:
                self._ended()
                return False
            if self._pos:
                del self._buf[: self._pos]
                self._pos = 0
            self._buf += data
            return True

    def read(self, timeout: float) -> list[dict]:
        out: list[dict] = []
        wait = timeout
        while True:
            while len(out) < BATCH and (got := _export_entry(self._buf, self._pos)) is not None:
                entry, self._pos = got
                out.append(entry)
            if len(out) >= BATCH or not self._fill(0.0 if out else wait):
                return out
            wait = 0.0

    def take_lean(self, limit: int) -> LeanBatch:
        """Up to `limit` entries from here, each one's MESSAGE and time, up to the newest entry when reading began;
        the block's bytes are kept for `entries_at`."""
        msgs: list[bytes] = []
        times: list[int] = []
        ends: list[int] = []  # where each entry ends, from the block's start
        first: bytes | None = None  # the block's first entry's cursor
        cursor = b""
        newest = (self.src.newest_cursor or "").encode()
        match = _LEAN_ENTRY.match
        start = pos = self._pos
        while len(msgs) < limit:
            m = match(self._buf, pos)
            if m is not None:
                cursor, usec, msg = m.groups()
                pos = m.end()
            else:
                got = _export_entry(self._buf, pos)
                if got is None:  # the buffer ends inside an entry: read on, keeping the block's bytes
                    self._pos = start
                    filled = self._fill(_LEAN_WAIT if self.src.follow else 600.0)
                    pos -= start - self._pos  # `_fill` dropped what was before the block
                    start = self._pos
                    if not filled:
                        break
                    continue
                entry, pos = got
                cursor = entry.get("__CURSOR", "").encode()
                msg = entry.get("MESSAGE", "").encode()
                usec = entry.get("__REALTIME_TIMESTAMP") or "0"
            msgs.append(msg)
            times.append(int(usec))
            ends.append(pos - start)
            if first is None:
                first = cursor
            if cursor == newest:
                break
        self._pos = pos
        if first is None:
            return LeanBatch(None, None, [], [])
        first_cursor, last_cursor = first.decode("ascii", "replace"), cursor.decode("ascii", "replace")
        self._block = (first_cursor, bytes(self._buf[start:pos]), ends)
        return LeanBatch(first_cursor, last_cursor, msgs, times)

    def entries_at(self, first_cursor: str, indices: Iterable[int]) -> Iterator[dict]:
        """The whole entries at `indices` (ascending) counted from the one at `first_cursor`: from the last lean
        block when it is that one, else read again from the journal."""
        if self._block is not None and self._block[0] == first_cursor:
            _, data, ends = self._block
            for i in indices:
                if i >= len(ends):
                    return
                got = _export_entry(data, ends[i - 1] if i else 0)
                if got is None:
                    return
                yield got[0]
            return
        entries = self._entries(["--no-tail", f"--cursor={first_cursor}"])
        try:
            wanted = iter(indices)
            want = next(wanted, None)
            for n, e in enumerate(entries):
                if want is None:
                    return
                if n == want:
                    yield e
                    want = next(wanted, None)
        finally:
            entries.close()  # type: ignore[attr-defined]

    def _ended(self) -> None:
        p = self.proc
        assert p is not None
        rc = p.wait()
        self.exhausted = True
        if rc != 0:
            raise self._failure(p, self._err)
        if self.src.follow:
            raise SourceError("journalctl stopped following the journal (its files were removed?)")

    def close(self) -> None:
        import subprocess

        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p is not None and p.stdout is not None:
            p.stdout.close()
        if self._err is not None:
            self._err.close()
            self._err = None
        self.proc = None
