"""Live sources as one protocol: a followed file and a unit's journal both yield `Item`s.

An item is the records of one line (or journal entry) plus systemd's word about the unit
("start" / "stop"), so the session never asks which kind of source it reads. In a file,
systemd's lines (`systemd[1]: Starting x.service`, `x.service: Main process exited, ...`, as
`journalctl -u x > file` writes them) count as they do in the journal.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Protocol

from logsense.errors import UsageError
from logsense.model import Item, Record
from logsense.normalize import Normalizer
from logsense.scan import DATED_LOOKBACK, Keep, last_dated, lines_found, search_backend
from logsense.sources import journald
from logsense.sources.follow import Block, FileFollower, count_lines, last_line, last_line_offset
from logsense.timeline import RESTART_AFTER, RESTART_PHASE

SCAN_BYTES = 256 << 20  # how far back from a file's end its latest startup is looked for
CATCH_UP_MIN = 1 << 20  # a backlog this big or bigger is read by blocks, its lines that no stage needs passed over
CATCH_UP_BLOCK = 4 << 20
JOURNAL_CATCH_UP = 20_000  # a journal backlog this many entries long or longer is read by blocks
JOURNAL_BLOCK = 50_000  # entries read at once when reading by blocks
# systemd's words in a file (`systemd_word`): a line that holds one is never passed over
_SYSTEMD_LITERALS = (b"Starting ", b"Started ", b"Stopping ", b"Stopped ", b"Failed to start ", b"Main process exited",
                     b"Control process exited", b"Failed with result", b"Deactivated successfully")


class Source(Protocol):
    """What `tail` and `history` read: items, whether they are caught up, where they are."""

    kind: str  # "file" | "journal"
    description: str
    start: str  # where reading began, in words
    notices: list[str]  # what happened to the input (rotated, truncated, ...), for --verbose

    @property
    def caught_up(self) -> bool:
        """The last read reached the end of what was there."""

    @property
    def ended(self) -> bool:
        """Nothing more will come (--no-follow at the end, --until passed)."""

    def read(self, timeout: float) -> list[Item | Gap]: ...

    def idle_for(self) -> float | None:
        """Seconds nothing has been added to the input, when the source can tell (None: it cannot)."""

    def position(self) -> dict: ...

    def close(self) -> None: ...


def systemd_word(rec: Record) -> str | None:
    """'start' | 'stop' when a line of a file is systemd's own about a unit."""
    if rec.ident != "systemd" and rec.pid != "1":
        return None
    return journald.unit_word(rec.message)


