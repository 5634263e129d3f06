"""The fast path for recorded logs: find candidate lines in big blocks, feed only those.

Reading is cheap and Python regexes are not (a regex per line is ~100x slower than grep).
So a multi-literal search (hyperscan, else Aho-Corasick, else bytes.find) runs over 4 MiB
blocks for every literal that any rule, phase marker, fact or framing trigger needs; only
the lines holding one are fed to the pipeline, plus every line while a multi-line event
(a traceback) is open. The result is the same as feeding every line (a test checks it).

On a log of more than two blocks, reading and searching run in a forked child ahead of the
pipeline: on two cores the search then costs the pipeline nothing (a thread would, as the two
would take turns holding the GIL); the pipe between them is bounded, so memory stays flat.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, NoReturn, TypeVar

from logsense.errors import SourceError
from logsense.framing import FRAMING_LITERALS
from logsense.linecut import MAX_LINE_BYTES, LongLine
from logsense.normalize import line_times
from logsense.pipeline import Pipeline
from logsense.sources.recorded import read_lines

if TYPE_CHECKING:
    import mmap  # the forked search's modules are imported when a log is big enough for it

BLOCK = 4 << 20
T = TypeVar("T")
# (block of whole lines, lines before it, the starts of the lines holding a literal) -> more line starts to feed
Pick = Callable[[bytes, int, list[int]], Iterable[int]]
BACKENDS = ("hyperscan", "aho-corasick", "find")
# What `normalize.clean` removes from inside a line (escapes, controls, C1, bidi and zero-width characters,
# rsyslog's "#033[", caret notation's "^[["): a literal split by one is whole only after cleaning, so such lines
# are always fed.
DIRTY: tuple[bytes, ...] = (
    tuple(bytes([c]) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F))
    + tuple(chr(c).encode() for c in (*range(0x80, 0xA0), 0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
                                      *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF))
    + (b"#033[", b"^[[")
)


class _Find:
    name = "find"

    def __init__(self, cs: list[bytes], ci: list[bytes]) -> None:
        self.cs, self.ci = cs, ci

    def offsets(self, data: bytes) -> Iterable[int]:
        for lits, hay in ((self.cs, data), (self.ci, data.lower() if self.ci else b"")):
            for lit in lits:
                i = hay.find(lit)
                while i >= 0:
                    yield i
                    nl = hay.find(b"\n", i)  # only the line matters: go on from the next one
                    i = hay.find(lit, nl + 1) if nl >= 0 else -1


class _AhoCorasick:
    name = "aho-corasick"

    def __init__(self, cs: list[bytes], ci: list[bytes], big: bool = False) -> None:
        import ahocorasick_rs

        self._cs, self._ci = cs, ci
        self._one: Any = None  # big: one search for every literal
        self._two: tuple[Any, Any] | None = None  # small: a search for each kind; big: the check of a line
        self._decisive = 0  # big: the patterns before this index are literals, the rest anchors
        if big:
            # One case-sensitive pass over the bytes as they are: lowering a block first holds the GIL
            # (0.5 s on 373 MB) and a second pass costs as much as the first. A DFA searches twice as
            # fast as the default automaton but takes ~0.1 s to build: worth it only on a big input.
            patterns, self._decisive = _one_pass(cs, ci)
            if patterns:
                self._one = ahocorasick_rs.BytesAhoCorasick(patterns, implementation=ahocorasick_rs.Implementation.DFA)
        else:
            self._two = self._automata()

    def _automata(self) -> tuple[Any, Any]:
        """The literals as they are and the case-blind ones, for a text and its lower-cased copy."""
        import ahocorasick_rs

        nfa = ahocorasick_rs.Implementation.NoncontiguousNFA  # built in half the default's time: a small input is soon searched
        return (ahocorasick_rs.BytesAhoCorasick(self._cs, implementation=nfa) if self._cs else None,
                ahocorasick_rs.BytesAhoCorasick(self._ci, implementation=nfa) if self._ci else None)

    def offsets(self, data: bytes) -> Iterable[int]:
        if self._one is not None:
            return self._one_pass(data)
        return self._two_pass(data) if self._two is not None else ()

    def _two_pass(self, data: bytes) -> Iterator[int]:
        assert self._two is not None
        cs, ci = self._two
        if cs is not None:
            for _, start, _ in cs.find_matches_as_indexes(data):
                yield start
        if ci is not None:
            for _, start, _ in ci.find_matches_as_indexes(data.lower()):
                yield start

    def _one_pass(self, data: bytes) -> Iterator[int]:
        checked: dict[int, bool] = {}  # line start -> whether the line holds a literal
        decisive = self._decisive
        for i, start, _ in self._one.find_matches_as_indexes(data):
            if i < decisive:
                yield start
                continue
            # only the end of a case-blind literal: its line is checked whole (rare, and exact)
            line = data.rfind(b"\n", 0, start) + 1
            holds = checked.get(line)
            if holds is None:
                end = data.find(b"\n", start)
                holds = checked[line] = self._holds(data[line : end if end >= 0 else len(data)])
            if holds:
                yield start

    def _holds(self, line: bytes) -> bool:
        """Whether one line holds a literal (a case-sensitive one may hide behind an anchor's match)."""
        if self._two is None:
            self._two = self._automata()
        cs, ci = self._two
        return bool((cs is not None and cs.find_matches_as_indexes(line))
                    or (ci is not None and ci.find_matches_as_indexes(line.lower())))


ANCHOR_LETTERS = 6  # a case-blind literal is searched for as every ASCII casing of its last this many letters


def _one_pass(cs: list[bytes], ci: list[bytes]) -> tuple[list[bytes], int]:
    """Patterns for one case-sensitive search that finds every line holding a literal, and how many lead.

    The leading patterns decide: the literals as they are, and every ASCII casing of each short
    case-blind literal (what a search of the lower-cased text finds). Each longer case-blind
    literal is searched for by its last ANCHOR_LETTERS letters in every casing (2^6 patterns at
    most), and a line where only those match is checked whole.
    """
    decisive: dict[bytes, None] = dict.fromkeys(cs)
    anchors: dict[bytes, None] = {}
    for lit in ci:
        lit = lit.lower()
        letters = [i for i, c in enumerate(lit) if 0x61 <= c <= 0x7A]
        if len(letters) <= ANCHOR_LETTERS:
            decisive.update(dict.fromkeys(_casings(lit)))
        else:
            anchors.update(dict.fromkeys(_casings(lit[letters[-ANCHOR_LETTERS] :])))
    rest = [a for a in anchors if a not in decisive]
    return [*decisive, *rest], len(decisive)


def _casings(lit: bytes) -> list[bytes]:
    """Every ASCII upper/lower casing of a lower-cased literal."""
    out = [b""]
    for c in lit:
        ch = bytes([c])
        out = [x + ch for x in out] + ([x + ch.upper() for x in out] if 0x61 <= c <= 0x7A else [])
    return out


class _Hyperscan:
    name = "hyperscan"

    def __init__(self, cs: list[bytes], ci: list[bytes]) -> None:
        import hyperscan

        exprs = [b"".join(b"\\x%02x" % c for c in x) for x in cs + ci]  # any byte, NUL included
        flags = [0] * len(cs) + [hyperscan.HS_FLAG_CASELESS] * len(ci)
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)

    def offsets(self, data: bytes) -> Iterable[int]:
        out: list[int] = []

        def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            out.append(end - 1)  # hyperscan reports where a match ends; its line is what counts

        self._db.scan(data, match_event_handler=on_match)
        return out


