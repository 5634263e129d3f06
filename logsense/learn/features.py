"""What the classifier reads of a log: a bounded digest of its error-ish events, as masked text.

Pure Python on purpose: the pipeline feeds every event into a `Digest` while a classifier is
set, and the prediction path must not pay for numpy or scikit-learn. Training builds its
documents with the same `Digest` (through the real Pipeline), so what is learned and what is
predicted are the same text, masked the same way.
"""

from __future__ import annotations

import re
from collections import deque
from functools import lru_cache
from typing import Any

from logsense import re_cache
from logsense.memo import text_memo
from logsense.model import Event, EventKind, Record, Value, _set
from logsense.pipeline import Reading
from logsense.servers import SERVERS

FEATURE_VERSION = 2  # 2: the server (sglang, vllm) as a token. Bump when the document text changes: a model trained on another version is stale
MAX_ERRORS = 40  # distinct error-ish events kept (the most recent ones)
MAX_SHAPE_LINES = 4
MAX_SHAPES = 4096
_DIGITS = str.maketrans("123456789", "000000000")
TAIL_EVENTS = 8  # the last events before the end, whatever they say
MAX_TEXT = 400  # characters of one line that count

_ERRORISH = re_cache.compile(
    r"Error|error|ERROR|Exception|exception|[Ff]ailed|FAILED|[Ff]ailure|[Ff]atal|FATAL|Traceback|"
    r"[Cc]annot |[Cc]an't |[Uu]nable to|[Nn]ot found|No such|[Dd]enied|[Rr]efused|[Tt]imed? ?out|"
    r"[Kk]illed|[Aa]bort|out of memory|OOM|[Ii]nvalid|[Uu]nsupported|not supported|mismatch|"
    r"undefined symbol|[Nn]ot enough|[Ii]llegal|NaN|\binf\b|[Ww]atchdog|SIGQUIT|sigquit|[Ss]egmentation|"
    r"[Dd]eadlock|\b[Hh]ang(?:s|ing)?\b|[Rr]etract|Possible solutions"
)
_LEVEL = re_cache.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b")
# What the block scanner looks for on the model's behalf: a literal for every branch of _ERRORISH
# (a superset: the regex still decides; "inf" and "hang" only with a space, or they would match
# every "info" and "sglang"), so a log is read the same fast way for training and use.
SCAN_LITERALS = (
    ("NaN", "OOM", " inf", "inf ", " hang", "Hang", "SIGQUIT", "CRITICAL"),
    ("error", "exception", "fail", "fatal", "traceback", "cannot ", "can't ", "unable to", "not found",
     "no such", "denied", "refused", "timeout", "timed out", "time out", "killed", "abort", "out of memory",
     "invalid", "unsupported", "not supported", "mismatch", "undefined symbol", "not enough", "illegal",
     "watchdog", "sigquit", "segmentation", "deadlock", "retract", "possible solutions"),
)
TAIL_LINES = 40  # lines at the end of a log always read (TAIL_EVENTS events come from them)

# Masking: what differs between two logs of the same incident (numbers, paths, addresses, ranks).
_URL = re_cache.compile(r"\b(?:https?|ftp|file|tcp|ws)://\S+")
_IP = re_cache.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\[[0-9a-f:]*::[0-9a-f:]*\](?::\d+)?")
_PATH = re_cache.compile(r"(?:(?<=[\s'\"(=:,\[])|^)(?:~|\.{1,2})?(?:/[\w.@+\-]+)+/?")
_HEX = re_cache.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
_RANK = re_cache.compile(r"\b(TP|DP|PP|EP|CP|ATTN_CP|MOE_DP)\d+\b|\b(rank|gpu|cuda|device)([ =:_]?)\d+\b", re.IGNORECASE)
_NUM = re_cache.compile(r"\d+(?:\.\d+)*")
_BAR = re_cache.compile(r"[\u2580-\u259f\u25a0-\u25ff#]{3,}")  # progress-bar blocks
_SPACE = re_cache.compile(r"\s+")


def mask(text: str) -> str:
    """One line as the classifier sees it: numbers, paths, hex, addresses and ranks replaced."""
    t = text[:MAX_TEXT]
    t = _URL.sub(" URL ", t)
    t = _IP.sub(" ADDR ", t)
    t = _PATH.sub(_path, t)
    t = _HEX.sub("HEX", t)
    t = _RANK.sub(_rank, t)
    t = _NUM.sub("N", t)
    t = _BAR.sub(" BAR ", t)
    return _SPACE.sub(" ", t).strip()


