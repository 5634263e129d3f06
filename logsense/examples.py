"""The example runner: every rule's and phase's own examples through the pipeline, as a log would be.

`rules test`, `check` and the test suite read its `ExampleResult`s; the checks built on it
(enough examples, conflicts, false alarms) are in logsense.check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from logsense.model import Match, Report
from logsense.normalize import Normalizer
from logsense.pipeline import Pipeline
from logsense.rules import RuleSet
from logsense.rules.compile import CompiledRule
from logsense.rules.loader import ExampleSpec, RuleSpec
from logsense.rules.phases import PhaseSpec


@dataclass(frozen=True)
class ExampleResult:
    rule: str
    kind: str
    index: int
    ok: bool
    path: str
    line: int
    message: str
    name: str | None = None  # the example's `name:`, when it has one

    @property
    def label(self) -> str:
        """`kind[name]`, or `kind[index]` for an unnamed example: what reports and test ids call it."""
        return f"{self.kind}[{self.name if self.name is not None else self.index}]"

    @property
    def id(self) -> str:
        return f"{self.path}::{self.rule}::{self.label}"


def all_matches(rs: RuleSet, lines: Iterable[tuple[int, str]], phase: str | None = None) -> tuple[list[Match], Report]:
    """Every rule match while `lines` are analyzed (not only those that end up in the report)."""
    found: list[Match] = []
    p = Pipeline(rs, on_match=found.append)
    if phase:
        p.timeline.current = phase
    for n, text in lines:
        p.feed_line(n, text)
    report = p.finish()
    return p.ranker.allowed(found, report.facts), report


def example_lines(log: str) -> list[tuple[int, str]]:
    """An example as numbered log lines."""
    return list(enumerate(log.splitlines() or [log], 1))


def first_phase(rules: RuleSet, spec: RuleSpec) -> str | None:
    """The earliest phase a rule fires in (its examples are analyzed from there), or None for any."""
    if not spec.when_phase:
        return None
    order = rules.phase_names
    return min(spec.when_phase, key=lambda p: (order.index(p) if p in order else len(order), p))


def fired(rules: RuleSet, rule: CompiledRule, log: str) -> list[Match]:
    """The matches of `rule` when `log` is analyzed (starting in the rule's phase, if it has one)."""
    matches, _ = all_matches(rules, example_lines(log), first_phase(rules, rule.spec))
    return [m for m in matches if m.rule_id == rule.id]


def run_examples(rules: RuleSet, only: str | None = None) -> list[ExampleResult]:
    """Each example of each rule (or of the rule `only`): a match fires with its captures, a no_match does not."""
    return [run_example(rules, rule, ex) for rule in rules.rules if not only or rule.id == only
            for ex in rule.spec.examples]


def run_example(rules: RuleSet, rule: CompiledRule, ex: ExampleSpec) -> ExampleResult:
    """One example of `rule`, analyzed as a log with every rule of `rules`."""
    matches = fired(rules, rule, ex.log)
    want = ex.kind in ("match", "todo_match")
    ok = bool(matches) == want
    msg = ""
    if ok and want and ex.captures:
        got = matches[0].captures
        bad = {k: v for k, v in ex.captures.items() if got.get(k) != v}
        if bad:
            ok = False
            msg = "captures differ: " + ", ".join(f"{k}={got.get(k)!r} (want {v!r})" for k, v in bad.items())
    if not ok and not msg:
        msg = "did not fire" if want else "fired on a no_match example"
    if ex.kind.startswith("todo_"):
        ok = not ok  # a known gap: passes while it still fails
        msg = msg or "a todo example now passes: promote it"
    return ExampleResult(rule.id, ex.kind, ex.index, ok, rule.spec.path, ex.line, msg, ex.name)


def run_phase_examples(phases: list[PhaseSpec], path: str = "phases.yaml") -> list[ExampleResult]:
    """Each phase example line hits one of its phase's markers (`path` is the phase file as shown)."""
    out = []
    for spec in phases:
        for i, ex in enumerate(spec.examples):
            recs = Normalizer().feed(1, ex)
            ok = any(p.regex.search(r.message) for r in recs for p in spec.markers)
            out.append(ExampleResult(f"phase:{spec.name}", "example", i, ok, path, spec.line,
                                     "" if ok else "hits no marker of its phase"))
    return out
