"""Records -> Events: a Python traceback (chains included) or a compiler error is one event.

The one traceback reader: `exception_lines`, `frame_lines` and `error_lines` say what a framed
event holds (the engine's evidence, the classifier's digest and diff read them here).

Events are kept per stream (pid, and the SGLang rank on prefixed lines), so eight TP ranks
printing at once do not mix. Lines without a prefix (a traceback's frames) continue the
event that is open for their pid. Every record ends up in exactly one event.
"""

from __future__ import annotations

from logsense import exception_line, re_cache
from logsense.memo import text_memo
from logsense.model import Event, EventKind, Record

MAX_EVENT_LINES = 400
MAX_TAIL_LINES = 40  # lines of exception message after the exception line ("Possible solutions: ...")
MAX_WRAPPED_LINES = 6  # lines a paste may have wrapped one exception's message into

_TRACEBACK = "Traceback (most recent call last):"
# What a line must hold to open a multi-line event (the block scanner looks for these).
FRAMING_LITERALS = (_TRACEBACK, " error: ", "FAILED: ", "error: command '", "In file included from", 'File "')
# A frame line with no traceback open: a paste that lost its "Traceback" header still is one (or its indent).
_FRAME = re_cache.compile(r'^\s*File "[^"]+", line \d+, in ')
# What a paste puts where it cut frames out ("...", "[...]", "…"), and the ^^^ under a frame's code.
_CUT = re_cache.compile(r"^\s*(?:\.{3,}|\[\.\.\.\]|…|\[…\]|[\^~]+)\s*$")
# An exception line where indentation cannot tell it from code: a capitalised (dotted) name, then ": " or nothing.
_EXCEPTION_NAME = re_cache.compile(rf"^{exception_line.NAME}(?::\s|:?$)")
# An exception's line standing alone, as a paste of just the error gives it ("ValueError: To serve at least ...").
_BARE_EXCEPTION = re_cache.compile(rf"^{exception_line.TYPED_NAME}: \S")
_CHAIN = re_cache.compile(
    r"^(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$"
)
_COMPILE_START = re_cache.compile(
    r"^(?:\S+?:\d+:(?:\d+:)? (?:fatal )?error: |FAILED: |error: command '[^']*' failed|"
    r"In file included from \S+:\d+)"
)
_COMPILE_MORE = re_cache.compile(
    r"^(?:\s+\d*\s*\||\s+\^|compilation terminated\.|In file included from |\s+from \S+:\d+|"
    r"\S+?:\d+:(?:\d+:)? (?:fatal error|error|note|warning|In function)|ninja: build stopped|"
    r"\[\d+/\d+\] |\S*(?:gcc|g\+\+|cc|c\+\+|nvcc|clang)\S* .*-[co] |\d+ errors? detected)"
)


def _opens_in(msg: str) -> EventKind | None:
    """The multi-line event a line opens: a traceback (its header, or a frame that lost it), a compiler error."""
    if _TRACEBACK in msg or _FRAME.match(msg):
        return EventKind.TRACEBACK
    if _COMPILE_START.match(msg):
        return EventKind.COMPILE
    return None


_opens = text_memo(_opens_in)


class _Open:
    """An event still being read: its lines so far, and where in a traceback (or compiler error) they are."""

    __slots__ = ("kind", "records", "phase", "state", "tail")

    def __init__(self, kind: EventKind, records: list[Record], phase: str, state: str = "frames") -> None:
        self.kind = kind
        self.records = records
        self.phase = phase
        self.state = state  # frames | exc | gap | chain (tracebacks); body (compile)
        self.tail = 0  # lines of exception message read after the exception line

    @property
    def rank(self) -> str | None:
        return self.records[0].rank