def _path(m: re.Match) -> str:
    # the directories are the machine's; the file name is the code's ("cuda_graph_runner.py", "Python.h")
    parts = [p for p in m.group(0).split("/") if p and p not in (".", "..", "~")]
    return " PATH/" + parts[-1] + " " if parts else " PATH "


def _rank(m: re.Match) -> str:
    if m.group(1):
        return m.group(1).upper() + "n"
    return m.group(2) + m.group(3) + "n"


_NOT_ERRORS = tuple(h for s in SERVERS for h in s.dump_heads)  # flag dumps name every *_timeout


def is_errorish(text: str) -> bool:
    return _may_be_errorish(text) and bool(_ERRORISH.search(text)) and not any(x in text[:64] for x in _NOT_ERRORS)


# _ERRORISH is some forty alternatives, ~25 us a line; every line of a serving log meets it. Its literals,
# case-folded, in one automaton (~2 us) say when it cannot match: a superset, the regex still decides.
_CASED = ("NaN", "OOM", "SIGQUIT", "CRITICAL")
_WORDS = re_cache.compile(r"\binf\b|\b[Hh]ang(?:s|ing)?\b")  # the two branches no plain literal covers


def _may_be_errorish(text: str) -> bool:
    if any(x in text for x in _CASED):
        return True
    if ("inf" in text or "ang" in text) and _WORDS.search(text):
        return True
    return bool(_folded_literals().find_matches_as_indexes(text.lower()))


@lru_cache(maxsize=1)
def _folded_literals() -> Any:
    import ahocorasick_rs

    # "timedout": the one spelling of [Tt]imed? ?out no scan literal holds
    return ahocorasick_rs.AhoCorasick(list(SCAN_LITERALS[1]) + ["timedout"])


def is_level_error(raw: str) -> bool:
    """An ERROR / CRITICAL / FATAL level in the line's prefix or text."""
    return ("ERROR" in raw or "CRITICAL" in raw or "FATAL" in raw) and _LEVEL.search(raw) is not None


# what a log repeats (every rank's warning) is read once: both are pure functions of the text
_errorish = text_memo(is_errorish)
_shape = text_memo(lambda text: text.translate(_DIGITS))


class Note(Value):
    """One error-ish event, reduced to the lines that say what went wrong."""

    __slots__ = ("line", "phase", "kind", "lines", "text")
    line: int
    phase: str
    kind: str
    lines: tuple[tuple[int, str], ...]  # (line number, original text) for evidence
    text: str  # masked, what the model reads

    def __init__(self, line: int, phase: str, kind: str, lines: tuple[tuple[int, str], ...], text: str) -> None:
        _set(self, "line", line)
        _set(self, "phase", phase)
        _set(self, "kind", kind)
        _set(self, "lines", lines)
        _set(self, "text", text)


class Doc(Value):
    """A log as the classifier sees it: its text plus the facts the decision needs."""

    __slots__ = ("text", "notes", "ready", "errors_after_ready", "tracebacks", "phase", "server")
    text: str
    notes: list[Note]
    ready: bool
    errors_after_ready: int
    tracebacks: int
    phase: str
    server: str | None  # which server wrote the log (facts.server): the usual fixes are said in its flags

    def __init__(self, text: str, notes: list[Note] | None = None, ready: bool = False, errors_after_ready: int = 0,
                 tracebacks: int = 0, phase: str = "import", server: str | None = None) -> None:
        _set(self, "text", text)
        _set(self, "notes", notes if notes is not None else [])
        _set(self, "ready", ready)
        _set(self, "errors_after_ready", errors_after_ready)
        _set(self, "tracebacks", tracebacks)
        _set(self, "phase", phase)
        _set(self, "server", server)

    @property
    def failure_signs(self) -> bool:
        return self.errors_after_ready > 0 if self.ready else bool(self.notes)


UNREAD = 256  # events kept as they came until the digest is read, or until there are this many