SMALL = 1 << 20  # input up to this size: a backend that builds in milliseconds beats hyperscan's ~0.1 s compile
WHOLE = 128 << 10  # a process's first input up to this size is fed whole, without a search (about 500 lines)


def search_backend(cs: list[bytes], ci: list[bytes], size: int | None = None):
    """The fastest backend there is, or LOGSENSE_SCAN_BACKEND; for an input of `size` < SMALL, a quick-to-build one.

    `size` None: an input of several blocks, where the search speed is all that counts.
    """
    wanted = os.environ.get("LOGSENSE_SCAN_BACKEND", "")
    if not wanted and size is not None and size < SMALL:
        return _quick_backend(tuple(cs), tuple(ci))
    order = [wanted] if wanted else ["hyperscan", "aho-corasick", "find"]
    for name in order:
        try:
            if name == "hyperscan":
                return _Hyperscan(cs, ci)
            if name == "aho-corasick":
                return _AhoCorasick(cs, ci, big=size is None)
            if name == "find":
                return _Find(cs, ci)
        except ImportError:
            continue
    if wanted and wanted not in BACKENDS:
        raise SourceError(f"LOGSENSE_SCAN_BACKEND={wanted!r}: choose from {', '.join(BACKENDS)}")
    return _Find(cs, ci)


