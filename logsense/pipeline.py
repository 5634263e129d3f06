"""The whole analysis as a push-style object: feed records, get updates; finish() gives the report.

No I/O here: analyze, tail, check and notebooks all drive the same Pipeline (built with its
fallbacks by `logsense.analysis.analysis_pipeline`).

The verdict is decided apart from the cause rules: a root rule, or a fatal signal (a rule
with `role: fatal`, rules/common/fatal.yaml) the startup did not survive, means `failed`;
otherwise the log reached ready (`ready`) or ends before it (`incomplete`). A failure that no
root rule names is `unknown`, and a `Fallback` (the classifier, the --baseline novelty check)
may then name it or add what it knows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from logsense.engine import Matcher, Ranker
from logsense.facts import Facts
from logsense.framing import Framer
from logsense.model import (
    UNKNOWN,
    Diagnosis,
    Event,
    Match,
    Record,
    Report,
    Role,
    Status,
    Update,
    UpdateKind,
    Value,
    _set,
)
from logsense.normalize import Normalizer
from logsense.rules import RuleSet
from logsense.timeline import Timeline

Literals = tuple[tuple[str, ...], tuple[str, ...]]  # (case-sensitive, case-blind)


class Reading(Value):
    """What a fallback must be fed: every line, or the block scanner's picks plus its literals and the last lines."""

    __slots__ = ("every_line", "literals", "tail", "pick")
    every_line: bool
    literals: Literals
    tail: int
    pick: bool  # its watcher's `pick` (a `scan.Pick`) names more lines of each block to feed

    def __init__(self, every_line: bool = False, literals: Literals = ((), ()), tail: int = 0,
                 pick: bool = False) -> None:
        _set(self, "every_line", every_line)
        _set(self, "literals", literals)
        _set(self, "tail", tail)
        _set(self, "pick", pick)


class Watcher(Protocol):
    """A fallback's view of one run: it sees what is fed, then may revise the diagnoses at the end."""

    def record(self, rec: Record, phase: str) -> None: ...

    def event(self, event: Event) -> None: ...

    def revise(self, diagnoses: list[Diagnosis], facts: dict[str, Any]) -> list[Diagnosis]: ...


class Fallback(Protocol):
    """What runs when no rule knows the cause (the classifier, the --baseline novelty check).

    `watch` is called once per run, before anything is fed; `revise` on its watcher only for a
    log whose verdict is `failed` with cause unknown, or that did not fail (then a root it
    returns is dropped: a fallback names causes, it does not decide that a startup failed).
    """

    reading: Reading

    def watch(self, timeline: Timeline) -> Watcher: ...


