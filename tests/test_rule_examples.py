"""Every rule's own examples, discovered from the packs: `pytest -k flash-attn` runs one rule."""

from __future__ import annotations

import pytest

from logsense import load_rules
from logsense.check import check_phase_examples, check_rule_examples, lint
from logsense.errors import RuleErrors
from logsense.examples import run_example


def _examples():
    """(rule id, example) for every example of the bundled packs; they run in the tests, spread over the workers."""
    try:
        rs = load_rules()
    except RuleErrors as e:
        return [pytest.param(None, None, id="pack-load", marks=pytest.mark.xfail(reason=str(e), strict=True))]
    return [pytest.param(r.id, ex, id=f"{r.spec.path}::{r.id}::{ex.label}") for r in rs.rules for ex in r.spec.examples]


@pytest.mark.parametrize(("rule_id", "example"), _examples())
def test_example(rules, rule_id, example):
    rule = rules.get(rule_id)
    assert rule is not None and example is not None
    result = run_example(rules, rule, example)
    assert result.ok, f"{result.path}:{result.line}: rule '{result.rule}': {result.label}: {result.message}"


def test_packs_load():
    load_rules()


def test_every_rule_has_enough_examples_and_every_phase_example_hits(rules):
    problems = check_rule_examples(rules, rules.rules, results=[]) + check_phase_examples(rules.phases, "phases.yaml")
    assert [p.render() for p in problems] == []


def test_every_cause_has_a_rule(rules):
    from logsense.taxonomy import causes

    covered = {r.spec.cause for r in rules.rules if r.spec.role == "root"}
    missing = sorted(set(causes()) - covered - {"healthy", "unknown"})
    assert not missing, f"causes with no root rule: {missing}"


def test_bundled_pack_lints_clean(rules):
    assert [p.render() for p in lint(rules)] == []