class FileSource:
    """A log file, followed like `tail -F` from its latest startup (or its start); lines keep the file's numbers."""

    kind = "file"

    def __init__(self, path: str, rules, *, from_start: bool = False, follow: bool = True,
                 resume_at: dict | None = None, keep: Keep | None = None) -> None:
        """`resume_at` is a saved position (path identity, offset, line) to read from instead; `keep`: what a
        backlog read by blocks must not pass over (None: every line of it is read)."""
        try:
            with open(path, "rb") as fh:
                if fh.read(2) == b"\x1f\x8b":
                    raise UsageError(f"{path}: gzip-compressed, not a live log (logsense analyze reads it)")
        except OSError:
            pass  # not there yet, or unreadable: the follower says so
        self.description = os.path.abspath(path)
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory; give a log file or a systemd unit")
        if resume_at is not None:
            ident = (resume_at["dev"], resume_at["ino"]) if resume_at.get("ino") is not None else None
            head = (resume_at["head_len"], resume_at["head"]) if resume_at.get("head") else None
            self.follower = FileFollower(path, offset=resume_at.get("offset", 0), line=resume_at.get("line", 0),
                                         ident=ident, head=head, follow=follow)
            self.start = "resuming where the last run stopped"
        else:
            offset, self.start = _file_start(path, rules, from_start)
            line = count_lines(path, offset) if offset else 0
            self.follower = FileFollower(path, offset=offset, line=line, follow=follow)
        self.normalizer = Normalizer()
        self.notices = self.follower.notices
        # a backlog (what the file holds now, or what a writer added faster than lines are read) is read by blocks;
        # not when resuming: a replay goes line by line to the saved position
        self._keep = keep if resume_at is None and not _journal_json(path, offset) else None
        self._scanner: object | None = None
        self._backlog = self._behind(first=True)

    @property
    def caught_up(self) -> bool:
        return self.follower.caught_up

    @property
    def ended(self) -> bool:
        return not self.follower.follow and self.follower.at_end

    @property
    def by_blocks(self) -> bool:
        """Whether a backlog is read by blocks (not a resume, not journalctl's JSON, a `keep` given)."""
        return self._keep is not None

    def idle_for(self) -> float | None:
        return self.follower.idle_for()

    def read(self, timeout: float) -> list[Item | Gap]:
        return list(self.each(timeout))

    def each(self, timeout: float) -> Iterator[Item | Gap]:
        """What `read` returns, each item made as it is taken: a reader may stop taking them part way through
        a block (`skip_to`), and the rest of the block's lines never go through the normalizer."""
        if self._backlog is None:
            self._backlog = self._behind(first=False)
        backlog = self._backlog
        if backlog is not None:
            taken = False
            for entry in backlog.each(self):
                taken = True
                yield entry
                if self._backlog is not backlog:
                    return  # moved on (`skip_to`, `take_line`): the rest of this block is not read
            if taken:
                return
            self._backlog = None  # caught up with what the file held: from here line by line
        yield from self._lines(timeout)

    def skip_to(self, offset: int, line: int) -> None:
        """Go on reading from byte `offset`, the start of line `line`: the lines before it are not read."""
        self.follower.skip_to(offset, line)
        self._backlog = None

    def take_line(self, end: int) -> Item | None:
        """The one line from the reading position to byte `end` (its newline included) as an item, read by itself;
        the next read goes on after it. None when it cannot be taken that way."""
        block = self.follower.take_block(end, end - self.follower.position()["offset"])
        if block is None or block.data.count(b"\n") != 1:
            return None
        self._backlog = None
        return self._item(block, 0, len(block.data) - 1, block.first_line, block.where(0, block.first_line))

    def _lines(self, timeout: float) -> list[Item | Gap]:
        out: list[Item | Gap] = []
        for line_no, text in self.follower.read(timeout):
            recs = tuple(self.normalizer.feed(line_no, text))
            life = next((w for w in map(systemd_word, recs) if w), None)
            msg = recs[0].message if life and recs else ""
            out.append(Item(recs, life=life, text=msg, at=recs[0].time if life and recs else None,
                            where=self.follower.starts.get(line_no)))
        return out

    def position(self) -> dict:
        return self.follower.position()

    def close(self) -> None:
        self.follower.close()

    def _behind(self, first: bool) -> _Backlog | None:
        """A backlog to read by blocks, when at least CATCH_UP_MIN bytes wait to be read."""
        if self._keep is None:
            return None
        end = self.follower.unread_end()
        if end is None or end - self.follower.position()["offset"] < CATCH_UP_MIN:
            return None
        if self._scanner is None:
            self._scanner = search_backend([*self._keep.cs, *_SYSTEMD_LITERALS], self._keep.ci)
        return _Backlog(end, self._keep, self._scanner, first)

    def _item(self, block: Block, start: int, end: int, line: int, where: dict | None) -> Item:
        """The item of one line of a block, as `read` makes it."""
        recs = tuple(self.normalizer.feed(line, block.text(start, end)))
        life = next((w for w in map(systemd_word, recs) if w), None)
        msg = recs[0].message if life and recs else ""
        return Item(recs, life=life, text=msg, at=recs[0].time if life and recs else None, where=where)


class Gap:
    """Lines of a backlog that hold no literal any stage needs: the session reads them only while it must
    (an event is open, the startup has no time yet), and otherwise notes only their last time."""

    __slots__ = ("_source", "_block", "start", "end", "first_line", "last_line")

    def __init__(self, source: FileSource, block: Block, start: int, end: int, first_line: int, last_line: int) -> None:
        self._source, self._block = source, block
        self.start, self.end = start, end  # data[start:end] of the block: whole lines
        self.first_line, self.last_line = first_line, last_line

    def items(self, from_line: int | None = None) -> Iterator[Item]:
        """Each line from line `from_line` (the first) on as an item, in order: made as it is taken, through the
        source's normalizer, which must see what is read in the order it is read."""
        data, pos, line = self._block.data, self.start, self.first_line
        while pos < self.end and from_line is not None and line < from_line:
            pos, line = data.find(b"\n", pos) + 1, line + 1
        while pos < self.end:
            nl = data.find(b"\n", pos)
            yield self._source._item(self._block, pos, nl, line, None)
            pos, line = nl + 1, line + 1

    def last_dated(self, from_line: int, to_line: int) -> Record | None:
        """The last line from `from_line` to `to_line` that carries a time, as a record (None: none there)."""
        data, end, line = self._block.data, self.end - 1, self.last_line
        while line > to_line:
            end, line = data.rfind(b"\n", self.start, end), line - 1
        for _ in range(DATED_LOOKBACK):
            if line < from_line or end < self.start:
                return None
            start = data.rfind(b"\n", self.start, end) + 1 or self.start
            rec = next((r for r in Normalizer().feed(line, self._block.text(start, end)) if r.time), None)
            if rec is not None:
                return rec
            end, line = start - 1, line - 1
        return None

    @property
    def nonblank(self) -> bool:
        return bool(self._block.data[self.start : self.end].strip())


