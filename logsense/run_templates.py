"""The line templates of one startup: what kind each line is, and the first line of each template.

`RunTemplates` watches a pipeline's records: it says what each record is (`Kinds`: a frame,
an exception line, an error, a warning ...), masks it and mines it into templates
(`logsense.templates`), keeping each template's first line, count and ranks. With a
reference miner (the good run, the healthy baselines) it also mines, apart, the lines that
fit no reference template: what is new in this run. `logsense diff` and `analyze --baseline`
are built on it.

Reading at the block scanner's speed: most lines of a big log are the same few messages
with other numbers. `pick` (the scanner's hook, `logsense.scan.feed_stream`) keys each line
of a block by its shape (its bytes with every digit as 0): a line whose shape is known to
give always the same masked message (no digit survives the masks, one record per line, not
a continuation, a plain line rather than part of a traceback) is counted on that shape's
templates without being fed; the other lines are fed. The first line of each shape is always
fed, so templates, first lines and phases are those of feeding every line. What a skipped
line would still have changed: the least-recently-used order of the miner's caps, and the
traceback state of its stream (`Kinds`), which a later plain line of the stream resets.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate, compress
from typing import Any

from logsense import exception_line
from logsense.framing import chain_link, frame_location, is_traceback_head
from logsense.model import Diagnosis, Event, Record
from logsense.normalize import Normalizer
from logsense.pipeline import Reading
from logsense.rules.phases import phase_index
from logsense.servers import SERVERS
from logsense.templates import TemplateMiner, mask
from logsense.timeline import RESTART_PHASE, Timeline

MAX_TEXT = 500  # characters of a line kept as evidence
MAX_PENDING = 20_000  # records kept while the reference is not ready (a few MB), then it is waited for
ERRORISH = ("exception", "error", "traceback")
PLAIN = ("line", "error", "warning")  # kinds that neither open nor continue a traceback

# The server_args dump is compared flag by flag in the facts, not as one huge template.
_SKIP_PREFIXES = (*(h for s in SERVERS for h in s.dump_heads), "Namespace(")  # and any argparse dump
_EXCEPTION = re.compile(rf"\s*{exception_line.TYPED_NAME}\b:?(?:\s|$)")
_ERROR = re.compile(
    r"\b(?:ERROR|CRITICAL|FATAL|[Ee]rror|[Ff]ailed|FAILED|[Ff]ailure|[Ff]atal|[Ee]xception|[Kk]illed|"
    r"Abort(?:ed)?|[Ss]egmentation fault|core dumped|sigquit|SIGQUIT|is dead|[Tt]imed out)\b"
)
_WARNING = re.compile(r"\b(?:WARNING|WARN|[Ww]arning|[Dd]eprecated|[Dd]eprecation)\b|Warning:")
# What a line must hold, lowercased, for _ERROR / _WARNING to match: `in` costs ~50 ns a word where
# the regexes cost ~20 us on a long line, and most lines hold none.
_ERROR_WORDS = ("error", "critical", "fatal", "fail", "exception", "killed", "abort", "segmentation fault",
                "core dumped", "sigquit", "is dead", "timed out")
_WARNING_WORDS = ("warn", "deprecat")
_ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_PLUS_ONE = (1).__add__  # a line's length with its newline
_DIGIT = re.compile(r"\d")


@dataclass
class TemplateLine:
    """The first line of a template in one run, and how often the template came back."""

    line: int
    text: str
    phase: str
    kind: str  # exception | error | traceback | warning | frame | source | chain | benign | line
    template: str
    masked: str
    chain: int | None = None  # the traceback chain this line is part of (see Kinds)
    count: int = 1
    ranks: set[str] = field(default_factory=set)

    @property
    def errorish(self) -> bool:
        return self.kind in ERRORISH

    @property
    def frame(self) -> str | None:
        """`vision.py:forward` for a traceback frame, else None."""
        if self.kind != "frame":
            return None
        at = frame_location(self.text)
        return f"{at[0].rsplit('/', 1)[-1]}:{at[1]}" if at else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line, "phase": self.phase, "kind": self.kind, "count": self.count,
                               "text": self.text, "template": self.template}
        if self.ranks:
            out["ranks"] = sorted(self.ranks, key=_rank_key)
        return out


def _rank_key(r: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", r))


class Kinds:
    """Says what a record is (a frame, an exception line, an error, a warning ...), per stream.

    It also follows Python tracebacks: the tracebacks of one chain ("The above exception was
    the direct cause of ...") share a `chain` id, so the exception a chain ends with can be
    told from its causes.
    """

    def __init__(self) -> None:
        self._in_frames: dict[str | None, bool] = {}
        self._chain: dict[str | None, int | None] = {}
        self._linked: dict[str | None, bool] = {}
        self._next = 0
        self.chain: int | None = None  # the chain of the record just classified
        self.handled: set[int] = set()  # chains linked by "During handling of the above exception"

    def __call__(self, rec: Record) -> str:
        msg = rec.message
        pid = rec.pid
        s = msg.lstrip()
        self.chain = self._chain.get(pid)
        if s.startswith('File "') and frame_location(s):
            self._in_frames[pid] = True
            return "frame"
        if self._in_frames.get(pid):
            if msg[:1] in (" ", "\t") or not s.strip("^~ "):
                return "source"  # the code line under a frame, or its ^^^^ marker
            self._in_frames[pid] = False
        if not s:
            return "line"
        if is_traceback_head(msg):
            if not self._linked.get(pid) or self.chain is None:
                self._next += 1
                self.chain = self._chain[pid] = self._next
            self._linked[pid] = False
            return "traceback"
        if self.chain is not None:
            link = chain_link(s)
            if link:
                self._linked[pid] = True
                if link == "handling":
                    self.handled.add(self.chain)
                return "chain"
            if _EXCEPTION.match(s):
                return "exception"
            self.chain = self._chain[pid] = None
        if _EXCEPTION.match(s):
            return "exception"
        low = msg.lower()
        if any(w in low for w in _ERROR_WORDS) and _ERROR.search(msg):
            return "error"
        if any(w in low for w in _WARNING_WORDS) and _WARNING.search(msg):
            return "warning"
        return "line"


def skipped(msg: str) -> bool:
    """Lines no template is made of: blank ones and the server_args dump."""
    s = msg.strip()
    return not s or s.startswith(_SKIP_PREFIXES)


class Templates:
    """Templates of one stream of records, each with its first line (bounded by the miner's cap)."""

    def __init__(self, **miner_options) -> None:
        self.miner = TemplateMiner(**miner_options)
        self.first: dict[int, TemplateLine] = {}

    def add(self, rec: Record, masked: str, phase: str, kind: str, chain: int | None) -> int:
        """Mine one record; returns the id of the template that took it."""
        c = self.miner.add_masked(masked)
        info = self.first.get(c.id)
        if info is None:
            info = self.first[c.id] = TemplateLine(rec.line, rec.message.strip()[:MAX_TEXT], phase, kind, "", masked,
                                                   chain)
            if len(self.first) > 2 * self.miner.max_clusters:
                self.first = {k: v for k, v in self.first.items() if self.miner.get(k) is not None}
        else:
            info.count += 1
        if rec.rank:
            info.ranks.add(rec.rank)
        return c.id

    def count(self, cid: int, n: int, ranks: set[str]) -> None:
        """`n` more lines of template `cid` (lines of a known shape, not mined again)."""
        info = self.first.get(cid)
        if info is not None and self.miner.get(cid) is not None:
            info.count += n
            info.ranks |= ranks

    def items(self) -> list[TemplateLine]:
        out = []
        for cid, info in self.first.items():
            c = self.miner.get(cid)
            if c is not None:
                info.template = c.template
                out.append(info)
        out.sort(key=lambda x: x.line)
        return out


@dataclass
class _Shape:
    """What the lines of one shape give: the same masked message, so the same templates."""

    countable: bool  # its lines may be counted without being fed
    rank_at: tuple[int, int] | None = None  # where the rank is in the raw line
    mined: bool = False  # its first line went through the miners (`all_id` / `new_id` are set)
    all_id: int | None = None
    new_id: int | None = None
    extra: int = 0  # lines counted without being mined
    ranks: set[bytes] = field(default_factory=set)  # their ranks


class RunTemplates:
    """A pipeline watcher: mines every record of one run; with a reference, keeps what is new to it."""

    def __init__(self, timeline: Timeline, reference: TemplateMiner | Callable[[], TemplateMiner] | None = None,
                 keep_all: bool = True) -> None:
        """`reference`: the miner to tell new lines by, or a function that gives it once it is ready.

        With a function, the lines to test are kept (in order, at most MAX_PENDING) and tested when
        it is called: when they reach that bound, or at `settle`. The result is the same.
        """
        self.timeline = timeline
        self.reference = reference if isinstance(reference, TemplateMiner) else None
        self._awaited = reference if callable(reference) else None
        self.keep_all = keep_all  # False: only the lines new to the reference are mined (--baseline)
        self.kinds = Kinds()
        self.restarts = timeline.restarts
        args = phase_index([s for s in timeline.specs if s.name == RESTART_PHASE])  # what a new start's arguments hold
        self._args_always = bool(args.always)
        self._args_literals = tuple(tuple(lit.encode() for lit in lits) for lits in args.literals)
        self._block: list[bytes] = []  # the shapes of the block being fed, its first line after `_base`
        self._fed: set[int] = set()  # the lines of the block `pick` has fed (it counted the others)
        self._base = 0
        self._reset()

    def _reset(self) -> None:
        self.all = Templates()
        self.new = Templates(max_clusters=5_000)
        self._shapes: dict[bytes, _Shape] = {}
        # records mined before the reference is known, in order, each with the shape it stands for
        self._pending: list[tuple[Record, str, str, str, int | None, _Shape | None]] = []

    def event(self, event: Event) -> None:
        pass

    def revise(self, diagnoses: list[Diagnosis], facts: dict[str, Any]) -> list[Diagnosis]:  # noqa: ARG002 - the Watcher protocol's signature
        return diagnoses

    def record(self, rec: Record, phase: str) -> None:
        if self.timeline.restarts != self.restarts:
            self.restarts = self.timeline.restarts
            self._reset()  # a new start: compare the last one, as the report does
        kind = self.kinds(rec)
        i = rec.line - self._base - 1
        shape = self._block[i] if 0 <= i < len(self._block) else None
        if shape is not None and i not in self._fed:
            return  # the scanner fed a line `pick` counted
        known = self._shapes.get(shape) if shape is not None else None
        if known is not None and known.mined:
            self._count(known, rec.rank)
            return
        msg = rec.message
        if skipped(msg):
            return
        masked = mask(msg)
        chain = self.kinds.chain
        all_id = self.all.add(rec, masked, phase, kind, chain) if self.keep_all else None
        if known is not None and known.countable:
            known.mined, known.all_id = True, all_id
        else:
            known = None
        if self._awaited is not None:
            self._pending.append((rec, masked, phase, kind, chain, known))
            if len(self._pending) >= MAX_PENDING:
                self._resolve()
        else:
            self._new(rec, masked, phase, kind, chain, known)

    def _new(self, rec: Record, masked: str, phase: str, kind: str, chain: int | None, shape: _Shape | None) -> None:
        """Mine the record among the new lines when it fits no reference template."""
        new_id = None
        if self.reference is not None and self.reference.match_masked(masked) is None:
            new_id = self.new.add(rec, masked, phase, kind, chain)
        if shape is not None:
            shape.new_id = new_id

    def _resolve(self) -> None:
        """Wait for the reference, and test the records kept meanwhile against it."""
        if self._awaited is None:
            return
        self.reference, self._awaited = self._awaited(), None
        pending, self._pending = self._pending, []
        for item in pending:
            self._new(*item)

    def _count(self, shape: _Shape, rank: str | None) -> None:
        shape.extra += 1
        if rank:
            shape.ranks.add(rank.encode())

    # -- the block scanner's hook ------------------------------------------------------------
    def pick(self, block: bytes, lines_before: int, candidates: list[int]) -> list[int]:
        """The offsets of the lines of `block` (whole lines) that must be fed; the others are counted here.

        `candidates`: where the lines the scanner feeds anyway start (a new start's arguments among them).
        The block's lines are split, counted and selected in C; Python loops over shapes, fed lines and
        (to collect their ranks) the lines of ranked shapes.
        """
        shapes = block.translate(_ZERO_DIGITS).split(b"\n")
        shapes.pop()  # after the last newline
        n = len(shapes)
        line_at = list(accumulate(map(_PLUS_ONE, map(len, shapes)), initial=0))  # where line i starts
        self._block, self._base = shapes, lines_before
        limit = self._restart_line(block, candidates, n)
        fed = self._fed = set(range(limit, n))  # a new start may begin there: all fed
        fed.add(n - 1)  # (the next block may begin with its continuation)
        fed.update(_continued(block))  # the line a journal continuation follows (the normalizer joins them)
        head = shapes[:limit]
        counts = Counter(head)
        known = self._shapes
        new = [shape for shape in counts if shape not in known]
        if new:
            first = dict(zip(reversed(head), range(limit - 1, -1, -1), strict=True)) if len(new) > 8 else None
            for shape in new:
                i = first[shape] if first is not None else head.index(shape)
                known[shape] = _probe(block[line_at[i] : line_at[i + 1] - 1], shape)
                fed.add(i)  # the first line of a shape is fed
        whole = {shape for shape in counts if not known[shape].countable}  # shapes whose lines are all fed
        if whole:
            fed.update(compress(range(limit), map(whole.__contains__, head)))
        for i in fed:
            if i < limit:
                counts[head[i]] -= 1
        ranked: dict[bytes, tuple[set[bytes], int, int]] = {}  # shape -> its ranks, where they are in a line
        for shape, k in counts.items():
            s = known[shape]
            if k > 0 and s.countable:
                s.extra += k
                if s.rank_at is not None:
                    ranked[shape] = (s.ranks, *s.rank_at)
        if ranked:  # (a chain of maps is no faster: each rank is a new slice either way)
            for x, o in zip(head, line_at, strict=False):  # (a fed line's rank is added again: a set)
                r = ranked.get(x)
                if r is not None:
                    r[0].add(block[o + r[1] : o + r[2]])
        return [line_at[i] for i in sorted(fed)]

    def _restart_line(self, block: bytes, candidates: list[int], n: int) -> int:
        """The line of `block` where a new start may begin (its arguments line); `n`, its line count, when none."""
        if self._args_always:
            return 0
        cs, ci = self._args_literals
        skip = 0 if self.timeline.phases() or self.timeline.restarts else 1  # the first start's own arguments
        for o in candidates:
            line = block[o : block.find(b"\n", o)]
            low = line.lower() if ci else b""
            if any(lit in line for lit in cs) or any(lit in low for lit in ci):
                if not skip:
                    return block.count(b"\n", 0, o)
                skip -= 1
        return n

    def settle(self) -> None:
        """Put the lines counted by shape on their templates (call once the log is read)."""
        self._resolve()
        for s in self._shapes.values():
            if s.mined and s.extra:
                ranks = {r.decode("utf-8", "replace") for r in s.ranks}
                if s.all_id is not None:
                    self.all.count(s.all_id, s.extra, ranks)
                if s.new_id is not None:
                    self.new.count(s.new_id, s.extra, ranks)
                s.extra = 0
                s.ranks = set()


def _continued(block: bytes, depth: int = 16) -> list[int]:
    """The lines of `block` followed by one that begins with `depth` blanks or more (a journal entry's continuation).

    Line numbers from 0; the first line stands for itself when it is the continuation.
    """
    run = b" " * depth
    out = []
    line, counted = 0, 0  # the line number of offset `counted`
    i = block.find(run)  # a run of blanks is rare and found with long skips; then its line is looked at
    while i >= 0:
        j = i
        while j and block[j - 1] == 32:
            j -= 1
        if not j or block[j - 1] == 10:
            line += block.count(b"\n", counted, j)
            counted = j
            out.append(max(0, line - 1))
        nl = block.find(b"\n", i)
        i = block.find(run, nl) if nl >= 0 else -1
    return out


def _probe(raw: bytes, shape: bytes) -> _Shape:
    """Whether every line of this shape gives the same masked message, read from one of them."""
    if shape[:1] in (b" ", b"\t") or b"0x" in shape:  # a continuation; or mask's literal '0x'
        return _Shape(False)
    text = raw.decode("utf-8", "replace")
    recs = Normalizer().feed(1, text)
    if len(recs) != 1:
        return _Shape(False)
    rec = recs[0]
    if skipped(rec.message):
        return _Shape(True)
    if Kinds()(rec) not in PLAIN or _DIGIT.search(mask(rec.message)):
        return _Shape(False)  # a digit the masks keep would tell two lines of this shape apart
    if not rec.rank:
        return _Shape(True)
    at = raw.find(rec.rank.encode())
    if at < 0:
        return _Shape(False)
    return _Shape(True, (at, at + len(rec.rank.encode())))


class Observing:
    """The fallback that only watches: a `RunTemplates` mines the lines of the run."""

    reading = Reading(pick=True)  # the scanner's lines, and those `RunTemplates.pick` wants

    def __init__(self, reference: TemplateMiner | Callable[[], TemplateMiner] | None = None,
                 keep_all: bool = True) -> None:
        self.reference = reference
        self.keep_all = keep_all

    def watch(self, timeline: Timeline) -> RunTemplates:
        return RunTemplates(timeline, self.reference, self.keep_all)