@lru_cache(maxsize=4)
def _quick_backend(cs: tuple[bytes, ...], ci: tuple[bytes, ...]):
    """A small input's backend, built once per set of literals: the logs of a batch (stats, check) share it."""
    try:
        return _AhoCorasick(list(cs), list(ci))
    except ImportError:
        return _Find(list(cs), list(ci))


def scan_literals(p: Pipeline) -> tuple[list[str], list[str]] | None:
    """Every literal some stage needs, or None when a pattern has none (then every line is needed)."""
    cs: set[str] = set(FRAMING_LITERALS) | set(p.reading.literals[0])
    ci: set[str] = set(p.reading.literals[1])
    for index in (p.matcher.index, p.timeline.index, p.facts.index):
        if index.always:
            return None
        a, b = index.literals
        cs.update(a)
        ci.update(b)
    return sorted(cs), sorted(ci)


class Keep(NamedTuple):
    """What a reader that passes over lines must keep for a pipeline: lines holding a literal, the last lines."""

    cs: list[bytes]  # literals as they are (with `DIRTY`: a line holding one is always kept)
    ci: list[bytes]  # case-blind literals
    tail: int  # the last lines of the input, kept whatever they hold


def keep_for(p: Pipeline) -> Keep | None:
    """What `p` needs of a log read by blocks (as `feed_stream` reads it); None when it needs every line."""
    lits = None if p.reading.every_line or p.reading.pick else scan_literals(p)
    if lits is None:
        return None
    return Keep([x.encode() for x in lits[0]] + list(DIRTY), [x.encode() for x in lits[1]], p.reading.tail)


def feed_stream(fp: BinaryIO, p: Pipeline, name: str, tail: int = 0, pick: Pick | None = None,
                parallel: bool | None = None, lines_before: int = 0) -> None:
    """Feed a recorded log to the pipeline, skipping lines that no stage could use.

    `tail`: the last lines of the log are fed whatever they hold (a reader of "how it ended").
    `pick(block, lines_before, starts)`: the offsets of more lines of a block of whole lines to feed.
    `parallel`: search in a forked child ahead of the pipeline (None: when `may_fork` and the log
    is more than two blocks long; a small log pays nothing for it).
    `lines_before`: the lines of the log before `fp`'s position (they are numbered on from there).
    """
    lits = scan_literals(p)
    try:
        head = fp.peek(64)[:64] if hasattr(fp, "peek") else b""
    except (EOFError, OSError) as e:
        raise SourceError(f"{name}: compressed data is truncated or corrupt ({e})") from None
    if lits is None or head.lstrip()[:1] == b"{":
        # journalctl -o json (the text is inside JSON strings) or a pack that needs every line
        for line_no, text in read_lines(fp, name):
            p.feed_line(lines_before + line_no, text)
        return
    cs, ci = [x.encode() for x in lits[0]] + list(DIRTY), [x.encode() for x in lits[1]]
    at = _positioned(fp)
    bodies = _bodies(fp, name)
    first = [b for b in (next(bodies, None), next(bodies, None)) if b is not None]
    ahead: _Forked | None = None
    scanned: Iterable[tuple[bytes, Found, bool]]
    if (len(first) < 2 and sum(len(b) for b, _ in first) < WHOLE and not _whole_fed
            and not os.environ.get("LOGSENSE_SCAN_BACKEND")):
        # A process's first small log: building the search would cost more than the lines it skips (a batch
        # of logs builds it at the second, for all the rest). Every line is fed, which is the same report.
        _fed_whole()
        for line_no, text in read_lines(io.BytesIO(b"".join(b for b, _ in first)), name):
            p.feed_line(lines_before + line_no, text)
        return
    if len(first) < 2:  # the whole log is in one block
        scanner = search_backend(cs, ci, sum(len(b) for b, _ in first))
        scanned = ((b, lines_found(b, scanner), True) for b, _ in first)
    else:
        scanner = search_backend(cs, ci)  # built before the fork: both sides have it
        if hasattr(os, "fork") and (parallel or (parallel is None and may_fork())):
            with contextlib.suppress(OSError):  # no process to spare (a limit on processes, memory): search here
                ahead = _Forked(_chain(first, bodies), scanner, at)
        if ahead is None:
            scanned = ((b, lines_found(b, scanner), final) for (b, _), final in _with_last(_chain(first, bodies)))
        else:
            scanned = ahead
    try:
        _feed_all(scanned, p, tail, pick, lines_before)
    finally:
        if ahead is not None:
            ahead.close()


