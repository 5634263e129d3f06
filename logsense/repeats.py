"""A startup that repeats an earlier one of the same log gets that one's verdict without going through the pipeline.

A unit in a crash loop writes one startup again and again: the same lines but for their times. `history`
judges every startup, and each would go through the pipeline line by line. `Repeats` sits between the source
and the session: where the session begins a startup, the bytes from there are compared with an earlier startup
of the same log that began on the same line (its digits aside), up to and including the line that began the
one after it. When they are the same but inside each line's leading time stamps, the new startup takes the
earlier one's verdict (outcome, phase, cause, report), its own number, and its own times, read from its own
lines at the lines the earlier one's times were read from; the source goes on from the line after it, which
begins the next startup as it began the earlier one's next.

What makes the same lines give the same verdict, and what is checked for it:
- the session is in the same state where both begin: a new startup, begun on the line's only record (not
  indented, not quoted: it is read alone), the same year named by the log before it;
- the earlier startup's times are read from lines that give their own time (checked on its lines), and the
  log's year does not change in it (a repeat's stamps keep their years);
- its lines continue a logger's record where the earlier one's do (vLLM's lines of one prefix and time);
- a repeat is never the input's last startup (a startup begins after it), and the source is a regular file
  read by blocks, not followed (history; `tail` decides as lines come).
"""

from __future__ import annotations

import bisect
import os
import re
import stat
from typing import NamedTuple

from logsense.latest import NOT_ALONE
from logsense.logtime import time_to
from logsense.model import Item
from logsense.normalize import in_year, line_times
from logsense.session import Outcome, Session, Startup
from logsense.sources.stream import FileSource, Gap, Source

MIN_BYTES = 4 << 20  # a smaller file is read line by line whatever it repeats
SPAN_MAX = 32 << 20  # a longer startup is read again (comparing it would hold it twice)
TRIES = 3  # earlier startups that began on the same line tried, the latest first
KEPT = 64  # earlier startups kept to be repeated (each keeps its pipeline)
HEAD = 128  # a line's leading stamps are in its first bytes
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
# The stamps a line may begin with: journalctl's, docker's, the servers' own (SGLang's, vLLM's), a logger's.
_STAMP = re.compile(
    rb"(?:19|20)\d\d-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?|\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?"
    rb"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d\d:\d\d:\d\d(?:[.,]\d+)?"
)
_DATED = re.compile(rb"(?:19|20)\d\d-")
# What comes right before a stamp that is a line's prefix, not its message: the line's start, or the end of the
# prefix before it (journalctl's "ident[pid]: ", docker compose's "svc | ", "[" of SGLang's, a level of vLLM's)
_LEADS = (b"[", b": ", b"| ", b"DEBUG ", b"INFO ", b"WARNING ", b"ERROR ", b"CRITICAL ")


class NotRepeated(Exception):
    """A startup taken for a repeat did not end as the one it repeats did: the input is read again without reuse."""


class _At(NamedTuple):
    """The line a startup began on: where it starts in the file, its number, its bytes (newline included)."""

    offset: int
    line: int
    raw: bytes


class _Place(NamedTuple):
    """Where a time was read in a startup: its line (bytes start:end from the startup's first, the line's number
    from it) and the index of its record among the line's timed ones."""

    start: int
    end: int
    line: int
    k: int


class _Times(NamedTuple):
    """Where an earlier startup's verdict read its times: its first time and the end of its seconds; `ready`:
    the seconds are to ready."""

    first: _Place | None
    end: _Place | None
    ready: bool


class _Span:
    """An earlier startup that may be repeated: where it began and ended, and the state it began in."""

    __slots__ = ("startup", "at", "year", "key", "end", "end_line", "next_len", "times", "mask", "records")

    def __init__(self, startup: Startup, at: _At, year: int | None) -> None:
        self.startup = startup
        self.at = at
        self.year = year  # the year the log had named before it
        self.key = at.raw.translate(_DIGITS)
        self.end = self.end_line = self.next_len = 0  # where the next startup began, and its first line's length
        self.times: _Times | None | bool = False  # False: not read yet; None: its times cannot be placed
        self.mask: int | None = None  # `stamp_mask` of its bytes, once a repeat differs from them
        self.records: list[tuple[int, int, bytes]] = []  # `record_stamps` of its bytes, with the mask


