"""A rule's `status:`: experimental rules are never more than low sure, deprecated ones never run."""

from __future__ import annotations

import pytest

from logsense import load_rules
from logsense.engine import EXPERIMENTAL_CONFIDENCE
from logsense.model import FixKind, Role, RuleStatus
from logsense.pipeline import run
from logsense.report.text import sureness

PACK = """\
rules:
  - id: widget-broke
    cause: python_module_missing
    role: root
    confidence: 0.95
    {status}
    match:
      any: ['widget broke: (?P<name>\\w+)']
    fixes: [{{kind: package, value: 'pip install {{name}}'}}]
    examples:
      match: ['widget broke: foo', 'x widget broke: bar']
      no_match: ['widget', 'widget fine']
"""
LOG = ["Traceback (most recent call last):", '  File "a.py", line 1, in <module>',
       "RuntimeError: widget broke: foo"]


def _rules(tmp_path, status: str):
    pack = tmp_path / "pack.yaml"
    pack.write_text(PACK.format(status=f"status: {status}" if status else ""), encoding="utf-8")
    return load_rules(only=[str(pack)])


def _top(tmp_path, status: str):
    report = run(LOG, _rules(tmp_path, status))
    return next((d for d in report.diagnoses if d.rule == "widget-broke"), None)


@pytest.mark.parametrize("status", ["", "stable"])
def test_a_stable_rule_reports_its_own_confidence(tmp_path, status):
    d = _top(tmp_path, status)
    assert d is not None and d.confidence == pytest.approx(0.95)


def test_an_experimental_rule_is_reported_but_never_more_than_low_sure(tmp_path):
    d = _top(tmp_path, "experimental")
    assert d is not None and d.confidence == EXPERIMENTAL_CONFIDENCE
    assert sureness(d.confidence) == "low"
    assert d.fixes[0].value == "pip install foo"


def test_a_deprecated_rule_is_checked_but_never_run(tmp_path):
    rules = _rules(tmp_path, "deprecated")
    assert rules.get("widget-broke") is None
    assert _top(tmp_path, "deprecated") is None


def test_an_unknown_status_does_not_load(tmp_path):
    from logsense.errors import RuleErrors

    with pytest.raises(RuleErrors, match="not one of: stable, experimental, deprecated"):
        _rules(tmp_path, "beta")


def test_the_spec_holds_enums_that_are_their_strings(tmp_path):
    spec = _rules(tmp_path, "").get("widget-broke").spec
    assert spec.role is Role.ROOT and spec.status is RuleStatus.STABLE and spec.fixes[0].kind is FixKind.PACKAGE
    assert spec.role == "root" and f"{spec.role}" == "root" and str(spec.fixes[0].kind) == "package"
