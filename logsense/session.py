"""The live decision of `logsense tail`, with no I/O: items and a clock in, notes out.

A `Session` follows startups one after another. Each startup runs through its own analysis
pipeline (the same one `analyze` builds), so the verdict said when a startup is concluded is
the one `analyze` gives on the same lines. A new startup begins at systemd's start of the unit,
at a new invocation id, or at a new `server_args` line after the weights were loading.

With --until-ready the outcome is decided only when the input is caught up (the source had
nothing more to give at that moment): a startup the input already supersedes never decides,
so the same input always gives the same exit code. The startup being followed when the input
is caught up decides: ready (0), failed or stopped (1), not ready at --timeout or at the end of
the input (3), ready in the log while its endpoint does not answer (4, with a probe).

The command reads a `Source`, feeds its items, ticks when there is nothing to read, and hands
the notes to a view. Each `Note` names a view method and its arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Protocol

from logsense.errors import ExitCode
from logsense.logtime import YEARLESS, TimesSeen, parse_time, time_to
from logsense.model import Diagnosis, Item, Record, Report, Status, UpdateKind, Value, _set
from logsense.normalize import in_year
from logsense.rules import RuleSet
from logsense.timeline import RESTART_AFTER, RESTART_PHASE

QUIET = 0.5  # seconds without a new line before open events are closed
LINGER = 2.0  # at most this long after a failure for the lines that complete it
SKEW_LIMIT = 12 * 3600  # a log whose times are further than this from the clock is not live
NOTED_MAX = 1 << 16  # timed records a startup keeps for `repeats`; a longer one is never repeated


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...


class Outcome(str, Enum):
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"
    INCOMPLETE = "incomplete"
    NOT_ANSWERING = "not-answering"  # the log says ready; the endpoint does not answer


EXIT = {Outcome.READY: int(ExitCode.OK), Outcome.FAILED: int(ExitCode.FAILURE), Outcome.STOPPED: int(ExitCode.FAILURE),
        Outcome.INCOMPLETE: int(ExitCode.TIMEOUT), Outcome.NOT_ANSWERING: int(ExitCode.NOT_ANSWERING)}


class Passable(Protocol):
    """Lines a source read that hold nothing any stage needs (`sources.stream.Gap`): read only when they must be."""

    first_line: int
    last_line: int

    def items(self, from_line: int | None = None) -> Iterator[Item]: ...

    def last_dated(self, from_line: int, to_line: int) -> Record | None: ...


class Note(Value):
    """One thing for the view to show: `kind` is the view method, `fields` its keyword arguments."""

    __slots__ = ("kind", "fields")
    kind: str
    fields: dict[str, Any]

    def __init__(self, kind: str, fields: dict[str, Any] | None = None) -> None:
        _set(self, "kind", kind)
        _set(self, "fields", fields if fields is not None else {})


class Startup:
    """One startup attempt: its pipeline and what was shown of it."""

    __slots__ = ("pipeline", "index", "first_line", "first_epoch", "started_at", "phase", "phase_epoch", "progress",
                 "ready_since", "stopped", "failed_at", "failed_epoch", "last_epoch", "lead", "lead_rule", "report",
                 "outcome", "verdict", "times", "noted", "ready_at", "failed_noted", "year_moved")

    def __init__(self, pipeline: Any, index: int) -> None:
        self.pipeline = pipeline
        self.index = index
        self.first_line: int | None = None
        self.first_epoch: float | None = None  # the log's time of its first timed record
        self.started_at: str | None = None
        self.phase = "import"
        self.phase_epoch: float | None = None
        self.progress: tuple[int, int] | None = None
        self.ready_since: float | None = None  # seconds from start to ready, on the log's clock
        self.stopped: str | None = None
        self.failed_at: float | None = None  # monotonic time the failure was first seen
        self.failed_epoch: float | None = None  # the log's time then
        self.last_epoch: float | None = None  # the log's latest time in this startup
        self.lead: tuple[int, float] | None = None  # (priority, confidence) of the root shown in full
        self.lead_rule: tuple[str, str | None] | None = None  # its (cause, rule)
        self.report: Report | None = None
        self.outcome: Outcome | None = None
        self.verdict: Verdict | None = None
        self.times: TimesSeen[str] = TimesSeen()  # the log's time at each line read (where it changes)
        # kept for `repeats` only: (line, time) of each timed record read, in order (None: not kept, or too many);
        # the READY update's, and the last one read when the failure was seen; whether the log's year changed
        self.noted: list[tuple[int, str]] | None = None
        self.ready_at: tuple[int, str | None] | None = None
        self.failed_noted: tuple[int, str] | None = None
        self.year_moved = False


class Verdict(Value):
    """How a startup ended, for `history` and the end of `tail`."""

    __slots__ = ("index", "outcome", "report", "started_at", "first_line", "seconds")
    index: int
    outcome: Outcome
    report: Report
    started_at: str | None
    first_line: int | None
    seconds: float | None  # from its first timed line to ready or to the failure

    def __init__(self, index: int, outcome: Outcome, report: Report, started_at: str | None, first_line: int | None,
                 seconds: float | None) -> None:
        _set(self, "index", index)
        _set(self, "outcome", outcome)
        _set(self, "report", report)
        _set(self, "started_at", started_at)
        _set(self, "first_line", first_line)
        _set(self, "seconds", seconds)


class Session:
    """Follows the startups in a stream of items; decides, with --until-ready, when and how to stop."""

    def __init__(
        self,
        rules: RuleSet,
        new_pipeline: Callable[[], Any],
        clock: Clock,
        *,
        until_ready: bool = False,
        probe: bool = False,
        deadline: float | None = None,
        utc_times: bool = False,
        source_name: str = "<tail>",
        reported: set[str] | None = None,
    ) -> None:
        """`deadline` is in seconds from now; `utc_times` when the log's naive times are UTC (journal)."""
        self.rules = rules
        self.new_pipeline = new_pipeline
        self.clock = clock
        self.until_ready = until_ready
        self.probe = probe
        self.utc_times = utc_times
        self.source_name = source_name
        self.began = clock.monotonic()
        self.deadline = None if deadline is None else self.began + deadline
        self.reported: set[str] = set(reported or ())  # what was said already (kept by --resume)
        self.verdicts: list[Verdict] = []
        self.code: int | None = None
        self.quiet_since = self.began
        self.skew = 0.0
        self.silent = False  # replaying up to a --resume position: rebuild, show nothing
        self.awaiting_probe = False
        # every server's args markers (SGLang's and vLLM's are separate specs of the same phase)
        self._args_markers = [m for p in rules.phases if p.name == RESTART_PHASE for m in p.markers]
        self.keep_times = False  # each startup keeps the lines its times were read from (`Startup.noted`)
        self.startup = self._startup(0)
        self._last_run: str | None = None
        self._run_unknown = False  # the current startup began on an entry without the run's id
        self._last_line = 0
        self._year: int | None = None  # the latest year the log named
        self._held: Passable | None = None  # lines passed over, waiting for the item after them

    # -- input ---------------------------------------------------------------------------------

    def feed(self, item: Item | Passable) -> list[Note]:
        """One item read from the source, or lines it passed over."""
        if not isinstance(item, Item):
            return self._hold(item)
        out: list[Note] = self._release(item) if self._held is not None else []
        now = self.clock.monotonic()
        self.quiet_since = now
        s = self.startup
        begun = s.first_line is not None or s.stopped is not None
        if item.run and self._last_run and item.run != self._last_run and item.life != "stop" \
                and not self._run_unknown:
            self._next_startup(out, "started", item.text or "a new invocation of the unit", item.at)
        elif item.life == "start" and begun and (s.stopped or s.pipeline.timeline.current != "import"):
            self._next_startup(out, "started", item.text, item.at)
            # systemd's word without the run's id (some versions write none): the id the service's own lines
            # bring next is this startup's, not another one's
            self._run_unknown = not item.run
        if item.run:
            self._last_run = item.run
            self._run_unknown = False
        if item.life == "stop":
            self._updates(out, self.startup.pipeline.flush())  # the process is gone: what it wrote is complete
        for rec in item.records:
            if self._restarts(rec):
                self._next_startup(out, "restart", rec.message, rec.time)
            self._record(out, rec)
        if item.life == "stop" and self.startup.stopped is None:
            self.startup.stopped = item.text or "stopped"
            self._say(out, "unit_event", kind="stop", text=self.startup.stopped, at=item.at)
        return out

    def _hold(self, gap: Passable) -> list[Note]:
        """Lines that hold no literal wait for the next item: if it begins a new startup, this one's last lines
        are read first (analyze reads a log's last lines whatever they hold)."""
        out = self._release()
        self._held = gap
        return out

    def _release(self, before: Item | None = None) -> list[Note]:
        gap, self._held = self._held, None
        if gap is None:
            return []
        ends = before is not None and self._begins_another(before)
        return self._pass(gap, self.startup.pipeline.reading.tail if ends else 0)

    def _pass(self, gap: Passable, tail: int) -> list[Note]:
        """Read a gap's lines while an event is open or the startup has no time yet (what feeding every line
        would give) and its last `tail` lines; pass over the others but for the last time among them."""
        out: list[Note] = []
        line = gap.first_line
        items = gap.items()  # each made only when it is taken: the source's normalizer sees what is read
        s = self.startup
        while s.pipeline.framer.busy or s.first_epoch is None:
            item = next(items, None)
            if item is None:
                return out
            out.extend(self.feed(item))
            line += 1
            s = self.startup
        keep = max(gap.last_line - tail + 1, line)
        if keep > line:
            rec = gap.last_dated(line, keep - 1)
            if rec is not None:
                self._note_time(s, rec)
            self._last_line = max(self._last_line, keep - 1)
            s.pipeline.passed(keep - 1)
        if keep <= gap.last_line:
            for item in gap.items(keep):
                out.extend(self.feed(item))
        return out

    def _begins_another(self, item: Item) -> bool:
        """Whether `item` begins a new startup (the tests of `feed`, made before it is fed)."""
        s = self.startup
        begun = s.first_line is not None or s.stopped is not None
        if item.run and self._last_run and item.run != self._last_run and item.life != "stop" \
                and not self._run_unknown:
            return True
        if item.life == "start" and begun and (s.stopped or s.pipeline.timeline.current != "import"):
            return True
        return any(self._restarts(rec) for rec in item.records)

    def tick(self, caught_up: bool, ended: bool = False, idle: float | None = None) -> list[Note]:
        """Nothing more to read now (`caught_up`), or ever (`ended`): close, decide, or wait.

        `idle`: seconds the source says nothing was added to it (a finished file's age): that much
        of the quiet time has passed already, though the lines were read only now.
        """
        out: list[Note] = self._release()
        if self.code is not None:
            return out
        now = self.clock.monotonic()
        if idle is not None and caught_up:
            self.quiet_since = min(self.quiet_since, now - idle)
        s = self.startup
        if s.pipeline.framer.busy and (ended or now - self.quiet_since >= QUIET):
            self._updates(out, s.pipeline.flush())
        if self.silent:
            return out
        if ended or caught_up:
            self._decide(out, now, ended)
        if self.code is None and self.deadline is not None and now >= self.deadline:
            in_phase = self.log_now() - s.phase_epoch if s.phase_epoch is not None else None
            out.append(Note("timeout", {"after": now - self.began, "phase": s.phase, "in_phase": in_phase}))
            self._end(out, "timeout", EXIT[Outcome.INCOMPLETE], self._finish(out, s))
        return out

    def probed(self, ok: bool, detail: str, final: bool) -> list[Note]:
        """The endpoint's answer; `final` when the probe has no tries left."""
        out: list[Note] = [Note("notice", {"text": f"probe: {detail}"})]
        if self.code is not None or not self.awaiting_probe:
            return out
        if ok:
            self.awaiting_probe = False
            self._end(out, "ready", EXIT[Outcome.READY], self._finish(out, self.startup))
        elif final:
            self.awaiting_probe = False
            self.startup.outcome = Outcome.NOT_ANSWERING
            v = self._conclude(out, self.startup)
            self._end(out, Outcome.NOT_ANSWERING.value, EXIT[Outcome.NOT_ANSWERING], v.report)
        return out

    def interrupt(self, code: int) -> list[Note]:
        """Ctrl-C or SIGTERM: end now, with what is known."""
        out: list[Note] = []
        if self.code is None:
            self._end(out, "interrupted", code, None)
        return out

    def resume_done(self) -> list[Note]:
        """The replay up to a --resume position is over: from here on things are shown."""
        self.silent = False
        s = self.startup
        what = f"resumed at line {self._last_line}, phase {s.phase}"
        if s.stopped:
            what += f"; the unit had stopped: {s.stopped}"
        return [Note("notice", {"text": what})]

    # -- what a status line shows ----------------------------------------------------------------

    def status(self) -> Note:
        s = self.startup
        if s.verdict is not None:  # the unit stopped: nothing runs until it starts again
            return Note("status", {"phase": f"{s.verdict.outcome.value}; waiting for the unit to start again",
                                   "in_phase": None, "since_start": None, "progress": None})
        now = self.log_now()
        in_phase = now - s.phase_epoch if s.phase_epoch is not None else self.clock.monotonic() - self.began
        since = now - s.first_epoch if s.first_epoch is not None else None
        return Note("status", {"phase": s.phase, "in_phase": max(in_phase, 0.0),
                               "since_start": None if since is None else max(since, 0.0), "progress": s.progress})

    def log_now(self) -> float:
        """Now on the log's clock: the wall clock, unless the log's times are far from it (an old log)."""
        now = self.clock.time()
        return now - self.skew if abs(self.skew) > SKEW_LIMIT else now

    # -- startups --------------------------------------------------------------------------------

    def _startup(self, index: int) -> Startup:
        s = Startup(self.new_pipeline(), index)
        if self.keep_times:
            s.noted = []
        return s

    def _restarts(self, rec: Record) -> bool:
        """A new server_args line after the weights began loading: the server started again in this log."""
        if not self.startup.pipeline.timeline.past(RESTART_AFTER):
            return False
        for m in self._args_markers:
            if m.literals and not m.icase and not any(lit in rec.message for lit in m.literals):
                continue
            if m.regex.search(rec.message):
                return True
        return False

    def _next_startup(self, out: list[Note], why: str, text: str, at: str | None) -> None:
        old = self.startup
        if old.verdict is None and (old.first_line is not None or old.stopped):
            self._conclude(out, old)
        self.startup = self._startup(old.index + 1)
        self._say(out, "startup", why=why, text=text, at=at, index=self.startup.index)

    def repeat(self, of: Startup, first_line: int, last_line: int, started_at: str | None,
               seconds: float | None) -> list[Note]:
        """The startup begun on the item just fed repeats `of` (a concluded one) up to `last_line`: it takes `of`'s
        verdict with its own times, and ends where `of` ended (its next startup is told as `of`'s was)."""
        assert of.verdict is not None
        s = self.startup
        clone = Startup(of.pipeline, s.index)
        clone.first_line, clone.started_at, clone.stopped = first_line, started_at, of.stopped
        clone.phase, clone.report, clone.outcome = of.phase, of.report, of.outcome
        clone.verdict = Verdict(s.index, of.verdict.outcome, of.verdict.report, started_at, first_line, seconds)
        self.startup = clone
        self._last_line = max(self._last_line, last_line)
        self.verdicts.append(clone.verdict)
        out: list[Note] = []
        self._say(out, "verdict", report=clone.report, outcome=clone.verdict.outcome.value, seconds=seconds)
        return out

    def _conclude(self, out: list[Note], s: Startup) -> Verdict:
        """The verdict of a startup that is over (a new one began, the input ended, or the run stops)."""
        if s.verdict is not None:
            return s.verdict
        report = self._finish(out, s)
        if s.outcome is None:
            if report.failed:
                s.outcome = Outcome.FAILED
            elif s.stopped:
                s.outcome = Outcome.STOPPED
            elif report.status is Status.READY:
                s.outcome = Outcome.READY
            else:
                s.outcome = Outcome.INCOMPLETE
        root = report.root
        if root is not None and (root.cause, root.rule) != s.lead_rule:
            # the verdict outranks what was shown as it came: it is shown last, in full (unless said already)
            self._diagnosis(out, root, root.evidence[0].line if root.evidence else None, full=True, final=True)
        if s.outcome in (Outcome.READY, Outcome.NOT_ANSWERING):
            seconds = s.ready_since
        else:
            end = s.failed_epoch if s.outcome is Outcome.FAILED and s.failed_epoch is not None else s.last_epoch
            if s.outcome is Outcome.FAILED and root is not None and root.evidence:
                # one clock for every command (stats too): a failure's time is its root cause's first evidence line's
                end = self._in_log_year(log_time(s.times.at(root.evidence[0].line), self.utc_times)) or end
            seconds = time_to(s.first_epoch, end)
        s.verdict = Verdict(s.index, s.outcome, report, s.started_at, s.first_line, seconds)
        self.verdicts.append(s.verdict)
        self._say(out, "verdict", report=report, outcome=s.outcome.value, seconds=seconds)
        return s.verdict

    def _finish(self, out: list[Note], s: Startup) -> Report:
        if s.report is None:
            if s is self.startup:
                self._updates(out, s.pipeline.flush())
            s.report = s.pipeline.finish(self.source_name)
        return s.report

    # -- records -------------------------------------------------------------------------------

    def _record(self, out: list[Note], rec: Record) -> None:
        s = self.startup
        self._last_line = rec.line
        if s.first_line is None:
            s.first_line = rec.line
        self._note_time(s, rec)
        self._updates(out, s.pipeline.feed(rec))

    def _note_time(self, s: Startup, rec: Record) -> None:
        if rec.time:
            epoch = self._epoch(rec.time)
            if epoch is not None:
                if s.first_epoch is None:
                    s.first_epoch = epoch
                    s.started_at = in_year(rec.time, self._year)
                s.last_epoch = epoch
                s.times.note(rec.line, rec.time)
                if s.noted is not None:
                    s.noted.append((rec.line, rec.time))
                    if len(s.noted) > NOTED_MAX:
                        s.noted = None
                self.skew = self.clock.time() - epoch

    def _updates(self, out: list[Note], updates: list) -> None:
        s = self.startup
        for u in updates:
            if u.kind is UpdateKind.DIAGNOSIS and u.diagnosis is not None:
                d = u.diagnosis
                if d.root:
                    self._failed(s)
                self._diagnosis(out, d, u.line, full=d.root)
            elif u.kind in (UpdateKind.PHASE, UpdateKind.READY):
                epoch = self._epoch(u.time)
                s.phase = u.phase or s.phase
                s.phase_epoch = epoch if epoch is not None else self.log_now()
                s.progress = None
                since = epoch - s.first_epoch if epoch is not None and s.first_epoch is not None else None
                self._say(out, "phase", name=s.phase, since_start=since, line=u.line, at=u.time,
                          ready=u.kind is UpdateKind.READY)
                if u.kind is UpdateKind.READY:
                    s.ready_since = since
                    s.ready_at = (u.line, u.time)
                    self._say(out, "ready", phases=s.pipeline.timeline.phases(), total=since)
            elif u.kind is UpdateKind.PROGRESS and u.progress is not None:
                s.progress = u.progress
                self._say(out, "progress", phase=u.phase, done=u.progress[0], total=u.progress[1])
        if getattr(s.pipeline, "failed", False):
            self._failed(s)  # a fatal signal no rule names: the verdict will say it

    def _failed(self, s: Startup) -> None:
        if s.failed_at is None:
            s.failed_at = self.clock.monotonic()
            s.failed_epoch = s.last_epoch
            s.failed_noted = s.noted[-1] if s.noted else None

    def _diagnosis(self, out: list[Note], d: Diagnosis, line: int | None, full: bool, final: bool = False) -> None:
        """A root cause that leads is shown in full; a weaker one, or a symptom, in one line. Each is said
        once (a --resume replay remembers what was said before it)."""
        s = self.startup
        key = f"{s.first_line}:{d.cause}:{d.rule}"  # by the startup's first line: the same when a --resume replays it
        strength = (self._priority(d), d.confidence)
        if full and not final and s.lead is not None and strength <= s.lead:
            full = False
        if full:
            s.lead, s.lead_rule = strength, (d.cause, d.rule)
        if key in self.reported:
            return
        self.reported.add(key)
        # said even while a --resume replays: what the state does not list as said was never said
        out.append(Note("diagnosis" if full else "symptom", {"d": d, "line": line}))

    def _priority(self, d: Diagnosis) -> int:
        rule = self.rules.get(d.rule) if d.rule else None
        return rule.spec.priority if rule is not None else 0

    # -- deciding --------------------------------------------------------------------------------

    def _decide(self, out: list[Note], now: float, ended: bool) -> None:
        s = self.startup
        if s.stopped or s.failed_at is not None:
            # a failure is concluded once the lines that complete it are in: quiet, or LINGER at most
            quiet = now - self.quiet_since >= QUIET and not s.pipeline.framer.busy
            lingered = s.failed_at is not None and now - s.failed_at >= LINGER
            if self.until_ready and (ended or quiet or lingered):
                v = self._conclude(out, s)
                self._end(out, v.outcome.value, EXIT[v.outcome], v.report)
                return
            if s.stopped and quiet and not ended:
                self._conclude(out, s)  # the unit is gone: say how it ended, and wait for its next start
        elif self.until_ready and s.pipeline.timeline.ready:
            if self.probe:
                if not self.awaiting_probe:
                    self.awaiting_probe = True
                    out.append(Note("probe", {}))
                return
            s.outcome = Outcome.READY
            self._end(out, "ready", EXIT[Outcome.READY], self._finish(out, s))
            return
        if ended:
            v = self._conclude(out, s)
            if self.until_ready:
                code = EXIT[v.outcome]
            else:
                code = int(ExitCode.FAILURE if v.outcome in (Outcome.FAILED, Outcome.STOPPED) else ExitCode.OK)
            self._end(out, "input-end", code, v.report)

    def _end(self, out: list[Note], reason: str, code: int, report: Report | None) -> None:
        self.code = code
        out.append(Note("end", {"reason": reason, "code": code, "report": report}))

    def _say(self, out: list[Note], what: str, /, **fields: Any) -> None:
        if not self.silent:
            out.append(Note(what, fields))

    def _epoch(self, t: str | None) -> float | None:
        dt = log_time(t, self.utc_times)
        if dt is not None and dt.year not in (YEARLESS, self._year):
            # the log names its year now (SGLang's own time after journalctl's short lines): what was
            # taken without one is on the same clock
            s = self.startup
            if self._year is None and s.started_at is not None and s.first_epoch is not None:
                first = log_time(s.started_at, self.utc_times)
                if first is not None and first.year == YEARLESS:
                    s.first_epoch = first.replace(year=dt.year).timestamp()
                    s.started_at = in_year(s.started_at, dt.year)
            self._year = dt.year
            self.startup.year_moved = True
        return self._in_log_year(dt)

    @property
    def log_year(self) -> int | None:
        """The latest year the log named (None: none yet)."""
        return self._year

    def epoch_of(self, t: str | None) -> float | None:
        """The epoch of a log time of the year the log is in (`_epoch` without taking a new year from it)."""
        return self._in_log_year(log_time(t, self.utc_times))

    def _in_log_year(self, dt: datetime | None) -> float | None:
        """The epoch of a log time, a year-less one put in the year the log has named (if it has)."""
        if dt is None:
            return None
        if dt.year == YEARLESS and self._year is not None:
            dt = dt.replace(year=self._year)
        return dt.timestamp()

def log_time(t: str | None, utc: bool) -> datetime | None:
    """A log's time (a year-less one, as journalctl's short format writes, reads as year 2000: still good
    for durations, and a clock that far off makes the session use the log's own clock)."""
    dt = parse_time(t)
    if dt is None:
        return None
    if dt.tzinfo is None and utc:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt
