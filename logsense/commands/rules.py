"""`logsense rules list|show|test|export|lint`: the rule pack as a user sees it."""

from __future__ import annotations

import json

from rich.table import Table
from rich.text import Text

from logsense.commands.common import console, rules_from_options
from logsense.errors import UsageError


def list_rules(rules=None, only_rules=None, fmt: str = "text") -> int:
    rs = rules_from_options(rules, only_rules)
    if fmt == "json":
        print(json.dumps([{"id": r.id, "cause": r.spec.cause, "role": r.spec.role, "priority": r.spec.priority,
                           "confidence": r.spec.confidence, "source": f"{r.spec.path}:{r.spec.line}"}
                          for r in rs.rules], indent=2))
        return 0
    t = Table(show_edge=False, pad_edge=False)
    for col in ("rule", "cause", "role", "prio", "source"):
        t.add_column(col)
    for r in sorted(rs.rules, key=lambda r: (r.spec.path, r.spec.line)):
        t.add_row(Text(r.id), Text(r.spec.cause), Text(r.spec.role), Text(str(r.spec.priority)),
                  Text(f"{r.spec.path}:{r.spec.line}"))
    out = console()
    out.print(t)
    out.print(Text(f"{len(rs.rules)} rules from {len(rs.sources)} packs", style="dim"))
    return 0


def _rule(rs, rule_id: str):
    """The rule with this id, or a usage error that names it and the ids close to it."""
    r = rs.get(rule_id)
    if r is None:
        close = [x.id for x in rs.rules if rule_id.split("-")[0] in x.id][:5]
        hint = f" (did you mean: {', '.join(close)})" if close else " (see `logsense rules list`)"
        raise UsageError(f"no such rule: '{rule_id}'{hint}")
    return r


def show(rule_id: str, rules=None, only_rules=None, fmt: str = "text") -> int:
    rs = rules_from_options(rules, only_rules)
    s = _rule(rs, rule_id).spec
    if fmt == "json":
        print(json.dumps({
            "id": s.id, "cause": s.cause, "role": s.role, "priority": s.priority, "confidence": s.confidence,
            "title": s.title, "explanation": s.explanation, "when_phase": sorted(s.when_phase or []),
            "match": {"any": [p.text for p in s.any], "all": [p.text for p in s.all], "within": s.within,
                      "not": [p.text for p in s.not_]},
            "fixes": [{"kind": f.kind, "value": f.value, "note": f.note, "fallback": f.fallback,
                       "if": {k: list(v) for k, v in f.when.items()}} for f in s.fixes],
            "references": list(s.references),
            "examples": [{"kind": e.kind, "log": e.log} for e in s.examples],
            "source": f"{s.path}:{s.line}",
        }, indent=2))
        return 0
    out = console()
    head = Text(s.id, style="bold")
    head.append(f"  {s.role}, priority {s.priority}, confidence {s.confidence}", style="dim")
    out.print(head)
    out.print(Text(f"cause: {s.cause}"))
    from logsense.taxonomy import title

    out.print(Text(f"title: {s.title or title(s.cause)}"))
    if s.explanation:
        out.print(Text(f"why:   {s.explanation}"))
    if s.when_phase:
        out.print(Text(f"only in phases: {', '.join(sorted(s.when_phase))}"))
    for label, pats in (("matches any of", s.any), ("and all of", s.all), ("unless", s.not_)):
        if pats:
            out.print(Text(label + (f" (within {s.within} lines)" if label == "and all of" and s.within else "") + ":"))
            for p in pats:
                out.print(Text(f"  {p.text}"))
    if s.fixes:
        out.print(Text("fixes:"))
        for f in s.fixes:
            line = Text(f"  [{f.kind}] {f.value}")
            if f.when:
                line.append(f"  if {', '.join(f'{k} in {list(v)}' for k, v in f.when.items())}", style="dim")
            if f.fallback:
                line.append(f"  (else: {f.fallback})", style="dim")
            out.print(line)
            if f.note:
                out.print(Text(f"      note: {f.note}", style="dim"))
    for kind in ("match", "no_match"):
        exs = [e for e in s.examples if e.kind == kind]
        if exs:
            out.print(Text(f"examples that must {'fire' if kind == 'match' else 'not fire'}:"))
            for e in exs:
                for i, ln in enumerate(e.log.splitlines() or [""]):
                    out.print(Text(("  - " if i == 0 else "    ") + ln))
    for ref in s.references:
        out.print(Text(f"see: {ref}", style="dim"))
    out.print(Text(f"source: {s.path}:{s.line}", style="dim"))
    return 0


def test(rules=None, only_rules=None, rule_id: str | None = None, verbose: bool = False) -> int:
    """Run the rules' examples (and the phase examples) with `check`'s own rule checks; exit 1 on a failure."""
    from logsense.check import check_phase_examples, check_rule_examples
    from logsense.examples import run_examples

    rs = rules_from_options(rules, only_rules)
    selected = [_rule(rs, rule_id)] if rule_id is not None else rs.rules
    results = run_examples(rs, rule_id)
    problems = check_rule_examples(rs, selected, results)
    if rule_id is None:
        problems += check_phase_examples(rs.phases, "phases.yaml")
    out = console()
    if verbose:
        for r in results:
            if r.ok:
                out.print(Text(f"ok   {r.path}:{r.line}: rule '{r.rule}': examples.{r.kind}[{r.index}]", style="green"))
    for p in problems:
        out.print(Text(f"FAIL {p.render()}", style="red"))
    passed = sum(r.ok for r in results)
    out.print(Text(f"{passed} examples passed, {len(problems)} problem(s)", style="red" if problems else "green"))
    return 1 if problems else 0


def export(rules=None, only_rules=None, patterns: bool = True) -> int:
    """Write every positive pattern, one per line, as grep -E can read them (a benchmark reference)."""
    rs = rules_from_options(rules, only_rules)
    from logsense.rules.grep import to_ere

    seen = set()
    for r in rs.rules:
        for p in r.any + r.all:
            ere = to_ere(p.spec.text)
            if ere and ere not in seen:
                seen.add(ere)
                print(ere)
    for ph in rs.phases:
        for p in ph.markers:
            ere = to_ere(p.spec.text)
            if ere and ere not in seen:
                seen.add(ere)
                print(ere)
    return 0


def lint_cmd(rules=None, only_rules=None) -> int:
    from logsense.check import lint

    rs = rules_from_options(rules, only_rules)
    problems = lint(rs)
    out = console()
    for p in problems:
        out.print(Text(p.render()))
    out.print(Text(f"{len(problems)} lint finding(s) in {len(rs.rules)} rules", style="yellow" if problems else "green"))
    return 1 if problems else 0


def coverage(source: str, package: str | None, config: str | None, fmt: str, uncovered: bool, budget: float,
             rules=None, only_rules=None) -> int:
    """Print the coverage report of a wheel or dir; exit 0, or 3 when the time budget cut it short."""
    from logsense.coverage import measure
    from logsense.coverage.report import render_csv, render_json, render_text
    from logsense.errors import ExitCode

    report = measure(source, rules_from_options(rules, only_rules), package, config, budget)
    render = {"text": render_text, "json": render_json, "csv": render_csv}[fmt]
    print(render(report, uncovered), end="")
    return int(ExitCode.TIMEOUT) if report.unfinished else 0