class Digest:
    """Fed every event of a pipeline; keeps the distinct error-ish events and the last few events.

    Events are read in order when the document is asked for, or once UNREAD of them wait: a log
    that a rule explains never asks, and its events then cost nothing to mask.
    """

    def __init__(self) -> None:
        self.errors: dict[str, Note] = {}  # masked text -> note; insertion order, most recent last
        self.tail: deque[Event] = deque(maxlen=TAIL_EVENTS)
        self.tracebacks = 0
        self._shapes: dict[str, str] = {}  # an event's text with digits as 0 -> its masked text
        self._unread: list[Event] = []

    def add(self, event: Event) -> None:
        self._unread.append(event)
        if len(self._unread) >= UNREAD:
            self._read()

    def _read(self) -> None:
        unread, self._unread = self._unread, []
        for event in unread:
            self._take(event)

    def _take(self, event: Event) -> None:
        if event.kind == EventKind.TRACEBACK:
            self.tracebacks += 1
        elif event.kind == EventKind.LINE:
            rec = event.records[0]
            if not rec.message.strip():
                return
            self.tail.append(event)
            if not (_errorish(rec.message) or is_level_error(rec.raw)):
                return
        if event.kind != "line":
            self.tail.append(event)
        # Masking costs a dozen regex passes; an event that differs from one already seen only in
        # its digits masks the same, so the thousandth "Retract requests" line costs a dict lookup.
        shape = _shape("\n".join(r.message for r in event.records[:MAX_SHAPE_LINES]))
        known = self._shapes.get(shape)
        if known is not None and known in self.errors:
            self.errors[known] = self.errors.pop(known)  # the first occurrence, moved to the end
            return
        note = _note(event)
        if note is None:
            return
        if len(event.records) <= MAX_SHAPE_LINES:
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.pop(next(iter(self._shapes)))
            self._shapes[shape] = note.text
        old = self.errors.pop(note.text, None)
        self.errors[note.text] = old or note  # the first occurrence, moved to the end
        if len(self.errors) > MAX_ERRORS:
            self.errors.pop(next(iter(self.errors)))

    def doc(self, phase: str = "import", ready_line: int | None = None, since_line: int = 0,
            server: str | None = None) -> Doc:
        """The document of what was seen from `since_line` on (a restart's new start)."""
        self._read()
        notes = sorted((n for n in self.errors.values() if n.line >= since_line), key=lambda n: n.line)
        tail: list[Note] = []
        if not notes:  # nothing error-ish (a hang, a cut log): the last events are all there is to read
            tail = [n for n in (_note(e) for e in self.tail if e.first_line >= since_line) if n is not None]
        after = sum(1 for n in notes if ready_line is not None and n.line > ready_line)
        return build_doc(notes, tail, phase, ready_line is not None, after, self.tracebacks, server)


def _note(event: Event) -> Note | None:
    lines = _telling_lines(event)
    if not lines:
        return None
    text = " \n".join(mask(r.message) for r in lines)
    return Note(event.first_line, event.phase, event.kind, tuple((r.line, r.message.strip()[:500]) for r in lines),
                text)


class DigestWatch:
    """A pipeline watcher that keeps the classifier's digest of one run and revises nothing."""

    def __init__(self, timeline) -> None:
        self.timeline = timeline
        self.digest = Digest()
        self._restarts = 0

    def record(self, rec: Record, phase: str) -> None:
        pass

    def event(self, event: Event) -> None:
        tl = self.timeline
        if tl.restarts:
            if tl.restarts != self._restarts:
                # a new start: its document is what it logged, as when the log is read from that start on
                self._restarts = tl.restarts
                self.digest = Digest()
            start = tl.start_line
            if start is not None and event.first_line < start:
                return  # the earlier start's, closed at the restart
        self.digest.add(event)

    def revise(self, diagnoses: list, facts: dict[str, Any]) -> list:  # noqa: ARG002 - the Watcher protocol's signature
        return diagnoses

    def doc(self, facts: dict[str, Any]) -> Doc:
        """The document of what was seen (after the pipeline's flush); `facts` name the server."""
        tl = self.timeline
        since = (tl.start_line or 0) if tl.restarts else 0
        server = facts.get("server")
        return self.digest.doc(tl.current, tl.ready_line if tl.ready else None, since,
                               server if isinstance(server, str) else None)


class DocReader:
    """The pipeline fallback that only reads: what training feeds a log through (see `Classifier`)."""

    reading = Reading(every_line=False, literals=SCAN_LITERALS, tail=TAIL_LINES)

    def watch(self, timeline) -> DigestWatch:
        return DigestWatch(timeline)