class Framer:
    """Push records in, get completed events out; `flush()` closes whatever is open."""

    def __init__(self) -> None:
        self._open: dict[str | None, _Open] = {}  # by pid
        self._wrapping: str | None = None  # the pid whose lone exception line the last record left open

    @property
    def busy(self) -> bool:
        """True while a multi-line event is open (its next lines are needed)."""
        return bool(self._open)

    def feed(self, rec: Record, phase: str = "import") -> list[Event]:
        out: list[Event] = []
        wrapping, self._wrapping = self._wrapping, None
        w = self._open.get(wrapping) if wrapping is not None else None
        if w is not None and rec.pid is None and not rec.prefixed and rec.time is None:
            # a paste wrapped a prefixed process's exception line: the line after it has no prefix of its own
            if self._continue(w, rec) == "take":
                w.records.append(rec)
                self._wrapping = wrapping
                return out
            out.append(self._close(wrapping))
        cur = self._open.get(rec.pid)
        if cur is not None:
            verdict = self._continue(cur, rec)
            if verdict == "take":
                cur.records.append(rec)
                if len(cur.records) >= MAX_EVENT_LINES:
                    out.append(self._close(rec.pid))
                elif cur.state == "wrapped" and rec.pid is not None:
                    self._wrapping = rec.pid
                return out
            if verdict == "other":
                # another rank's line while this traceback is still in its frames
                out.append(Event(EventKind.LINE, (rec,), phase))
                return out
            out.append(self._close(rec.pid))
        opens = _opens(rec.message)
        if opens is EventKind.TRACEBACK:
            self._open[rec.pid] = _Open(EventKind.TRACEBACK, [rec], phase)
        elif opens is EventKind.COMPILE:
            self._open[rec.pid] = _Open(EventKind.COMPILE, [rec], phase, state="body")
        elif _BARE_EXCEPTION.match(rec.message):
            # its message may go on in the next lines, wrapped by the paste (read joined: wrapped_message)
            self._open[rec.pid] = _Open(EventKind.LINE, [rec], phase, state="wrapped")
            if rec.pid is not None:
                self._wrapping = rec.pid
        else:
            out.append(Event(EventKind.LINE, (rec,), phase))
        return out

    def flush(self) -> list[Event]:
        return [self._close(pid) for pid in list(self._open)]

    def _close(self, pid: str | None) -> Event:
        cur = self._open.pop(pid)
        return Event(cur.kind, tuple(cur.records), cur.phase)

    def _continue(self, cur: _Open, rec: Record) -> str:
        msg = rec.message
        if cur.state == "wrapped":
            # a wrapped line carries no stamp or prefix of its own and starts nothing
            if (rec.prefixed or rec.time is not None or not msg.strip() or len(cur.records) >= MAX_WRAPPED_LINES
                    or _opens(msg) is not None or _BARE_EXCEPTION.match(msg.lstrip()) or _CHAIN.match(msg)):
                return "close"
            return "take"
        if cur.kind is EventKind.COMPILE and _TRACEBACK in msg:
            cur.kind, cur.state = EventKind.TRACEBACK, "frames"  # the build's traceback joins its compiler error
            return "take"
        if rec.prefixed:
            # A new SGLang record. Another rank's line does not end a traceback that is still
            # in its frames; the same rank's (or any line once the exception is out) does.
            if cur.kind is EventKind.TRACEBACK and cur.state == "frames" and rec.rank != cur.rank and cur.rank:
                return "other"
            return "close"
        if cur.kind is EventKind.COMPILE:
            if _COMPILE_MORE.match(msg) or msg.startswith("    "):
                return "take"
            return "close"
        if cur.state == "frames":
            if msg[:1] in (" ", "\t") or msg.startswith(_TRACEBACK) or msg.startswith("[Previous line"):
                return "take"
            if not msg.strip() or _FRAME.match(msg) or _CUT.match(msg):
                return "take"
            if _FRAME.match(cur.records[-1].message) and not _EXCEPTION_NAME.match(msg):
                return "take"  # a frame's code line that lost its indent
            cur.state = "exc"  # the exception line: "ValueError: ..."
            return "take"
        if cur.state == "exc":
            if not msg.strip():
                cur.state = "gap"
                return "take"
            if _CHAIN.match(msg):
                cur.state = "chain"
                return "take"
            if _TRACEBACK in msg:
                cur.state = "frames"
                return "take"
            cur.tail += 1
            if cur.tail > MAX_TAIL_LINES or _COMPILE_START.match(msg):
                return "close"
            return "take"
        if cur.state == "gap":
            if _CHAIN.match(msg):
                cur.state = "chain"
                return "take"
            if _TRACEBACK in msg:
                cur.state = "frames"
                return "take"
            if not msg.strip():
                return "take"
            return "close"
        # chain: a blank line, then the next traceback
        if not msg.strip():
            return "take"
        if _TRACEBACK in msg:
            cur.state = "frames"
            return "take"
        return "close"


