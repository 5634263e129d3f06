"""`logsense rules list|show|test|export|lint`: the rule pack as a user sees it."""

from __future__ import annotations

import json

from logsense.commands.common import rules_from_options
from logsense.errors import UsageError
from logsense.report.console import console


def list_rules(rules=None, only_rules=None, fmt: str = "text") -> int:
    from logsense.report.rules_text import rule_summary

    rs = rules_from_options(rules, only_rules)
    if fmt == "json":
        print(json.dumps([rule_summary(r) for r in rs.rules], indent=2))
        return 0
    from logsense.report.rules_text import render_rule_list

    render_rule_list(console(), list(rs.rules), len(rs.sources))
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
    from logsense.report.rules_text import render_rule, rule_json

    rs = rules_from_options(rules, only_rules)
    spec = _rule(rs, rule_id).spec
    if fmt == "json":
        print(json.dumps(rule_json(spec), indent=2))
    else:
        render_rule(console(), spec)
    return 0


def test(rules=None, only_rules=None, rule_id: str | None = None, verbose: bool = False) -> int:
    """Run the rules' examples (and the phase examples) with `check`'s own rule checks; exit 1 on a failure."""
    from logsense.check import check_phase_examples, check_rule_examples
    from logsense.examples import run_examples
    from logsense.report.rules_text import render_checked

    rs = rules_from_options(rules, only_rules)
    selected = [_rule(rs, rule_id)] if rule_id is not None else list(rs.rules)
    results = run_examples(rs, rule_id)
    problems = check_rule_examples(rs, selected, results)
    if rule_id is None:
        problems += check_phase_examples(rs.phases, "phases.yaml")
    passed = [f"ok   {r.path}:{r.line}: rule '{r.rule}': examples.{r.label}" for r in results if r.ok]
    render_checked(console(), problems, f"{len(passed)} examples passed, {len(problems)} problem(s)",
                   passed=passed if verbose else ())
    return 1 if problems else 0


def export(rules=None, only_rules=None) -> int:
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
    from logsense.report.rules_text import render_checked

    rs = rules_from_options(rules, only_rules)
    problems = lint(rs)
    render_checked(console(), problems, f"{len(problems)} lint finding(s) in {len(rs.rules)} rules", mark="",
                   style="yellow")
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
