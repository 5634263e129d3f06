"""The fast path for recorded logs: find candidate lines in big blocks, feed only those.

Reading is cheap and Python regexes are not (a regex per line is ~100x slower than grep).
So a multi-literal search (hyperscan, else Aho-Corasick, else bytes.find) runs over 4 MiB
blocks for every literal that any rule, phase marker, fact or framing trigger needs; only
the lines holding one are fed to the pipeline, plus every line while a multi-line event
(a traceback) is open. The result is the same as feeding every line (a test checks it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import BinaryIO

from logsense.errors import SourceError
from logsense.framing import FRAMING_LITERALS
from logsense.pipeline import Pipeline
from logsense.sources.recorded import MAX_LINE_BYTES, read_lines

BLOCK = 4 << 20
BACKENDS = ("hyperscan", "aho-corasick", "find")
# What `normalize.clean` removes from inside a line (escapes, controls, C1, bidi and zero-width characters,
# rsyslog's "#033["): a literal split by one is whole only after cleaning, so such lines are always fed.
DIRTY: tuple[bytes, ...] = (
    tuple(bytes([c]) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F))
    + tuple(chr(c).encode() for c in (*range(0x80, 0xA0), 0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
                                      *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF))
    + (b"#033[",)
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

    def __init__(self, cs: list[bytes], ci: list[bytes]) -> None:
        import ahocorasick_rs

        self._cs = ahocorasick_rs.BytesAhoCorasick(cs) if cs else None
        self._ci = ahocorasick_rs.BytesAhoCorasick(ci) if ci else None

    def offsets(self, data: bytes) -> Iterable[int]:
        if self._cs is not None:
            for _, start, _ in self._cs.find_matches_as_indexes(data):
                yield start
        if self._ci is not None:
            for _, start, _ in self._ci.find_matches_as_indexes(data.lower()):
                yield start


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


def _backend(cs: list[bytes], ci: list[bytes], size: int | None = None):
    """The fastest backend there is, or LOGSENSE_SCAN_BACKEND; for a first block of `size` < SMALL, a quick-to-build one."""
    wanted = os.environ.get("LOGSENSE_SCAN_BACKEND", "")
    order = [wanted] if wanted else ["hyperscan", "aho-corasick", "find"]
    if not wanted and size is not None and size < SMALL:
        order.remove("hyperscan")
    for name in order:
        try:
            if name == "hyperscan":
                return _Hyperscan(cs, ci)
            if name == "aho-corasick":
                return _AhoCorasick(cs, ci)
            if name == "find":
                return _Find(cs, ci)
        except ImportError:
            continue
    if wanted and wanted not in BACKENDS:
        raise SourceError(f"LOGSENSE_SCAN_BACKEND={wanted!r}: choose from {', '.join(BACKENDS)}")
    return _Find(cs, ci)


class _FirstBlock:
    """Builds the backend when the first block shows the input's size (a small log ends in its first block)."""

    def __init__(self, cs: list[bytes], ci: list[bytes]) -> None:
        self.cs, self.ci = cs, ci
        self.backend = None

    def offsets(self, data: bytes) -> Iterable[int]:
        if self.backend is None:
            self.backend = _backend(self.cs, self.ci, len(data))
        return self.backend.offsets(data)


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


def feed_stream(fp: BinaryIO, p: Pipeline, name: str, tail: int = 0) -> None:
    """Feed a recorded log to the pipeline, skipping lines that no stage could use.

    `tail`: the last lines of the log are fed whatever they hold (a reader of "how it ended").
    """
    lits = scan_literals(p)
    try:
        head = fp.peek(64)[:64] if hasattr(fp, "peek") else b""
    except (EOFError, OSError) as e:
        raise SourceError(f"{name}: compressed data is truncated or corrupt ({e})") from None
    if lits is None or head.lstrip()[:1] == b"{":
        # journalctl -o json (the text is inside JSON strings) or a pack that needs every line
        for line_no, text in read_lines(fp, name):
            p.feed_line(line_no, text)
        return
    scanner = _FirstBlock([x.encode() for x in lits[0]] + list(DIRTY), [x.encode() for x in lits[1]])
    ln = 0
    held = b""
    last = [b"", 0, True]  # the last line read, its number, and whether it was fed
    carry = b""
    dropping = False  # inside an overlong line: its rest is skipped up to the next newline
    while True:
        try:
            block = fp.read(BLOCK)
        except EOFError as e:
            raise SourceError(f"{name}: compressed data is truncated or corrupt ({e})") from None
        except OSError as e:
            raise SourceError(f"{name}: cannot read: {getattr(e, 'strerror', None) or e}") from None
        if not block:
            break
        if dropping:
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block = block[nl + 1 :]
            if held:
                ln = _feed_block(held, ln, p, scanner, last)
                held = b""
            ln = _feed_block(carry + b"\n", ln, p, scanner, last)
            carry, dropping = b"", False
        data = carry + block if carry else block
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
        else:
            if held:
                ln = _feed_block(held, ln, p, scanner, last)
            held = data[: cut + 1]  # fed once the next block shows whether it is the last
            carry = data[cut + 1 :]
        if len(carry) > MAX_LINE_BYTES:
            carry, dropping = carry[:MAX_LINE_BYTES], True
    if carry:
        held += carry + b"\n"
    if held:
        ln = _feed_block(held, ln, p, scanner, last, tail)
    if not last[2]:
        # the log's last line dates its end (the last phase's duration), wanted or not
        p.feed_line(last[1], last[0].decode("utf-8", "replace"))
    p.lines = max(p.lines, ln)


def _feed_block(body: bytes, ln: int, p: Pipeline, scanner, last: list, tail: int = 0) -> int:
    """Feed the candidate lines of `body` (whole lines); returns the line count after it."""
    if len(body) > 1:
        start = body.rfind(b"\n", 0, len(body) - 1) + 1
        last[0], last[1], last[2] = body[start : len(body) - 1][:MAX_LINE_BYTES], ln + body.count(b"\n"), False
    found = {body.rfind(b"\n", 0, off) + 1 for off in scanner.offsets(body)}
    pos = len(body) - 1
    for _ in range(tail):
        pos = body.rfind(b"\n", 0, pos)
        found.add(pos + 1)
        if pos < 0:
            break
    starts = sorted(found)
    framer = p.framer
    i, n, pos, end = 0, len(starts), 0, len(body)
    while pos < end:
        if not framer.busy:
            while i < n and starts[i] < pos:
                i += 1
            if i == n:
                ln += body.count(b"\n", pos, end)
                break
            s = starts[i]
            if s > pos:
                ln += body.count(b"\n", pos, s)
                pos = s
        nl = body.find(b"\n", pos)
        ln += 1
        raw = body[pos : min(nl, pos + MAX_LINE_BYTES)]
        p.feed_line(ln, raw.decode("utf-8", "replace"))
        pos = nl + 1
        if pos >= end:
            last[2] = True
    return ln
