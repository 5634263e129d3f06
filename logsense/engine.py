"""Events x rules -> matches -> diagnoses: root causes above symptoms, one diagnosis per cause."""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict

from logsense import anatomy
from logsense import fixes as fixes_mod
from logsense.framing import exception_lines, frame_lines, wrapped_message
from logsense.memo import text_memo
from logsense.model import (
    MEDIUM_SURE,
    UNKNOWN,
    Diagnosis,
    Event,
    EventKind,
    Evidence,
    Match,
    Origin,
    Record,
    Role,
    RuleProblem,
    RuleStatus,
)
from logsense.rules import RuleSet
from logsense.rules.compile import MATCH_TIMEOUT, RULE_BUDGET, CompiledRule, Pattern
from logsense.taxonomy import OUT_OF_MEMORY_KIND, raised_in
from logsense.taxonomy import title as cause_title

MAX_EVIDENCE = 6
KEEP = 16  # events whose matches are kept per cause (per rule for a symptom); later ones are counted
UNKNOWN_CONFIDENCE = 0.3
EXPERIMENTAL_CONFIDENCE = round(MEDIUM_SURE - 0.05, 2)  # an experimental rule is said "low" sure at most


class _Hits:
    """What one rule's patterns found in one event: its `any` matches, each `all` pattern's, a veto."""

    __slots__ = ("any", "all", "vetoed")

    def __init__(self) -> None:
        self.any: list[tuple[Record, object]] = []
        self.all: dict[int, tuple[Record, object]] = {}
        self.vetoed = False


class _Searched:
    """What a message text's patterns found, filled on the first event that holds the text."""

    __slots__ = ("hits",)

    def __init__(self, _text: str) -> None:
        self.hits: tuple[tuple[int, str, int, object], ...] | None = None


def _raised_where_said(rule: CompiledRule, event: Event) -> bool:
    """A cause that means a bug in one package's code is named only when the traceback ends in that package."""
    where = raised_in(rule.spec.cause) if rule.spec.role is Role.ROOT else None
    if where is None:
        return True
    # an attribute lookup that fails inside a __getattr__ (torch's nn.Module has one) is the caller's
    frames = [f for f in frame_lines(event) if not f.message.rstrip().endswith(("in __getattr__", "in __getattribute__"))]
    if not frames or re.search(where, frames[-1].message) is not None:
        return True
    # a chain cut before its last exception line: the last exception shown may be placed instead
    raised = exception_lines(event)
    before = [f for f in frames if raised and f.line < raised[-1].line]
    return bool(before) and re.search(where, before[-1].message) is not None