_whole_fed = False  # whether this process has fed a small log whole (the first one)


def _fed_whole() -> None:
    global _whole_fed
    _whole_fed = True


def may_fork() -> bool:
    """fork, two cores and one thread: a fork copies no other thread, and a lock one of them held would stay
    locked in the child (a process with threads, a Dask worker say, searches its blocks itself)."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # not on Linux
        return (os.cpu_count() or 1) >= 2


def _positioned(fp: BinaryIO) -> tuple[int, int] | None:
    """(descriptor, offset) when `fp` reads a regular file's bytes as they are, from that offset: a block can
    then be read again by where it is (the forked search sends where, not the bytes)."""
    try:
        if type(fp) is io.BufferedReader and isinstance(fp.raw, io.FileIO):
            fd = fp.fileno()
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd, fp.tell()
    except (OSError, ValueError):
        pass
    return None


def _chain(first: list[tuple[bytes, int]], rest: Iterator[tuple[bytes, int]]) -> Iterator[tuple[bytes, int]]:
    yield from first
    yield from rest


def _bodies(fp: BinaryIO, name: str) -> Iterator[tuple[bytes, int]]:
    """The input in blocks of whole lines (each ends in a newline); an overlong line keeps its two ends (linecut).

    Each block comes with where it starts in the input, or -1 when it is not the input's bytes as
    they are (a line in it was cut, or its last line got the newline the input lacks). A block is
    given out once the next read shows whether it is the last, so that the last one holds a whole
    block's lines (the `tail` lines are taken from it).
    """
    held, held_at = b"", -1
    carry, carry_at = b"", 0  # what follows the last newline read, and where it starts (-1: cut)
    read = 0  # bytes read so far
    long = LongLine()  # an overlong line being read: its start and end kept, its middle cut
    while True:
        try:
            block = fp.read(BLOCK)
        except EOFError as e:
            raise SourceError(f"{name}: compressed data is truncated or corrupt ({e})") from None
        except OSError as e:
            raise SourceError(f"{name}: cannot read: {getattr(e, 'strerror', None) or e}") from None
        if not block:
            break
        at = read
        read += len(block)
        if long:
            nl = block.find(b"\n")
            if nl < 0:
                long.add(block)
                continue
            long.add(memoryview(block)[:nl])
            block, at = block[nl + 1 :], at + nl + 1
            if held:
                yield held, held_at
                held = b""
            yield long.take_bytes() + b"\n", -1
            carry, carry_at = b"", at
        cut = block.rfind(b"\n")  # the carry holds no newline: it is what follows the last one
        if cut < 0:
            if not carry:
                carry_at = at
            carry += block
        else:
            if held:
                yield held, held_at
            held = b"".join((carry, memoryview(block)[: cut + 1]))  # one copy of the block, not two
            held_at = carry_at if carry else at
            carry, carry_at = block[cut + 1 :], at + cut + 1
        if len(carry) > MAX_LINE_BYTES:
            long.add(carry)
            carry, carry_at = b"", -1
    if long:
        carry = long.take_bytes()
    if carry:
        held, held_at = held + carry + b"\n", -1
    if held:
        yield held, held_at


class Found(NamedTuple):
    """What the search found in a block: where the lines holding a literal start and, once counted, how many
    lines precede each and how many the block has."""

    starts: list[int]
    before: list[int] | None = None
    lines: int = -1


def lines_found(body: bytes, scanner, count: bool = True) -> Found:
    """The lines of `body` (whole lines) that hold a literal, in order; with their ordinals if `count`."""
    found: set[int] = set()
    lo = hi = -1  # the last line found: its literals' offsets mostly come together (a line may hold ten)
    for off in scanner.offsets(body):
        if not lo <= off < hi:
            lo = body.rfind(b"\n", 0, off) + 1
            hi = body.find(b"\n", off)
            found.add(lo)
    starts = sorted(found)
    return _counted(body, Found(starts)) if count else Found(starts)


def _counted(body: bytes, found: Found) -> Found:
    """`found` with its ordinals: the lines before each start, and the block's lines."""
    if found.before is not None:
        return found
    before: list[int] = []
    n = prev = 0
    count = body.count
    for s in found.starts:
        n += count(b"\n", prev, s)
        before.append(n)
        prev = s
    return Found(found.starts, before, n + count(b"\n", prev))


