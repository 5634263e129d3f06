"""Ranker.diagnoses: which reading of a log's matches comes first, and how sure it is."""

from __future__ import annotations

import pytest

from logsense.engine import Ranker
from logsense.model import UNKNOWN, Event, Evidence, Match, Record, Role

PACK = """\
rules:
{rules}
"""
RULE = """\
  - id: {id}
    cause: {cause}
    role: {role}
    priority: {priority}
    confidence: {confidence}
    {extra}
    match:
      any: ['{id} happened']
    fixes: [{{kind: command, value: 'fix {id}'}}]
    examples:
      match: ['{id} happened', 'x {id} happened']
      no_match: ['{id}', 'nothing']
"""
RULES = {
    # id: cause, role, priority, confidence, extra
    "strong": ("cuda_oom_weight_loading", "root", 80, 0.9, ""),
    "rival": ("nccl_error", "root", 80, 0.9, ""),
    "weak": ("python_module_missing", "root", 40, 0.7, ""),
    "vllm-only": ("port_in_use", "root", 90, 0.9, "when_facts: {server: vllm}"),
    "echo": ("warmup_request_failed", "symptom", 30, 0.5, ""),
    "later-echo": ("warmup_request_failed", "symptom", 30, 0.5, ""),
}


@pytest.fixture(scope="module")
def ruleset(tmp_path_factory):
    from logsense import load_rules

    pack = tmp_path_factory.mktemp("ranker") / "pack.yaml"
    pack.write_text(PACK.format(rules="".join(
        RULE.format(id=rid, cause=c, role=r, priority=p, confidence=conf, extra=x)
        for rid, (c, r, p, conf, x) in RULES.items())))
    return load_rules(only=[str(pack)])


def _match(rs, rule_id: str, line: int, pid: str | None = None) -> Match:
    rule = rs.get(rule_id)
    assert rule is not None
    text = f"{rule_id} happened"
    event = Event("line", (Record(line, text, text, pid=pid),), "weight_loading")
    return Match(rule_id, rule.spec.cause, Role(rule.spec.role), rule.spec.priority, rule.spec.confidence, event,
                 (Evidence(line, text),))


def _diagnoses(rs, *matches: tuple, facts: dict | None = None):
    ranker = Ranker(rs)
    for m in matches:
        ranker.add(_match(rs, *m))
    return ranker.diagnoses(facts or {})


def test_a_root_comes_before_a_symptom_seen_earlier(ruleset):
    ds = _diagnoses(ruleset, ("echo", 1), ("weak", 5))
    assert [(d.rule, d.root) for d in ds] == [("weak", True), ("echo", False)]


def test_the_higher_priority_root_comes_first_whatever_the_order(ruleset):
    ds = _diagnoses(ruleset, ("weak", 1), ("strong", 9))
    assert [d.rule for d in ds] == ["strong", "weak"]
    assert ds[0].confidence == 0.9  # a weaker rival does not make the top less sure


def test_two_roots_of_equal_priority_cut_the_top_confidence(ruleset):
    ds = _diagnoses(ruleset, ("strong", 3), ("rival", 7))
    assert [d.rule for d in ds] == ["strong", "rival"]  # same standing: the earlier line first
    assert ds[0].confidence == pytest.approx(0.9 * 0.8)
    assert ds[1].confidence == 0.9


def test_a_weaker_reading_of_events_already_claimed_is_dropped(ruleset):
    same_event = _diagnoses(ruleset, ("strong", 4, "7"), ("weak", 4, "7"))
    assert [d.rule for d in same_event] == ["strong"]
    other_process = _diagnoses(ruleset, ("strong", 4, "7"), ("weak", 4, "8"))
    assert [d.rule for d in other_process] == ["strong", "weak"]


def test_the_top_root_says_which_symptoms_it_explains_in_line_order(ruleset):
    ds = _diagnoses(ruleset, ("later-echo", 20), ("strong", 10), ("echo", 2))
    assert ds[0].rule == "strong" and ds[0].explains == ("echo", "later-echo")
    assert [d.rule for d in ds[1:]] == ["echo", "later-echo"]
    assert all(d.explains == () for d in ds[1:])


def test_a_root_whose_facts_do_not_hold_does_not_rank(ruleset):
    assert [d.rule for d in _diagnoses(ruleset, ("vllm-only", 1), ("weak", 2), facts={"server": "sglang"})] == ["weak"]
    assert [d.rule for d in _diagnoses(ruleset, ("vllm-only", 1), ("weak", 2), facts={"server": "vllm"})] == [
        "vllm-only", "weak"]


def test_symptoms_alone_are_no_root_and_no_failure(ruleset):
    ds = _diagnoses(ruleset, ("echo", 1))
    assert [(d.rule, d.root) for d in ds] == [("echo", False)]


def test_a_fatal_signal_with_no_root_is_an_unknown_failure_that_explains_the_symptoms(ruleset):
    fatal = next(r for r in ruleset.rules if r.spec.role == "fatal")
    ranker = Ranker(ruleset)
    ranker.add(_match(ruleset, "echo", 1))
    event = Event("line", (Record(5, "boom", "boom"),), "weight_loading")
    ranker.add(Match(fatal.id, fatal.spec.cause, Role.FATAL, fatal.spec.priority, fatal.spec.confidence, event,
                     (Evidence(5, "boom"),)))
    ds = ranker.diagnoses({})
    assert ds[0].cause == UNKNOWN and ds[0].root and ds[0].explains == ("echo",)
    assert ds[1].rule == "echo"
