"""Run every rule's own examples through the whole pipeline, as a log would be."""

from __future__ import annotations

from dataclasses import dataclass

from logsense.rules import RuleSet
from logsense.rules.compile import CompiledRule
from logsense.rules.schema import PHASES


@dataclass(frozen=True)
class ExampleResult:
    rule: str
    kind: str
    index: int
    ok: bool
    path: str
    line: int
    message: str

    @property
    def id(self) -> str:
        return f"{self.path}::{self.rule}::{self.kind}[{self.index}]"


def fired(rules: RuleSet, rule: CompiledRule, log: str) -> list:
    """The matches of `rule` when `log` is analyzed (starting in the rule's phase, if it has one)."""
    from logsense.pipeline import Pipeline

    p = Pipeline(rules)
    if rule.spec.when_phase:
        p.timeline.current = min(rule.spec.when_phase, key=PHASES.index)
    found = []
    original = p.ranker.add

    def spy(m):
        if m.rule_id == rule.id:
            found.append(m)
        return original(m)

    p.ranker.add = spy  # type: ignore[method-assign]
    for i, line in enumerate(log.splitlines() or [log], 1):
        p.feed_line(i, line)
    p.flush()
    return p.ranker.allowed(found, p.facts.snapshot())


def run_examples(rules: RuleSet, only: str | None = None) -> list[ExampleResult]:
    out = []
    for rule in rules.rules:
        if only and rule.id != only:
            continue
        for ex in rule.spec.examples:
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
            out.append(ExampleResult(rule.id, ex.kind, ex.index, ok, rule.spec.path, ex.line, msg))
    return out


def check_counts(rules: RuleSet, minimum: int = 2) -> list[ExampleResult]:
    """Every rule needs at least `minimum` match and no_match examples."""
    out = []
    for rule in rules.rules:
        for kind in ("match", "no_match"):
            n = sum(1 for e in rule.spec.examples if e.kind == kind)
            if n < minimum:
                out.append(ExampleResult(rule.id, kind, -1, False, rule.spec.path, rule.spec.line,
                                         f"has {n} {kind} example(s); at least {minimum} are required"))
    return out


def check_phases(rules: RuleSet) -> list[ExampleResult]:
    """Every phase example line must hit one of its phase's markers."""
    out = []
    for spec in rules.phases:
        for i, ex in enumerate(spec.examples):
            from logsense.normalize import Normalizer

            recs = Normalizer().feed(1, ex)
            ok = any(p.regex.search(r.message) for r in recs for p in spec.markers)
            out.append(ExampleResult(f"phase:{spec.name}", "example", i, ok, "phases.yaml", spec.line,
                                     "" if ok else "hits no marker of its phase"))
    return out