class _Backlog:
    """What a file held when it was looked at, read by blocks the way `analyze` reads a log (logsense.scan):
    the lines holding a literal, the first and the last ones become items, the runs between them gaps."""

    def __init__(self, end: int, keep: Keep, scanner: object, first: bool) -> None:
        self.end = end
        self.keep = keep
        self.scanner = scanner
        self.first = first  # the startup's first line is read whatever it holds

    def each(self, source: FileSource) -> Iterator[Item | Gap]:
        """The next block's items and gaps, each item made as it is taken."""
        left = self.end - source.follower.position()["offset"]
        whole = left <= 2 * CATCH_UP_BLOCK
        block = source.follower.take_block(self.end, left if whole else CATCH_UP_BLOCK)
        if block is None:
            return
        data = block.data
        found = lines_found(data, self.scanner)
        extra: set[int] = set()
        if self.first:
            extra.add(0)
            self.first = False
        if whole:  # the backlog's last lines, and its last time (the last phase ends there), as analyze keeps them
            pos = len(data) - 1
            for _ in range(max(self.keep.tail, 1)):
                pos = data.rfind(b"\n", 0, pos)
                extra.add(pos + 1)
                if pos < 0:
                    break
            dated = last_dated(data)
            if dated is not None:
                extra.add(dated)
        known = dict(zip(found.starts, found.before or (), strict=True))  # line start -> lines before it
        starts = sorted(extra.union(found.starts)) if extra.difference(known) else found.starts
        pos, line = 0, block.first_line  # where the next unread line starts, and its number
        for s in starts:
            if s > pos:
                before = known.get(s)
                n = data.count(b"\n", pos, s) if before is None else block.first_line + before - line
                yield Gap(source, block, pos, s, line, line + n - 1)
                line += n
            nl = data.find(b"\n", s)
            yield source._item(block, s, nl, line, block.where(s, line))
            pos, line = nl + 1, line + 1
        if pos < len(data):
            yield Gap(source, block, pos, len(data), line, block.first_line + found.lines - 1)


class JournalGap(Gap):
    """Entries of a journal backlog that hold no literal any stage needs (one line each), read in whole only
    when the session must read them."""

    __slots__ = ("_journal", "_first", "_messages", "_from", "_to")

    def __init__(self, journal: JournalItems, first_cursor: str, messages: list[bytes], start: int, end: int,
                 first_line: int) -> None:
        self._journal, self._first, self._messages = journal, first_cursor, messages
        self._from, self._to = start, end  # the block's entries [start, end)
        self.first_line, self.last_line = first_line, first_line + end - start - 1

    def items(self, from_line: int | None = None) -> Iterator[Item]:
        skip = max((from_line or self.first_line) - self.first_line, 0)
        wanted = range(self._from + skip, self._to)
        entries = self._journal.src.entries_at(self._first, wanted)
        for line, e in enumerate(entries, self.first_line + skip):
            yield self._journal._item(e, line, None)

    def last_dated(self, from_line: int, to_line: int) -> Record | None:
        """Every journal entry has a time: the record of the entry at `to_line`."""
        if to_line < from_line:
            return None
        i = self._from + to_line - self.first_line
        e = next(self._journal.src.entries_at(self._first, [i]), None)
        return next((r for r in Normalizer().feed_entry(to_line, e) if r.time), None) if e else None

    @property
    def nonblank(self) -> bool:
        return any(self._messages[i].strip() for i in range(self._from, self._to))