def _reader_pipeline(phases):
    from logsense.pipeline import Pipeline

    p = Pipeline(phases if phases is not None else phase_only_rules(), fallback=DocReader())
    return p, p.watcher


def doc_of_stream(fp, name: str, phases=None) -> Doc:
    """The document of a recorded log, read with the block scanner (error-ish lines and the end), through
    the Pipeline with no rules (so it does not depend on which rules exist): what training reads."""
    from logsense.scan import feed_stream

    p, watch = _reader_pipeline(phases)
    feed_stream(fp, p, name, tail=TAIL_LINES)
    p.flush()
    return watch.doc(p.facts.snapshot())


def doc_of_file(path: str, phases=None) -> Doc:
    """The training document of a log file (a corpus incident)."""
    from logsense.sources.recorded import open_recorded

    fp, name = open_recorded(str(path))
    try:
        return doc_of_stream(fp, name, phases)
    finally:
        fp.close()


_PHASE_ONLY = None


def phase_only_rules():
    """The bundled phase markers without any rule."""
    global _PHASE_ONLY
    if _PHASE_ONLY is None:
        from logsense.rules import RuleSet, load_rules

        rs = load_rules([], None)
        _PHASE_ONLY = RuleSet([], rs.phases, rs.sources)
    return _PHASE_ONLY


def build_doc(notes: list[Note], tail: list[Note], phase: str, ready: bool, errors_after_ready: int,
              tracebacks: int, server: str | None = None) -> Doc:
    meta = [f"zzphase{phase.replace('_', '')}", "zzready" if ready else "zznotready"]
    if server:
        # vLLM's logs are compared with vLLM's: the same words can mean another cause (and fix) there
        meta.append("zzserver" + "".join(ch for ch in server.lower() if ch.isalnum())[:16])
    if tracebacks:
        meta.append("zztraceback")
    if ready and errors_after_ready:
        meta.append("zzerrorsafterready")
    if not notes:
        meta.append("zznoerrors")
    body = [n.text for n in notes] + [n.text for n in tail]
    text = " ".join(meta) + "\n" + "\n".join(body)
    return Doc(text, notes, ready, errors_after_ready, tracebacks, phase, server)


def _telling_lines(event: Event) -> list[Record]:
    """The lines of an event that say what happened: a traceback's exception lines, its message
    tail and its last frames; a compiler error's error lines; a plain line itself."""
    recs = event.records
    if event.kind == EventKind.LINE:
        return [recs[0]] if recs[0].message.strip() else []
    if event.kind == EventKind.COMPILE:
        errs = [r for r in recs if is_errorish(r.message)]
        return (errs or list(recs[:1]))[:6]
    from logsense.framing import error_lines, frame_lines

    exc = error_lines(event)
    out: list[Record] = []
    out.extend(frame_lines(event)[-2:])
    out.extend(exc)
    if exc:
        last = exc[-1].line
        out.extend([r for r in recs if r.line > last and r.message.strip()][:4])
    first: dict[int, Record] = {}  # a line that is both a frame and an exception line is kept once
    for r in sorted(out, key=lambda r: r.line):
        first.setdefault(r.line, r)
    return list(first.values())


# --- analyzers: the same functions at training (given to scikit-learn) and at prediction ---

_WORD = re_cache.compile(r"(?u)\b\w\w+\b")


def words(text: str) -> list[str]:
    """Word unigrams and bigrams, lower-cased (meta tokens such as `zzready` included)."""
    toks = _WORD.findall(text.lower())
    return toks + [a + " " + b for a, b in zip(toks, toks[1:], strict=False)]


def chars(text: str, lo: int = 3, hi: int = 5) -> list[str]:
    """Character n-grams inside word boundaries (scikit-learn's char_wb), meta tokens left out."""
    out: list[str] = []
    body = text.split("\n", 1)[1] if "\n" in text else ""
    for w in body.lower().split():
        w = " " + w + " "
        n_w = len(w)
        for n in range(lo, hi + 1):
            if n_w < n:
                if n == lo:
                    out.append(w)
                break
            out.extend(w[i : i + n] for i in range(n_w - n + 1))
    return out


ANALYZERS = {"word": words, "char": chars}