class Pipeline:
    def __init__(self, rules: RuleSet, fallback: Fallback | None = None,
                 on_match: Callable[[Match], None] | None = None) -> None:
        """`on_match` sees every rule match, also those the report leaves out (the example runner)."""
        self.rules = rules
        self.normalizer = Normalizer()
        self.framer = Framer()
        self.timeline = Timeline(rules.phases, rules.phase_index)
        self.facts = Facts()
        self.matcher = Matcher(rules)
        self.timeline.problems = self.matcher.problems  # a phase marker that times out is reported as a rule's
        self.ranker = Ranker(rules)
        self.lines = 0
        self._restarts = 0
        self.reading = fallback.reading if fallback is not None else Reading()
        self.watcher: Watcher | None = fallback.watch(self.timeline) if fallback is not None else None
        self.on_match = on_match

    def feed_line(self, line_no: int, raw: str) -> list[Update]:
        """Normalize one raw line and feed what it yields."""
        self.lines = max(self.lines, line_no)
        out: list[Update] = []
        for rec in self.normalizer.feed(line_no, raw):
            out.extend(self.feed(rec))
        return out

    def feed(self, rec: Record) -> list[Update]:
        out: list[Update] = []
        self.lines = max(self.lines, rec.line)
        entered, progress = self.timeline.feed(rec)
        if self.timeline.restarts != self._restarts:
            out.extend(self.flush())  # what the previous startup left open is its own, not the new one's
            self._restarts = self.timeline.restarts
            self.ranker.clear()
            self.facts = Facts()
        if entered:
            kind = UpdateKind.READY if self.timeline.ready and self.timeline.is_ready_phase(entered) else UpdateKind.PHASE
            if kind is UpdateKind.READY:
                out.extend(self.flush())  # what is still open at the ready line happened before it
                self.ranker.survived()  # fatal-looking lines and symptoms before ready were not fatal
            elif self.timeline.is_stop_phase(entered):
                out.extend(self.flush())  # what is still open at the stop happened before it, and counts
            out.append(Update(kind, phase=entered, line=rec.line, time=rec.time))
        if progress:
            out.append(Update(UpdateKind.PROGRESS, phase=self.timeline.current, progress=progress, line=rec.line))
        self.facts.feed(rec)
        if self.watcher is not None:
            self.watcher.record(rec, self.timeline.current)
        for event in self.framer.feed(rec, self.timeline.current):
            out.extend(self._event(event))
        return out

    def begin_at(self, line_no: int, server: str | None, year: str | None) -> None:
        """Lines before `line_no` were earlier startups', passed over: the timeline keeps what it had read of them."""
        self.lines = max(self.lines, line_no - 1)
        self.timeline.server = server
        self.timeline.year = year

    def passed(self, line_no: int) -> None:
        """Lines up to `line_no` were read and passed over: none holds a literal any stage needs."""
        self.lines = max(self.lines, line_no)

    def flush(self) -> list[Update]:
        """Close open events (end of input, or a quiet stream while following)."""
        out: list[Update] = []
        for event in self.framer.flush():
            out.extend(self._event(event))
        return out

    def _event(self, event: Event) -> list[Update]:
        if self.watcher is not None:
            self.watcher.event(event)
        if self.timeline.is_stop_phase(event.phase):
            return []  # a ready server was stopped: children killed and cleanup errors are the stop's doing
        out = []
        for m in self.matcher.match(event):
            if m.role is Role.FATAL and self.timeline.ready and not self._counts_once_ready(m.rule_id):
                continue  # a request's traceback the ready server logged and survived
            if self.on_match is not None:
                self.on_match(m)
            if self.ranker.add(m):
                d = self.ranker.current(m.cause, self.facts.snapshot())
                if d is not None:
                    out.append(Update(UpdateKind.DIAGNOSIS, phase=event.phase, diagnosis=d, line=m.event.first_line))
        return out

    def _counts_once_ready(self, rule_id: str) -> bool:
        rule = self.rules.get(rule_id)
        return rule is None or rule.spec.once_ready

    @property
    def failed(self) -> bool:
        """The verdict so far: a root cause or a fatal signal the startup has not survived."""
        return self.ranker.failed

    def finish(self, source: str = "<input>") -> Report:
        self.flush()
        facts = self.facts.snapshot()
        diagnoses = self.ranker.diagnoses(facts)
        failed = any(d.root for d in diagnoses)
        if self.watcher is not None and (not failed or diagnoses[0].cause == UNKNOWN):
            revised = self.watcher.revise(diagnoses, facts)
            if any(d.root for d in revised) == failed:
                diagnoses = revised
            elif not failed:  # a fallback may name a failure, never decide that a startup failed
                diagnoses = [d for d in revised if not d.root]
        if failed:
            status = Status.FAILED
        else:
            status = Status.READY if self.timeline.ready else Status.INCOMPLETE
        root = next((d for d in diagnoses if d.root), None)
        return Report(
            source=source,
            status=status,
            phase=root.phase if root else self.timeline.current,
            phases=self.timeline.phases(),
            diagnoses=tuple(diagnoses),
            facts=facts,
            lines=self.lines,
        )


def run(lines: Iterable[str | tuple[int, str]], rules: RuleSet, source: str = "<input>") -> Report:
    """Feed whole lines (text, or (line number, text)) through a new pipeline."""
    p = Pipeline(rules)
    for i, item in enumerate(lines, 1):
        if isinstance(item, tuple):
            p.feed_line(item[0], item[1])
        else:
            p.feed_line(i, item.rstrip("\n"))
    return p.finish(source)

