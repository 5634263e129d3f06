"""The rule format: pack defaults, example names, the generated field tables, errors with a caret."""

from __future__ import annotations

from pathlib import Path

import pytest

from logsense.errors import RuleError
from logsense.rules.docs import DOC_BEGIN, fields_markdown, with_fields
from logsense.rules.loader import load_pack

DOC = Path(__file__).resolve().parent.parent / "docs" / "rule-format.md"

PACK = """\
defaults:
  not:
    - 'Ignore import error when loading'
rules:
  - id: widget-missing
    cause: python_module_missing
    role: root
    match:
      any: ["No module named 'widget'"]
      not: ['optional']
    examples:
      match:
        - "No module named 'widget'"
        - name: in-a-traceback
          log: "ModuleNotFoundError: No module named 'widget'"
      no_match: ['widget', 'Ignore import error when loading x: No module named widget']
  - id: gadget-missing
    cause: python_module_missing
    role: root
    use_defaults: false
    match:
      any: ["No module named 'gadget'"]
    examples:
      match: ["No module named 'gadget'", "x: No module named 'gadget'"]
      no_match: ['gadget', 'gadgets']
"""


def _pack(tmp_path: Path, text: str):
    (tmp_path / "pack.yaml").write_text(text)
    return load_pack(tmp_path / "pack.yaml", str(tmp_path / "pack.yaml"))


def test_pack_defaults_go_before_the_rules_own_not_unless_it_opts_out(tmp_path):
    specs, errors = _pack(tmp_path, PACK)
    assert errors == []
    widget, gadget = specs
    assert [(p.text, p.field) for p in widget.not_] == [("Ignore import error when loading", "defaults.not[0]"),
                                                        ("optional", "match.not[0]")]
    assert gadget.not_ == ()


def test_a_broken_default_is_reported_once_at_its_line(tmp_path):
    _, errors = _pack(tmp_path, PACK.replace("'Ignore import error when loading'", "'Ignore (import'"))
    assert [(e.line, e.field, e.rule) for e in errors] == [(3, "defaults.not[0]", None)]
    assert "not a valid regular expression" in errors[0].reason


def test_a_pack_with_an_unknown_top_level_key_does_not_load(tmp_path):
    _, errors = _pack(tmp_path, "default:\n  not: [x]\n" + PACK)
    assert [(e.line, e.field) for e in errors] == [(1, "default")]
    assert "unknown field (known: rules, defaults)" in errors[0].reason


def test_a_named_example_keeps_its_name_as_its_label(tmp_path):
    specs, _ = _pack(tmp_path, PACK)
    labels = [e.label for e in specs[0].examples]
    assert labels == ["match[0]", "match[in-a-traceback]", "no_match[0]", "no_match[1]"]


@pytest.mark.parametrize(("name", "reason"), [
    ("in-a-traceback", "another example of this rule is named 'in-a-traceback'"),
    ("In A Traceback", "must be lowercase letters, digits, '_' and '-'"),
])
def test_example_names_are_unique_and_plain(tmp_path, name, reason):
    text = PACK.replace("      no_match: ['widget',", f"      no_match: [{{name: '{name}', log: widget}},")
    _, errors = _pack(tmp_path, text)
    assert [(e.field, e.reason) for e in errors] == [("examples.no_match[0].name", reason)]


def test_an_example_mapping_with_an_unknown_key_does_not_load(tmp_path):
    _, errors = _pack(tmp_path, PACK.replace("          log: \"ModuleNotFound", "          lgo: \"ModuleNotFound"))
    assert {e.field for e in errors} == {"examples.match[1].lgo", "examples.match[1].log"}


def test_the_field_tables_in_the_docs_are_current():
    doc = DOC.read_text(encoding="utf-8")
    assert DOC_BEGIN in doc
    assert with_fields(doc) == doc, "docs/rule-format.md is stale: run python3 -m logsense.rules.docs docs/rule-format.md"


def test_every_field_the_loader_knows_is_in_the_tables():
    tables = fields_markdown()
    for name in ("`when_facts`", "`use_defaults`", "`defaults.not`", "`examples.*[].name`", "`kind`", "`server`"):
        assert name in tables


def test_an_error_shows_its_line_with_a_caret_under_the_column(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, errors = _pack(tmp_path, PACK.replace("    role: root\n    match:\n      any: [\"No module named 'widget'\"]",
                                             "    role: cause\n    match:\n      any: [\"No module named 'widget'\"]"))
    (e,) = errors
    assert str(e).splitlines() == [
        f"{tmp_path}/pack.yaml:7:11: rule 'widget-missing': role: 'cause' is not one of: root, symptom, fatal, precursor",
        "    7 |     role: cause",
        "      |           ^",
    ]


def test_a_bad_regex_is_pointed_at_where_the_parser_stopped(tmp_path):
    from logsense.errors import RuleErrors
    from logsense.rules import load_rules

    (tmp_path / "pack.yaml").write_text(PACK.replace("not: ['optional']", "not: ['opt(ional']"))
    with pytest.raises(RuleErrors) as e:
        load_rules(only=[str(tmp_path / "pack.yaml")])
    (err,) = [x for x in e.value.errors if x.field == "match.not[0]"]
    assert err.source is not None and err.source[err.column - 1:].startswith("']")


def test_the_excerpt_of_a_hostile_file_is_inert(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("rules:\n  - id: \x1b]0;owned\x07x\x9b2J\n")
    out = RuleError(str(path), 2, "bad", column=9).excerpt()
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert out.splitlines()[1].endswith("^")


def _ruleset(tmp_path: Path, text: str):
    from logsense.rules import load_rules

    (tmp_path / "pack.yaml").write_text(text)
    return load_rules(only=[str(tmp_path / "pack.yaml")])


def test_a_named_example_is_its_test_id(tmp_path):
    from logsense.examples import run_examples

    results = run_examples(_ruleset(tmp_path, PACK), "widget-missing")
    assert all(r.ok for r in results), [r.message for r in results if not r.ok]
    assert [r.label for r in results] == ["match[0]", "match[in-a-traceback]", "no_match[0]", "no_match[1]"]
    assert results[1].id.endswith("::widget-missing::match[in-a-traceback]")


def test_lint_finds_a_default_repeated_in_a_rule_and_a_not_pasted_into_several_rules(tmp_path):
    from logsense.check import PASTED, lint

    text = PACK.replace("not: ['optional']", "not: ['optional', 'Ignore import error when loading']")
    rule = PACK.split("rules:\n", 1)[1].split("  - id: gadget-missing")[0]
    text += "".join(rule.replace("widget-missing", f"widget-missing-{i}") for i in range(PASTED - 1))
    found = [p.message for p in lint(_ruleset(tmp_path, text)) if "not" in p.message]
    assert any("match.not[1]: already in the pack's defaults.not" in m for m in found)
    assert any(f"'optional' is pasted into {PASTED} rules" in m for m in found)