_SEARCHED, _UNSEARCHED, _ERROR, _END = b"B", b"U", b"E", b"Z"
# kind, last block?, where the body is (one of _IN_*), body bytes (or message bytes), where, starts, lines (-1: not
# counted)
_HEAD = struct.Struct("<c?BQQQq")
_IN_PIPE, _IN_FILE, _IN_SLOT = 0, 1, 2  # the body follows the header; is in the file at `where`; in shared slot `where`
SLOTS = 3  # shared blocks: one being filled, one being taken, one spare
F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20  # a 4 MiB block then goes through in four writes, not sixty-four


class _Forked:
    """Reads and searches blocks in a forked child, up to a pipe's worth ahead of the block being fed.

    A child, not a thread: the search and the pipeline then never wait on each other for the GIL,
    and each has a core. The child reads the input as the parent would have (any stream: a file,
    a pipe, a decompressor) and sends each block with what the search found (a block of a
    regular file by where it is: the pipeline reads it from there; any other's through shared
    memory, a few blocks of it); memory stays flat whatever the input's size. Work goes to whichever side has time: a block
    the pipeline is already waiting for is sent unsearched (the pipeline searches it), and a
    block's lines are counted by the child only while the pipeline is busy.
    """

    def __init__(self, bodies: Iterator[tuple[bytes, int]], scanner: object, at: tuple[int, int] | None) -> None:
        import array  # noqa: F401 - for the child, which must not import after the fork
        import fcntl
        import mmap

        r, w = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_BYTES)
        credit_r, credit_w = os.pipe()  # a byte for each slot the pipeline has taken its block out of
        self._slot = _slot_bytes()
        # byte 0: 1 while the pipeline waits for a block; then the slots
        self._shared = mmap.mmap(-1, 1 + SLOTS * self._slot)
        parent = os.getpid()
        try:
            self._pid = os.fork()
        except OSError:
            for fd in (r, w, credit_r, credit_w):
                os.close(fd)
            self._shared.close()
            raise
        if self._pid == 0:  # the child: never returns
            os.close(r)
            os.close(credit_w)
            _search_child(bodies, scanner, w, parent, self._shared, credit_r, self._slot, by_place=at is not None)
        os.close(w)
        os.close(credit_r)
        self._credit = credit_w
        self._fd = r
        self._at = at
        self._scanner = scanner
        self._done = False

    def __iter__(self) -> Iterator[tuple[bytes, Found, bool]]:
        import array
        import select

        while True:
            if not select.select([self._fd], [], [], 0)[0]:
                self._shared[0] = 1
            head = self._read(_HEAD.size)
            self._shared[0] = 0
            kind, last, place, size, where, nstarts, lines = _HEAD.unpack(head)
            if kind == _END:
                self._done = True
                return
            if place == _IN_SLOT:
                at = 1 + where * self._slot
                payload = self._shared[at : at + size]
                os.write(self._credit, b"x")
            else:
                payload = self._reread(size, where) if place == _IN_FILE else self._read(size)
            if kind == _ERROR:
                self._done = True
                raise SourceError(payload.decode("utf-8", "replace"))
            if kind == _UNSEARCHED:
                yield payload, lines_found(payload, self._scanner), last
                continue
            numbers = array.array("q")
            numbers.frombytes(self._read(8 * nstarts * (2 if lines >= 0 else 1)))
            starts = numbers[:nstarts].tolist()
            yield payload, Found(starts, numbers[nstarts:].tolist(), lines) if lines >= 0 else Found(starts), last

    def _read(self, n: int) -> bytes:
        chunks = []
        while n > 0:
            chunk = os.read(self._fd, min(n, PIPE_BYTES))
            if not chunk:
                raise SourceError("the block search stopped without a word (killed?); the log was not read to its end")
            chunks.append(chunk)
            n -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _reread(self, n: int, where: int) -> bytes:
        """A block of the file, from where the child read it."""
        assert self._at is not None
        fd, base = self._at
        data = os.pread(fd, n, base + where)
        while 0 < len(data) < n:
            more = os.pread(fd, n - len(data), base + where + len(data))
            if not more:
                break
            data += more
        if len(data) != n or data[-1:] != b"\n":
            raise SourceError("the log changed while it was read (truncated or rewritten in place); read it again")
        return data

    def close(self) -> None:
        """Stop the child (it has ended unless feeding stopped early; then it may be blocked reading a pipe)."""
        import signal

        os.close(self._fd)
        os.close(self._credit)
        if not self._done:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        self._shared.close()


