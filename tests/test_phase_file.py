"""The phase file is the one list of phases: a phase added in YAML alone is known to rules, timeline and reports."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
import yaml
from phase_helpers import copy_phase_files

from logsense.errors import RuleErrors
from logsense.pipeline import run
from logsense.report import text as report_text
from logsense.report.term import Terminal
from logsense.rules import bundled_phase_names, bundled_rules_dir, load_rules

NEW_PHASE = """\
  - phase: tokenizer_init
    description: the tokenizer is loaded (a phase added in YAML alone)
    markers:
      - 'Tokenizer init begin'
    examples:
      - '[2026-11-20 10:00:01 TP0] Tokenizer init begin.'

"""

RULE = {
    "id": "tokenizer-broken",
    "cause": "tokenizer_load_failed",
    "role": "root",
    "priority": 60,
    "match": {"any": ["TokenizerBroken: (?P<why>.+)"]},
    "when_phase": ["tokenizer_init"],
    "fixes": [{"kind": "command", "value": "check the tokenizer files"}],
    "examples": {"match": ["TokenizerBroken: no vocab", "TokenizerBroken: bad merges"],
                 "no_match": ["tokenizer ok", "TokenizerBroke"]},
}

LOG = """\
[2026-11-20 10:00:00] server_args=ServerArgs(model_path='m', tokenizer_path='m')
[2026-11-20 10:00:01 TP0] Tokenizer init begin.
[2026-11-20 10:00:02 TP0] TokenizerBroken: no vocab
"""


def _pack(tmp_path: Path, phases_text: str, rules: list[dict]) -> Path:
    pack = tmp_path / "pack"
    copy_phase_files(pack)
    (pack / "phases.yaml").write_text(phases_text, encoding="utf-8")
    (pack / "rules.yaml").write_text(yaml.safe_dump({"rules": rules}, sort_keys=False), encoding="utf-8")
    return pack


def _with_new_phase() -> str:
    text = (bundled_rules_dir() / "phases.yaml").read_text(encoding="utf-8")
    at = text.index("  - phase: distributed_init")
    return text[:at] + NEW_PHASE + text[at:]


@pytest.fixture
def bundled_phases() -> tuple[str, ...]:
    return bundled_phase_names()


def test_the_bundled_phases_come_from_the_phase_file(bundled_phases):
    assert bundled_phases[:2] == ("import", "server_args") and bundled_phases[-2:] == ("serving", "stopped")
    assert load_rules().phase_names == bundled_phases


def test_a_phase_added_in_yaml_alone_shows_up(tmp_path, bundled_phases):
    rs = load_rules(only=[str(_pack(tmp_path, _with_new_phase(), [RULE]))])
    assert rs.phase_names == ("import", "server_args", "tokenizer_init") + bundled_phases[2:]
    report = run(LOG.splitlines(), rs)
    assert [p.name for p in report.phases] == ["server_args", "tokenizer_init"]
    assert report.root is not None and (report.root.rule, report.root.phase) == ("tokenizer-broken", "tokenizer_init")
    buf = io.StringIO()
    report_text.render(report, Terminal(buf, width=200))
    assert "phase tokenizer_init" in buf.getvalue() and "server_args 1 s → tokenizer_init" in buf.getvalue()


def test_the_rule_examples_run_from_the_new_phase(tmp_path):
    from logsense.check import check_phase_examples, check_rule_examples

    rs = load_rules(only=[str(_pack(tmp_path, _with_new_phase(), [RULE]))])
    assert check_rule_examples(rs, rs.rules) == []
    assert check_phase_examples(rs.phases, "phases.yaml") == []


def test_a_rule_naming_a_phase_the_file_lacks_is_an_error(tmp_path):
    shutil.copy(bundled_rules_dir() / "phases.yaml", tmp_path / "phases.yaml")
    pack = _pack(tmp_path, (tmp_path / "phases.yaml").read_text(encoding="utf-8"), [RULE])
    with pytest.raises(RuleErrors) as e:
        load_rules(only=[str(pack)])
    assert any("unknown phase 'tokenizer_init'" in str(x) and x.rule == "tokenizer-broken" for x in e.value.errors)


def test_a_new_phase_first_named_after_the_ready_phase_is_refused(tmp_path):
    text = (bundled_rules_dir() / "phases.yaml").read_text(encoding="utf-8") + NEW_PHASE.replace("tokenizer_init",
                                                                                                  "tokenizr_init")
    with pytest.raises(RuleErrors) as e:
        load_rules(only=[str(_pack(tmp_path, text, []))])
    assert any("phase 'tokenizr_init' is first named after the ready phase 'serving'" in str(x) for x in e.value.errors)
