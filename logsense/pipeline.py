"""The whole analysis as a push-style object: feed records, get updates; finish() gives the report.

No I/O here: analyze, tail, check and notebooks all drive the same Pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable

from logsense.engine import Matcher, Ranker
from logsense.facts import Facts
from logsense.framing import Framer
from logsense.model import Event, Record, Report, Status, Update, UpdateKind
from logsense.normalize import Normalizer
from logsense.rules import RuleSet
from logsense.timeline import Timeline


class Pipeline:
    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.normalizer = Normalizer()
        self.framer = Framer()
        self.timeline = Timeline(rules.phases)
        self.facts = Facts()
        self.matcher = Matcher(rules)
        self.ranker = Ranker(rules)
        self.lines = 0
        self._restarts = 0
        self.classifier = None  # set by callers that want a second opinion when no rule knows
        self.digest = None  # the classifier's digest of the events (learn.features.Digest), fed when set
        self.observers: list = []
        # literals (case-sensitive, case-blind) a reader wants beyond the rules' (the classifier's)
        self.extra_literals: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # called as observe(record, phase) for every record fed (diff, --baseline)

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
            kind = UpdateKind.READY if self.timeline.ready and entered == "serving" else UpdateKind.PHASE
            if kind is UpdateKind.READY:
                # errors and symptoms the startup survived were not fatal
                self.ranker.unmatched_errors.clear()
                self.ranker.symptoms.clear()
            out.append(Update(kind, phase=entered, line=rec.line, time=rec.time))
        if progress:
            out.append(Update(UpdateKind.PROGRESS, phase=self.timeline.current, progress=progress, line=rec.line))
        self.facts.feed(rec)
        for observe in self.observers:
            observe(rec, self.timeline.current)
        for event in self.framer.feed(rec, self.timeline.current):
            out.extend(self._event(event))
        return out

    def flush(self) -> list[Update]:
        """Close open events (end of input, or a quiet stream while following)."""
        out: list[Update] = []
        for event in self.framer.flush():
            out.extend(self._event(event))
        return out

    def _event(self, event: Event) -> list[Update]:
        if self.digest is not None:
            self.digest.add(event)
        matches = self.matcher.match(event)
        out = []
        rooted = False
        for m in matches:
            rooted |= m.role.value == "root"
            if self.ranker.add(m):
                facts = self.facts.snapshot()
                ms = self.ranker.allowed(self.ranker.by_cause[m.cause], facts)
                if not ms:
                    continue
                d = self.ranker.diagnose_cause(ms, facts)
                out.append(Update(UpdateKind.DIAGNOSIS, phase=event.phase, diagnosis=d, line=m.event.first_line))
        if event.kind == "traceback" and not rooted:
            self.ranker.unmatched_errors.append(event)
        return out

    def finish(self, source: str = "<input>") -> Report:
        self.flush()
        facts = self.facts.snapshot()
        diagnoses = self.ranker.diagnoses(facts)
        if (not diagnoses or diagnoses[0].cause == "unknown") and self.classifier is not None:
            diagnoses = self.classifier(self, diagnoses, facts)
        if self.timeline.ready:
            # a startup that became ready: only errors after ready count, and an unknown needs symptoms
            diagnoses = [d for d in diagnoses if not (d.cause == "unknown" and not d.explains)]
        root = next((d for d in diagnoses if d.root), None)
        status = Status.FAILED if root else (Status.READY if self.timeline.ready else Status.INCOMPLETE)
        phase = root.phase if root else self.timeline.current
        return Report(
            source=source,
            status=status,
            phase=phase,
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