def _slot_bytes() -> int:
    """A shared slot's size: a block, a whole read and the line it cut (a rare bigger one goes through the pipe)."""
    return BLOCK + MAX_LINE_BYTES + 1


def _parent_idle(shared: mmap.mmap) -> bool:
    """Whether the pipeline is waiting for the next block."""
    return shared[0] == 1


def _search_child(bodies: Iterator[tuple[bytes, int]], scanner: object, w: int, parent: int, shared: mmap.mmap,
                  credit: int, slot: int, by_place: bool) -> NoReturn:
    """The forked child's whole life: search every block, send it on, exit without running the parent's exit code."""
    import array  # imported by the parent before the fork (`_Forked`): found, not loaded, so it cannot fail here

    code = 0
    out = os.fdopen(w, "wb", buffering=1 << 16)
    credits, used = SLOTS, 0

    def send(kind: bytes, last: bool, body: bytes, where: int, found: Found = Found([])) -> None:
        nonlocal credits, used
        place = _IN_FILE if by_place and where >= 0 else _IN_SLOT if len(body) <= slot else _IN_PIPE
        if place == _IN_SLOT:
            while not credits:
                got = os.read(credit, SLOTS)
                if not got:
                    raise BrokenPipeError  # the pipeline has stopped
                credits += len(got)
            credits -= 1
            where = used % SLOTS
            used += 1
            at = 1 + where * slot
            shared[at : at + len(body)] = body
        numbers = array.array("q", found.starts)
        numbers.extend(found.before or ())
        out.write(_HEAD.pack(kind, last, place, len(body), where if place != _IN_PIPE else 0, len(found.starts),
                             found.lines))
        if place == _IN_PIPE:
            out.write(body)
        out.write(numbers.tobytes())
        out.flush()  # the block is whole only with its numbers: held back, they would hold the pipeline back

    try:
        _die_with(parent)
        _close_pipe_writers(keep=w)
        for (body, where), last in _with_last(bodies):
            if _parent_idle(shared):
                send(_UNSEARCHED, last, body, where)
                continue
            found = lines_found(body, scanner, count=False)
            if not _parent_idle(shared):
                found = _counted(body, found)
            send(_SEARCHED, last, body, where, found)
        out.write(_HEAD.pack(_END, True, _IN_PIPE, 0, 0, 0, 0))
        out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        code = 1  # the reader has stopped, or the user has
    except BaseException as e:  # noqa: BLE001 - said in the parent, which raises it
        text = str(e) if isinstance(e, SourceError) else f"searching the log failed: {type(e).__name__}: {e}"
        with contextlib.suppress(BaseException):
            message = text.encode("utf-8", "replace")
            out.write(_HEAD.pack(_ERROR, True, _IN_PIPE, len(message), 0, 0, 0))
            out.write(message)
            out.flush()
        code = 1
    with contextlib.suppress(BaseException):
        while os.read(credit, 4096):  # held open until the pipeline is done: its credits never meet a closed pipe
            pass
    os._exit(code)


def _with_last(items: Iterable[T]) -> Iterator[tuple[T, bool]]:
    """Each item and whether it is the last."""
    it = iter(items)
    item = next(it, None)
    while item is not None:
        following = next(it, None)
        yield item, following is None
        item = following


def _close_pipe_writers(keep: int) -> None:
    """Close the child's copies of pipes' write ends: a reader of one (this log's writer among them, or
    whoever reads our output) would otherwise wait for this child's exit to see its end."""
    import fcntl

    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            with contextlib.suppress(OSError):
                if fd != keep and stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
                    os.close(fd)