class Matcher:
    """Finds which rules an event fires; a pattern that times out on a line, or a rule whose searches
    together pass RULE_BUDGET, disables its rule for the run."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.index = rules.index
        self.disabled: set[int] = set()
        self.problems: list[RuleProblem] = []
        self._spent: defaultdict[int, float] = defaultdict(float)  # seconds each rule's searches took
        self._window: dict[tuple[int, str | None], dict[int, tuple[Record, object]]] = {}
        # what the patterns found in a message text: a search reads nothing but the text, so a
        # repeated line (each rank prints each one) costs a lookup, not the regexes
        self._searched = text_memo(_Searched)

    def _search(self, ri: int, p: Pattern, rec: Record):
        start = time.perf_counter()
        try:
            found = p.regex.search(rec.message, timeout=MATCH_TIMEOUT)
        except TimeoutError:
            self._disable(ri, rec, f"{p.spec.field} took over {MATCH_TIMEOUT}s on one line (catastrophic "
                                   "backtracking?); rule disabled for this run")
            return None
        self._spent[ri] += time.perf_counter() - start
        if self._spent[ri] > RULE_BUDGET:
            self._disable(ri, rec, f"its patterns took over {RULE_BUDGET:g}s in all on this log (slow on every "
                                   "line?); rule disabled for the rest of this run")
            return None
        return found

    def _disable(self, ri: int, rec: Record, reason: str) -> None:
        self.disabled.add(ri)
        self.problems.append(RuleProblem(self.rules.rules[ri].id, rec.line, reason))

    def _hits(self, rec: Record) -> tuple[tuple[int, str, int, object], ...]:
        """(rule, kind, pattern, match) for each pattern the message's literals lead to that matches it."""
        searched = self._searched(rec.message)
        if searched.hits is None:
            found = []
            for ri, kind, pi in self.index.keys_in(rec.message):
                if ri in self.disabled:
                    continue
                rule = self.rules.rules[ri]
                pat = rule.any[pi] if kind == "any" else rule.all[pi] if kind == "all" else rule.not_[pi]
                m = self._search(ri, pat, rec)
                if m is not None:
                    found.append((ri, kind, pi, m))
            searched.hits = tuple(found)
        return searched.hits

    def match(self, event: Event) -> list[Match]:
        hits: dict[int, _Hits] = {}
        recs = event.records
        if len(recs) > 1:
            joined = wrapped_message(event)
            if joined is not None:
                recs = (*recs, joined)
        for rec in recs:
            if not rec.message:
                continue
            for ri, kind, pi, m in self._hits(rec):
                if ri in self.disabled:
                    continue
                h = hits.setdefault(ri, _Hits())
                if kind == "not":
                    h.vetoed = True
                elif kind == "any":
                    h.any.append((rec, m))
                elif pi not in h.all:
                    h.all[pi] = (rec, m)
        out = []
        for ri, h in hits.items():
            rule = self.rules.rules[ri]
            if h.vetoed or ri in self.disabled:
                continue
            if rule.spec.when_phase is not None and event.phase not in rule.spec.when_phase:
                continue
            if rule.any and not h.any:
                continue
            all_hits = h.all
            if rule.all and len(all_hits) < len(rule.all):
                if not rule.spec.within:
                    continue
                all_hits = self._windowed(ri, rule, event, h)
                if all_hits is None:
                    continue
            if not _raised_where_said(rule, event):
                continue
            out.append(self._make(rule, event, h.any, all_hits))
        return out

    def _windowed(self, ri: int, rule: CompiledRule, event: Event, h: _Hits):
        """Patterns of `all` seen across events of one stream within `within` lines."""
        key = (ri, event.pid)
        seen = self._window.setdefault(key, {})
        seen.update(h.all)
        last = event.last_line
        for pi in list(seen):
            if last - seen[pi][0].line > rule.spec.within:
                del seen[pi]
        if len(seen) < len(rule.all):
            return None
        return dict(self._window.pop(key))

    def _make(self, rule: CompiledRule, event: Event, any_hits, all_hits) -> Match:
        captures: dict[str, str] = {}
        recs: list[Record] = []
        for rec, m in list(any_hits[:1]) + [all_hits[k] for k in sorted(all_hits)]:
            recs.append(rec)
            for k, v in m.groupdict().items():
                if v is not None and k not in captures:
                    captures[k] = v
        for _rec, m in any_hits[1:]:
            for k, v in m.groupdict().items():
                if v is not None and k not in captures:
                    captures[k] = v
        recs.extend(exception_lines(event))
        seen: set[int] = set()
        evidence = []
        for rec in sorted(recs, key=lambda r: r.line):
            if rec.line in seen:
                continue
            seen.add(rec.line)
            evidence.append(Evidence(rec.line, rec.message.strip()[:500]))
        confidence = rule.spec.confidence
        if rule.spec.status is RuleStatus.EXPERIMENTAL:
            confidence = min(confidence, EXPERIMENTAL_CONFIDENCE)
        return Match(rule.id, rule.spec.cause, rule.spec.role, rule.spec.priority, confidence,
                     event, tuple(evidence[:MAX_EVIDENCE]), captures)