class Repeats:
    """Feeds a session from a file source, giving each repeated startup its earlier one's verdict."""

    def __init__(self, source: FileSource, session: Session, fd: int, size: int) -> None:
        self.source, self.session = source, session
        self.fd, self.size = fd, size
        self.open: _Span | None = None  # the startup being read, when it may be repeated later
        self.index: dict[bytes, list[_Span]] = {}  # by its first line, digits as 0
        self.kept: list[_Span] = []
        self.repeated = 0  # startups given an earlier one's verdict
        session.keep_times = True

    @classmethod
    def of(cls, source: Source, session: Session) -> Repeats | None:
        """Reuse for this source and session, or None: not a regular file read by blocks, small, followed."""
        if not isinstance(source, FileSource) or not source.by_blocks or source.follower.follow:
            return None
        if session.until_ready or session.probe:
            return None
        try:
            fd = os.open(source.follower.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size < MIN_BYTES:
            os.close(fd)
            return None
        return cls(source, session, fd, st.st_size)

    def close(self) -> None:
        os.close(self.fd)

    def feed(self, item: Item | Gap) -> bool:
        """Feed `item`; True when the source moved past repeated startups (what it was reading is left)."""
        s = self.session
        moved = False
        while True:
            before, year = s.startup, s.log_year
            s.feed(item)
            if s.startup is before:
                if moved:
                    raise NotRepeated(f"line {self.source.follower.line}: no new startup after a repeat")
                return moved
            at = self._began(item, before, s.startup)
            self._close(before, at)
            end = self._repeat(at, year) if at is not None else None
            if end is None:
                if at is not None and s.startup.noted is not None:
                    self.open = _Span(s.startup, at, year)
                return moved
            moved = True
            nxt = self.source.take_line(end)
            if nxt is None:
                raise NotRepeated(f"byte {end}: the line after a repeat could not be read")
            item = nxt

    # -- the startups read ---------------------------------------------------------------------

    def _began(self, item: Item | Gap, before: Startup, new: Startup) -> _At | None:
        """The line `new` began on, when it began on the only record of a line read alone."""
        if not isinstance(item, Item) or new.index != before.index + 1 or len(item.records) != 1:
            return None
        if item.where is None or new.first_line != item.records[0].line:
            return None
        offset = item.where.get("offset")
        if not isinstance(offset, int):
            return None
        raw = self._line(offset)
        if raw is None or raw[:1] in NOT_ALONE:
            return None
        return _At(offset, item.records[0].line, raw)

    def _close(self, before: Startup, at: _At | None) -> None:
        """`before` ended where a startup began at `at`: keep it to be repeated if it can be."""
        span, self.open = self.open, None
        if span is None or span.startup is not before or at is None:
            return
        if before.verdict is None or before.noted is None or before.year_moved:
            return
        if at.offset + len(at.raw) - span.at.offset > SPAN_MAX:
            return
        span.end, span.end_line, span.next_len = at.offset, at.line, len(at.raw)
        self.index.setdefault(span.key, []).append(span)
        self.kept.append(span)
        if len(self.kept) > KEPT:
            old = self.kept.pop(0)
            self.index[old.key].remove(old)

    def _line(self, offset: int) -> bytes | None:
        """The line that begins at `offset`, with its newline (None: the file's last, without one)."""
        n = 1 << 12
        while True:
            data = os.pread(self.fd, n, offset)
            nl = data.find(b"\n")
            if nl >= 0:
                return data[: nl + 1]
            if len(data) < n:
                return None
            n <<= 2

    # -- repeating -----------------------------------------------------------------------------

    def _repeat(self, at: _At, year: int | None) -> int | None:
        """Give the startup begun at `at` an earlier one's verdict when it repeats one; where the line that
        begins the next startup ends (the source is left before it), or None."""
        for span in reversed(self.index.get(at.raw.translate(_DIGITS), [])[-TRIES:]):
            if span.year != year:
                continue
            length = span.end - span.at.offset
            n = length + span.next_len
            if at.offset + n > self.size:
                continue
            a = os.pread(self.fd, n, span.at.offset)
            b = os.pread(self.fd, n, at.offset)
            if len(a) != n or len(b) != n:
                continue
            v = span.startup.verdict
            assert v is not None
            if a == b:
                started_at, seconds = v.started_at, v.seconds
            else:
                if span.mask is None:  # its stamps are read once, for both checks
                    stamped = _stamp_spans(a)
                    span.mask, span.records = stamp_mask(a, stamped), record_stamps(a, stamped)
                if not same_but_stamps(a, b, span.mask) or not same_records(a, b, span.records):
                    continue
                if span.times is False:
                    span.times = self._times(span, a)
                if span.times is None:
                    continue
                assert isinstance(span.times, _Times)
                read = self._read_times(span.times, b, at.line)
                if read is None:
                    continue
                started_at, seconds = self._verdict_times(span.times.ready, *read)
            lines = span.end_line - span.at.line
            self.session.repeat(span.startup, at.line + (span.startup.first_line or span.at.line) - span.at.line,
                                at.line + lines - 1, started_at, seconds)
            self.source.skip_to(at.offset + length, at.line + lines)
            self.repeated += 1
            return at.offset + n
        return None

    def _times(self, span: _Span, data: bytes) -> _Times | None:
        """Where `span`'s verdict read its times (as `Session._conclude` reads them), when each was read from
        its own line; None when one cannot be placed so."""
        s = span.startup
        v, noted = s.verdict, s.noted
        if v is None or noted is None:
            return None
        first = noted[0] if noted else None
        ready = v.outcome in (Outcome.READY, Outcome.NOT_ANSWERING)
        end: tuple[int, str | None] | None
        if ready:
            end = s.ready_at if s.ready_since is not None else None
        else:
            failed = v.outcome is Outcome.FAILED
            end = s.failed_noted if failed and s.failed_epoch is not None else (noted[-1] if noted else None)
            root = v.report.root
            if failed and root is not None and root.evidence:
                line = root.evidence[0].line
                t = s.times.at(line)
                if t is not None:
                    at = [n for n, _ in noted]
                    i = bisect.bisect_right(at, line) - 1
                    if i < 0 or noted[i][1] != t or any(x > y for x, y in zip(at, at[1:], strict=False)):
                        return None
                    end = noted[i]
        starts = [0]  # where each line of `data` begins
        nl = data.find(b"\n")
        while nl >= 0:
            starts.append(nl + 1)
            nl = data.find(b"\n", nl + 1)
        placed: list[_Place | None] = []
        for point in (first, end):
            if point is None:
                placed.append(None)
                continue
            line, t = point
            i = line - span.at.line
            if t is None or not 0 <= i < span.end_line - span.at.line:
                return None
            raw = data[starts[i] : starts[i + 1] - 1]
            own = line_times(line, raw)
            k = 0 if own[:1] == [t] else len(own) - 1 if own[-1:] == [t] else None
            if k is None or raw[:1] in NOT_ALONE:
                return None
            placed.append(_Place(starts[i], starts[i + 1] - 1, i, k))
        times = _Times(placed[0], placed[1], ready)
        # read back from its own lines, its verdict's times as the session gave them: else not repeated
        got = self._read_times(times, data, span.at.line)
        if got is None or self._verdict_times(ready, *got) != (v.started_at, v.seconds):
            return None
        return times

    def _read_times(self, times: _Times, data: bytes, line: int) -> tuple[str | None, str | None] | None:
        """The times at `times`' places in a startup's bytes `data` (its first line is number `line`)."""
        out: list[str | None] = []
        for p in (times.first, times.end):
            if p is None:
                out.append(None)
                continue
            own = line_times(line + p.line, data[p.start : p.end])
            if not -len(own) <= p.k < len(own):
                return None
            out.append(own[p.k])
        return out[0], out[1]

    def _verdict_times(self, ready: bool, first: str | None, end: str | None) -> tuple[str | None, float | None]:
        """A startup's start and seconds from the times it was read to (`Session._conclude`'s arithmetic)."""
        s = self.session
        start = s.epoch_of(first)
        started_at = in_year(first, s.log_year) if first is not None and start is not None else None
        stop = s.epoch_of(end)
        if ready:
            return started_at, (stop - start if stop is not None and start is not None else None)
        return started_at, time_to(start, stop)


def _stamp_spans(data: bytes) -> list[tuple[int, list[tuple[int, int]]]]:
    """Each line of `data`: where it starts, and where the time stamps it begins with are (in its first HEAD
    bytes)."""
    out: list[tuple[int, list[tuple[int, int]]]] = []
    start, n = 0, len(data)
    while start < n:
        nl = data.find(b"\n", start)
        end = n if nl < 0 else nl
        spans = []
        for m in _STAMP.finditer(data, start, min(end, start + HEAD)):
            s, e = m.span()
            if s > start and not data.endswith(_LEADS, start, s):
                continue  # a time in the message (a duration, a deadline) is the message's
            spans.append((s, e))
        out.append((start, spans))
        start = end + 1
    return out


def stamp_mask(data: bytes, lines: list[tuple[int, list[tuple[int, int]]]] | None = None) -> int:
    """`data`'s bytes as an int's (big-endian) with 0 where a repeat may differ, the digits of the time stamps
    that begin each line (in its first HEAD bytes, a year's aside), and 0xff elsewhere. `lines`: `_stamp_spans`."""
    mask = bytearray(b"\xff") * len(data)
    for _, spans in _stamp_spans(data) if lines is None else lines:
        for s, e in spans:
            if _DATED.match(data, s):
                s += 4
            mask[s:e] = bytes(e - s)
    return int.from_bytes(mask, "big")


_LEVELS = (b"DEBUG ", b"INFO ", b"WARNING ", b"ERROR ", b"CRITICAL ")


def record_stamps(data: bytes, lines: list[tuple[int, list[tuple[int, int]]]]) -> list[tuple[int, int, bytes]]:
    """The stamps of `data` that a logger's record prefix holds (start, end, the stream they are of): vLLM
    repeats a record's prefix (process, level, time) on each of its lines, and a line whose prefix and time
    are those of its stream's line before it continues that record. A stamp's stream is what precedes it on
    its line, from the stamp before it (journalctl's); elsewhere a stamp's digits change nothing. `lines`:
    `_stamp_spans(data)`."""
    out: list[tuple[int, int, bytes]] = []
    for after, spans in lines:
        for s, e in spans:
            stream = data[after:s]
            if stream.endswith(_LEVELS):
                out.append((s, e, stream))
            after = e
    return out


def same_records(a: bytes, b: bytes, stamps: list[tuple[int, int, bytes]]) -> bool:
    """Whether the lines of `b` (`a`'s but for their stamps) continue a logger's record where `a`'s do.
    `stamps`: `record_stamps` of `a`."""
    last_a: dict[bytes, bytes] = {}
    last_b: dict[bytes, bytes] = {}
    for s, e, stream in stamps:
        x, y = a[s:e], b[s:e]
        if (last_a.get(stream) == x) != (last_b.get(stream) == y):
            return False
        last_a[stream], last_b[stream] = x, y
    return True


def same_but_stamps(a: bytes, b: bytes, mask: int | None = None) -> bool:
    """Whether the lines of `b` are those of `a` but for digits inside the time stamps they begin with (a year
    stays the same). `mask`: `stamp_mask(a)`, when kept."""
    if len(a) != len(b) or a.translate(_DIGITS) != b.translate(_DIGITS):
        return False
    if mask is None:
        mask = stamp_mask(a)
    return not (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")) & mask