def _die_with(parent: int) -> None:
    """Have the kernel kill this child when its parent dies: it may be blocked reading a pipe nobody else reads."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _feed_all(scanned: Iterable[tuple[bytes, Found, bool]], p: Pipeline, tail: int, pick: Pick | None,
              ln: int = 0) -> None:
    """Feed the candidate lines of every block (`ln` lines before the first); the `tail` last lines and the
    very last line always."""
    last: list[Any] = [b"", 0, True]  # the last line read, its number, and whether it was fed
    back: deque[tuple[bytes, int, int]] = deque()  # the blocks before: body, lines before it, lines in it
    kept = 0  # lines in `back`
    for body, found, final in scanned:
        extra: list[int] = []
        if final:
            dated = last_dated(body)
            if dated is not None:
                extra.append(dated)
            else:  # the last block has no time (a long traceback): the last time is in a block before
                _note_last_dated(back, p)
        first = ln
        ln = _feed_block(body, found, ln, p, last, tail if final else 0, pick, extra)
        back.append((body, first, ln - first))
        kept += ln - first
        while len(back) > 1 and kept - back[0][2] >= DATED_LOOKBACK:
            kept -= back.popleft()[2]
    if not last[2]:
        # the log's last line dates its end (the last phase's duration), wanted or not
        p.feed_line(last[1], last[0].decode("utf-8", "replace"))
    p.lines = max(p.lines, ln)


DATED_LOOKBACK = 1000  # lines searched back from the end for the last one with a time


def last_dated(body: bytes) -> int | None:
    """Where the last line with a timestamp starts (the last phase ends at the last time the log shows).

    A log that ends in a traceback ends in lines with no time of their own.
    """
    end = len(body) - 1  # the newline that ends the last line
    for _ in range(DATED_LOOKBACK):
        if end <= 0:
            return None
        start = body.rfind(b"\n", 0, end) + 1
        if line_times(0, body[start : min(end, start + MAX_LINE_BYTES)]):
            return start
        end = start - 1
    return None


def _note_last_dated(back: deque[tuple[bytes, int, int]], p: Pipeline) -> None:
    """The time of the last line with one in these blocks (newest last), fed or not: it dates the log's end."""
    for body, first, _ in reversed(back):
        start = last_dated(body)
        if start is None:
            continue
        end = body.find(b"\n", start)
        line = first + body.count(b"\n", 0, start) + 1
        for time in line_times(line, body[start : min(end, start + MAX_LINE_BYTES)]):
            p.timeline.dated(line, time)
        return


def _feed_block(body: bytes, found: Found, ln: int, p: Pipeline, last: list, tail: int = 0,
                pick: Pick | None = None, extra: Iterable[int] = ()) -> int:
    """Feed the lines of `body` (whole lines) that the search found, and `extra` starts; the line count after it."""
    if len(body) > 1:
        start = body.rfind(b"\n", 0, len(body) - 1) + 1
        last[0], last[2] = body[start : len(body) - 1][:MAX_LINE_BYTES], False
    found = _counted(body, found)
    starts = found.starts
    assert found.before is not None
    known = dict(zip(starts, found.before, strict=True))  # line start -> lines before it in the block
    more = set(extra)
    if tail or pick is not None:
        if pick is not None:
            more.update(pick(body, ln, starts))
        pos = len(body) - 1
        for _ in range(tail):
            pos = body.rfind(b"\n", 0, pos)
            more.add(pos + 1)
            if pos < 0:
                break
    if more.difference(known):
        starts = sorted(more.union(starts))
    base = ln  # lines before the block
    framer = p.framer
    i, n, pos, end = 0, len(starts), 0, len(body)
    while pos < end:
        if not framer.busy:
            while i < n and starts[i] < pos:
                i += 1
            if i == n:
                break
            s = starts[i]
            if s > pos:
                before = known.get(s)
                ln = base + before if before is not None else ln + body.count(b"\n", pos, s)
                pos = s
        nl = body.find(b"\n", pos)
        ln += 1
        raw = body[pos : min(nl, pos + MAX_LINE_BYTES)]
        p.feed_line(ln, raw.decode("utf-8", "replace"))
        pos = nl + 1
        if pos >= end:
            last[2] = True
    ln = base + found.lines  # every line of the block is counted once, fed or not
    if len(body) > 1:
        last[1] = ln
    return ln