class Ranker:
    """Collects matches; `diagnoses()` merges them per cause and ranks roots above symptoms.

    Fatal signals (`role: fatal`) make no diagnosis of their own: with no root cause they are
    the evidence of a failure whose cause is unknown.
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.by_cause: dict[str, list[Match]] = defaultdict(list)
        self.symptoms: dict[str, list[Match]] = defaultdict(list)
        self.fatal: list[Match] = []
        # events matched per group (a root's cause, another role's rule), each once however many rules match it:
        # the rules of an event are matched one after the other, so the last one counted is all it takes
        self.events: Counter[str] = Counter()
        self._last_event: dict[str, tuple[int, str | None]] = {}
        self.ranks_seen: dict[str, set[str]] = {}

    def add(self, m: Match) -> bool:
        """Record a match; True when it is the first root match of its cause (news for a live view).

        Memory stays bounded on a huge log: the matches of a cause's first KEEP events are kept; the
        rest only count (occurrences, ranks).
        """
        group = m.cause if m.role is Role.ROOT else m.rule_id
        event = (m.event.first_line, m.event.pid)
        if self._last_event.get(group) != event:
            self._last_event[group] = event
            self.events[group] += 1
        if m.event.rank:
            self.ranks_seen.setdefault(group, set()).add(m.event.rank)
        keep = self.events[group] <= KEEP
        if m.role is Role.ROOT:
            first = m.cause not in self.by_cause
            if keep or first:
                self.by_cause[m.cause].append(m)
            return first
        if m.role is Role.FATAL:
            if keep:
                self.fatal.append(m)
            return False
        if keep:
            self.symptoms[m.rule_id].append(m)
        return False

    @property
    def failed(self) -> bool:
        """A root cause, or a fatal signal the startup has not survived."""
        return bool(self.by_cause) or bool(self.fatal)

    def survived(self) -> None:
        """The server became ready: what looked fatal before it (root causes included) was survived."""
        self.fatal.clear()
        self.symptoms.clear()
        self.by_cause.clear()
        self.events.clear()  # so that what fails after ready is kept again
        self._last_event.clear()

    def clear(self) -> None:
        self.by_cause.clear()
        self.symptoms.clear()
        self.fatal.clear()
        self.events.clear()
        self._last_event.clear()
        self.ranks_seen.clear()

    def current(self, cause: str, facts: dict) -> Diagnosis | None:
        """The diagnosis of one cause as the matches so far make it (None while its conditions fail)."""
        ms = self.allowed(self.by_cause.get(cause, []), facts)
        return self.diagnose_cause(ms, facts) if ms else None

    @staticmethod
    def _best(ms: list[Match]) -> Match:
        return min(ms, key=lambda m: (-m.priority, -m.confidence, m.event.first_line))

    def diagnose_cause(self, ms: list[Match], facts: dict) -> Diagnosis:
        best = self._best(ms)
        rule = self.rules.get(best.rule_id)
        spec = rule.spec if rule else None
        group = best.cause if best.role is Role.ROOT else best.rule_id
        ranks = sorted({m.event.rank for m in ms if m.event.rank} | self.ranks_seen.get(group, set()))
        dropped = max(0, self.events[group] - KEEP)
        captures: dict[str, str] = {}
        for m in sorted(ms, key=lambda m: m.rule_id != best.rule_id):
            for k, v in m.captures.items():
                captures.setdefault(k, v)
        fixes = fixes_mod.render(spec.fixes, facts, captures, best.event.phase) if spec else ()
        return Diagnosis(
            cause=best.cause,
            rule=best.rule_id,
            root=best.role is Role.ROOT,
            kind=Role.PRECURSOR.value if best.role is Role.PRECURSOR else None,
            origin=Origin.RULE,
            confidence=best.confidence,
            title=(spec.title if spec and spec.title else cause_title(best.cause)),
            explanation=_fill_text(spec.explanation if spec else "", facts, captures),
            phase=best.event.phase,
            evidence=best.evidence,
            fixes=fixes,
            ranks=tuple(ranks),
            occurrences=len({(m.event.first_line, m.event.pid) for m in ms}) + dropped,
        )

    def allowed(self, ms: list[Match], facts: dict) -> list[Match]:
        """The matches whose rule's `when_facts` hold for what the log says."""
        out = []
        for m in ms:
            rule = self.rules.get(m.rule_id)
            if rule is None or fixes_mod.applies(rule.spec.when_facts, facts):
                out.append(m)
        return out

    def diagnoses(self, facts: dict) -> list[Diagnosis]:
        """Root causes (strongest first), else an unknown failure from the fatal signals; then the symptoms."""
        groups = [g for g in (self.allowed(ms, facts) for ms in self.by_cause.values()) if g]
        groups.sort(key=lambda ms: self._order_matches(ms))
        claimed: set[tuple[str | None, int]] = set()
        roots = []
        for ms in groups:
            events = {(m.event.pid, m.event.first_line) for m in ms}
            if events <= claimed:
                continue  # a weaker reading of events a stronger rule already explained
            claimed |= events
            roots.append(self.diagnose_cause(ms, facts))
        symptoms = [self.diagnose_cause(g, facts) for g in (self.allowed(ms, facts) for ms in self.symptoms.values()) if g]
        symptoms.sort(key=lambda d: d.evidence[0].line if d.evidence else 0)
        explains = tuple(d.rule for d in symptoms if d.rule)
        if roots:
            top = roots[0]
            if len(roots) > 1:
                rival = roots[1]
                if self._priority(rival.rule) == self._priority(top.rule):
                    # two causes of equal standing: say so in how sure we are
                    top = top.replace(confidence=round(top.confidence * 0.8, 3))
            roots[0] = top.replace(explains=explains)
            return roots + symptoms
        if not self.fatal:
            return symptoms
        return [self._unknown(facts, explains)] + symptoms

    def _priority(self, rule_id: str | None) -> int:
        rule = self.rules.get(rule_id) if rule_id else None
        return rule.spec.priority if rule else 0

    def _unknown(self, facts: dict, explains: tuple[str, ...]) -> Diagnosis:
        """A failure no root rule names: what kind it is, its fatal line and the exception chain ending in it."""
        best = self._best(self.fatal)
        rule = self.rules.get(best.rule_id)
        spec = rule.spec if rule else None
        kind_text = _fill_text(spec.explanation if spec else "", facts, best.captures).rstrip(".")
        ev = list(best.evidence)
        if best.event.kind == EventKind.TRACEBACK and not exception_lines(best.event):
            # a traceback cut before its exception: its last frames are what it still says
            ev.extend(Evidence(r.line, r.message.strip()[:500]) for r in frame_lines(best.event)[-2:])
        for m in sorted(self.fatal, key=lambda m: m.event.first_line):
            if m is not best and m.evidence:
                ev.append(m.evidence[-1])
        ev = sorted({e.line: e for e in ev}.values(), key=lambda e: e.line)[:MAX_EVIDENCE]
        ranks = sorted({m.event.rank for m in self.fatal if m.event.rank})
        # memory that ran out is not a part of the code failing: no likely part is offered for it
        likely = None if spec and spec.kind == OUT_OF_MEMORY_KIND else next(
            (found for m in sorted(self.fatal, key=self._order_key)
             if m.event.kind == EventKind.TRACEBACK and (found := anatomy.of(m.event))), None)
        return Diagnosis(
            cause=UNKNOWN,
            rule=None,
            root=True,
            origin=Origin.RULE,
            confidence=UNKNOWN_CONFIDENCE,
            title=_fill_text(spec.title, facts, best.captures) if spec and spec.title else cause_title(UNKNOWN),
            explanation=((kind_text + ". ") if kind_text else "")
            + "No rule knows its cause; the lines below are the fatal line and the exception chain that ends in it."
            + (" " + likely.sentence() if likely else ""),
            phase=best.event.phase,
            evidence=tuple(ev),
            fixes=(),
            ranks=tuple(ranks),
            occurrences=len({(m.event.first_line, m.event.pid) for m in self.fatal}),
            explains=explains,
            kind=spec.kind if spec else None,
            likely=likely,
        )

    def _order_matches(self, ms: list[Match]):
        return self._order_key(self._best(ms))

    @staticmethod
    def _order_key(m: Match) -> tuple[int, float, int]:
        return (-m.priority, -m.confidence, m.event.first_line)


def _fill_text(text: str, facts: dict, captures: dict) -> str:
    if "{" not in text:
        return text
    values = {**facts, **captures}
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), m.group(0))), text)