# ---------------------------------------------------------------- reading a framed traceback


def exception_lines(event: Event) -> list[Record]:
    """The final exception line of each traceback in an event ('ImportError: ...'), the last two of a chain."""
    if event.kind != EventKind.TRACEBACK:
        return []
    out = []
    recs = event.records
    for i, rec in enumerate(recs):
        msg = rec.message
        if not msg or msg[:1] in " \t" or _TRACEBACK in msg or _FRAME.match(msg) or _CUT.match(msg):
            continue
        prev = recs[i - 1].message if i else ""
        if prev[:1] in (" ", "\t") and is_exception_line(msg):
            out.append(rec)
        elif (_FRAME.match(prev) or _CUT.match(prev) or i > 1 and _FRAME.match(recs[i - 2].message) and not _EXCEPTION_NAME.match(prev)) and \
                _EXCEPTION_NAME.match(msg):
            out.append(rec)  # a traceback whose frames lost their indent
    return out[-2:]


def wrapped_message(event: Event) -> Record | None:
    """The exception's message as one line where the event's lines after the exception line go on with it
    (a paste wrapped it, or the message has lines of its own), at the exception line; None when they do not."""
    recs = event.records
    if event.kind is EventKind.LINE:
        start = 0 if len(recs) > 1 else None
    else:
        exc = exception_lines(event)
        start = next((i for i, r in enumerate(recs) if r is exc[-1]), None) if exc else None
    if start is None:
        return None
    parts = [recs[start].message.rstrip()]
    for rec in recs[start + 1 : start + MAX_WRAPPED_LINES]:
        msg = rec.message.strip()
        if not msg or rec.time is not None or _CHAIN.match(msg) or _TRACEBACK in msg or _FRAME.match(msg):
            break
        parts.append(msg)
    if len(parts) < 2:
        return None
    return recs[start].replace(message=" ".join(parts))


def is_exception_line(msg: str) -> bool:
    """'ValueError: ...', 'torch.OutOfMemoryError: ...': a dotted or capitalised name before the colon."""
    head = msg.split(":", 1)[0]
    return bool(head) and " " not in head.strip() and (head[:1].isupper() or "." in head)


def frame_lines(event: Event) -> list[Record]:
    """The frame lines of a traceback event ('  File "x.py", line 3, in f'), in order."""
    if event.kind != EventKind.TRACEBACK:
        return []
    return [r for r in event.records if r.message.lstrip().startswith('File "')]


def error_lines(event: Event) -> list[Record]:
    """What a failed event says in the end: its exception lines, or its first line."""
    return exception_lines(event) or [event.records[0]]


# Line by line, for readers that classify records as they stream (diff) rather than framed events.
_FRAME_AT = re_cache.compile(r'\s*File "(?P<path>[^"]+)", line \d+, in (?P<func>\S+)')
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception"
_CHAIN_HANDLING = "During handling of the above exception, another exception occurred"


def is_traceback_head(msg: str) -> bool:
    """The line that opens a traceback ('Traceback (most recent call last):', maybe after a message)."""
    return _TRACEBACK[:-1] in msg


def frame_location(msg: str) -> tuple[str, str] | None:
    """(file path, function) of a traceback frame line ('  File "x.py", line 3, in f'), indented or not."""
    m = _FRAME_AT.match(msg)
    return (m["path"], m["func"]) if m else None


def chain_link(msg: str) -> str | None:
    """'cause' or 'handling' for the line that links two tracebacks of a chain, else None."""
    s = msg.lstrip()
    if s.startswith(_CHAIN_CAUSE):
        return "cause"
    if s.startswith(_CHAIN_HANDLING):
        return "handling"
    return None