def _journal_json(path: str, offset: int) -> bool:
    """Whether the file holds `journalctl -o json` entries from `offset` (read line by line: the text is in JSON)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(64).lstrip()[:1] == b"{"
    except OSError:
        return False


def _file_start(path: str, rules, from_start: bool) -> tuple[int, str]:
    """Where a file's latest startup begins (its first server_args line), and the words for it."""
    if from_start or not os.path.exists(path):
        return 0, "from its start" if os.path.exists(path) else "waiting for it to appear"
    order = {name: i for i, name in enumerate(rules.phase_names)}
    starts = _Markers([m for p in rules.phases if p.name == RESTART_PHASE for m in p.markers])  # every server's
    later = _Markers([m for p in rules.phases if order.get(p.name, 0) >= order.get(RESTART_AFTER, len(order))
                      and not p.stop for m in p.markers])
    found = last_line(path, starts.literals, starts.accept, limit=SCAN_BYTES) if starts.literals else None
    if found is not None:
        off, seen = found[0], {starts.which(found[1])}
        while off:
            earlier = last_line(path, starts.literals, starts.accept, limit=SCAN_BYTES, before=off)
            if earlier is None:
                # the only startup in the file: what came before its server_args (the unit's start, an import's
                # warning) is its own, so it is read from the top, as analyze and history read it
                if os.path.getsize(path) <= SCAN_BYTES:
                    return 0, "from its start (its only startup)"
                break
            # a server says its arguments in more than one line (vLLM: its version, then its non-default args):
            # an earlier line is the same start when it is another of them and no weights began loading since
            marker = starts.which(earlier[1])
            if marker is None or marker in seen or (later.literals and last_line_offset(
                    path, later.literals, later.accept, limit=off - earlier[0], before=off) is not None):
                break
            seen.add(marker)
            off = earlier[0]
        if off == 0:
            return 0, "from its start (its only startup)"
        return off, "from the latest startup"
    size = os.path.getsize(path)
    if size > SCAN_BYTES:
        return size - SCAN_BYTES, f"from its last {SCAN_BYTES >> 20} MiB (no startup marker in them)"
    return 0, "from its start (no startup marker in it)"


class _Markers:
    """Phase markers as the backward line search takes them: their literals, and a test of one line's text."""

    def __init__(self, markers: list) -> None:
        self.markers = markers
        self.literals = [lit for p in markers if not p.icase for lit in p.literals or ()]

    def which(self, text: str) -> int | None:
        """The index of the first marker one line's text hits, or None."""
        for r in Normalizer().feed(0, text):
            for i, m in enumerate(self.markers):
                if m.regex.search(r.message):
                    return i
        return None

    def accept(self, text: str) -> bool:
        return self.which(text) is not None


class JournalItems:
    """A unit's journal entries as items, from its latest start (or a cursor, --since, the first entry)."""

    kind = "journal"

    def __init__(self, unit: str | None, *, files: list[str], directory: str | None, since: str | None,
                 until: str | None, boot: str | None, from_start: bool, follow: bool,
                 cursor: str | None = None, line: int = 0, keep: Keep | None = None) -> None:
        """`keep`: what a backlog read by blocks must not pass over (None: every entry is read)."""
        since_arg = "@0" if from_start and not since else since
        self.src = journald.JournalSource(unit, files=files, directory=directory,
                                          since=None if cursor else since_arg, boot=None if cursor else boot,
                                          cursor=cursor, follow=follow)
        # a unit's latest run, read from its start, goes by blocks: not a resume (a replay goes
        # entry by entry to the saved position), not every run of the journal (history), not every unit
        self._keep = keep if (keep is not None and self.src.lean and self.src.names and not cursor
                              and not from_start and self.src.newest_cursor is not None) else None
        self._scanner: object | None = None
        self._first_block = True
        self.until = journald.parse_since(until) if until else None
        self.names = self.src.names
        self.normalizer = Normalizer()
        self.line = line
        self.notices: list[str] = []
        self.caught_up = False
        self._backlog = self.src.newest_cursor is not None
        self._past_until = False
        self._cursor: str | None = cursor
        self._usec: str | None = None
        self.description = self.src.description
        first = self.src.run_start
        if cursor:
            self.start = "resuming where the last run stopped"
        elif from_start:
            self.start = "from the start of the journal"
        elif since:
            self.start = f"since {since}"
        elif not self.names:
            self.start = "every unit, from the first entry"
        elif first is not None:
            self.start = f"from its latest start ({utc(journald.entry_epoch(first))}: {journald.message(first)[:80]})"
        else:
            self.start = "no entries yet; waiting for them"

    @property
    def ended(self) -> bool:
        return self._past_until or self.src.done

    def idle_for(self) -> float | None:
        return None  # entries are timed by the host that wrote them: the quiet time is waited out

    def read(self, timeout: float) -> list[Item | Gap]:
        if self._past_until:
            return []
        if self._keep is not None and self._backlog:
            blocks = self._read_block()
            if blocks is not None:
                return blocks
        entries = self.src.read(timeout)
        out: list[Item | Gap] = []
        for e in entries:
            if self._backlog and e.get("__CURSOR") == self.src.newest_cursor:
                self._backlog = False
            epoch = journald.entry_epoch(e)
            if self.until is not None and epoch is not None and epoch > self.until:
                self._past_until = True
                break
            out.append(self._next_item(e))
            self._cursor = e.get("__CURSOR") or self._cursor
            self._usec = e.get("__REALTIME_TIMESTAMP") or self._usec
        # what was in the journal when reading began is read to its newest entry before anything is decided
        self.caught_up = self.ended or (not self._backlog and len(entries) < journald.BATCH)
        return out

    def _next_item(self, e: dict) -> Item:
        """The item of the entry read next in order: numbered after the last line, with its place (--resume)."""
        item = self._item(e, self.line + 1, {"cursor": e.get("__CURSOR"), "usec": e.get("__REALTIME_TIMESTAMP"),
                                             "line": self.line})
        if item.records:
            self.line = item.records[-1].line
        return item

    def _item(self, e: dict, line: int, where: dict | None) -> Item:
        """The item of one entry, its records numbered from `line`, through this source's normalizer."""
        recs = tuple(self.normalizer.feed_entry(line, e))
        return Item(recs, life=journald.lifecycle(e, self.names), text=journald.message(e),
                    at=utc(journald.entry_epoch(e)), run=self._run(e), where=where)

    def _read_block(self) -> list[Item | Gap] | None:
        """The backlog's next block of entries, as `_Backlog` reads a file's: the entries holding a literal, the
        run's first and the backlog's last ones become items, the runs between them gaps. None: read entry by
        entry (a short backlog, or its end)."""
        assert self._keep is not None
        batch = self.src.take_lean(JOURNAL_BLOCK)
        first, self._first_block = self._first_block, False
        if not batch.messages or batch.first is None:
            self._keep = None
            return None
        if first and len(batch.messages) < JOURNAL_CATCH_UP:
            self._keep = None  # short: entry by entry, from the first one again
            self.src.rewind(batch.first)
            return None
        msgs, times = batch.messages, batch.times
        n = len(msgs)
        if self.until is not None:
            limit = self.until * 1e6
            n = next((i for i, t in enumerate(times) if t > limit), n)
            self._past_until = n < len(msgs)
        # the backlog ends in this block: its newest entry when reading began is in it (or the journal's end)
        whole = (len(batch.messages) < JOURNAL_BLOCK or self._past_until or batch.last == self.src.newest_cursor
                 or times[-1] > self.src.newest_usec)
        if self._scanner is None:
            self._scanner = search_backend([*self._keep.cs, *_SYSTEMD_LITERALS], self._keep.ci)
        # one line per entry: an entry of several lines is always an item (its lines are numbered as read)
        data = b"\n".join(msgs[:n]) + b"\n"
        several: set[int] = set()
        if data.count(b"\n") != n:  # rare: found by a count in C, not a test of each message
            several = {i for i in range(n) if b"\n" in msgs[i]}
            data = b"\n".join(m.replace(b"\n", b" ") if i in several else m for i, m in enumerate(msgs[:n])) + b"\n"
        found = lines_found(data, self._scanner)
        wanted = set(found.before or ()) | several
        if first:
            wanted.add(0)  # the run's first entry, whatever it holds
        # the last entries of every block: whichever block the backlog ends in, its last `tail` entries are items
        wanted.update(range(max(n - max(self._keep.tail, 1), 0), n))
        out: list[Item | Gap] = []
        entries = self.src.entries_at(batch.first, sorted(wanted))
        at = 0  # the next entry not yet in `out`
        for i in sorted(wanted):
            if i > at:
                out.append(JournalGap(self, batch.first, msgs, at, i, self.line + 1))
                self.line += i - at
            e = next(entries, None)
            if e is None:  # the journal lost the entry since (rotated, vacuumed): the block ends here
                break
            out.append(self._next_item(e))
            at = i + 1
        else:
            if at < n:
                out.append(JournalGap(self, batch.first, msgs, at, n, self.line + 1))
                self.line += n - at
        self._cursor = batch.last
        self._usec = str(times[n - 1]) if n else self._usec
        if whole:
            self._backlog = False
            self._keep = None
        self.caught_up = self.ended or not self._backlog
        return out

    def _run(self, e: dict) -> str | None:
        """The unit's invocation id: from its own output or systemd's word about it, never another daemon's."""
        if not self.names:
            return None
        if e.get("_SYSTEMD_UNIT") in self.names or e.get("UNIT") in self.names or e.get("USER_UNIT") in self.names:
            return journald.invocation(e)
        return None

    def position(self) -> dict:
        return {"cursor": self._cursor, "usec": self._usec, "line": self.line}

    def close(self) -> None:
        self.src.close()


def utc(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
