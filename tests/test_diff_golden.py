"""`logsense diff` gives the same report as before it read through the block scanner.

The golden reports were written by the diff that fed every line through the pipeline and
the template miner (`tests/diff_golden.py` says how to regenerate them when the report
changes on purpose). A second check needs no golden: the scanner-fed diff and the one fed
every line (`LOGSENSE_SCAN=off`) agree.
"""

from __future__ import annotations

import json

import pytest
from diff_golden import GOLDEN, canonical, corpus_pairs, diff_json, digest, made_pairs

from logsense.diff import diff_logs


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return made_pairs(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("name", ["tp8-warmup", "tp8-same", "tp8-facts", "tp8-markup", "vllm-kv-cache",
                                  "corpus-fa4-warmup"])
def test_same_report_as_before(name, made, rules):
    good, bad = made[name]
    want = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    assert diff_json(good, bad, rules) == want


@pytest.mark.slow
def test_same_report_as_before_on_the_corpus(rules):
    want = json.loads((GOLDEN / "corpus-digests.json").read_text(encoding="utf-8"))
    changed = [name for name, good, bad in corpus_pairs()
               if name in want and digest(diff_json(good, bad, rules)) != want[name]]
    assert not changed, f"{len(changed)} pairs report otherwise: {changed[:10]}"


@pytest.mark.parametrize("name", ["tp8-warmup", "tp8-facts", "corpus-fa4-warmup"])
def test_scanner_and_every_line_agree(name, made, rules, monkeypatch):
    good, bad = made[name]
    fast = canonical(diff_logs(str(good), str(bad), rules).to_json(), good, bad)
    monkeypatch.setenv("LOGSENSE_SCAN", "off")
    full = canonical(diff_logs(str(good), str(bad), rules).to_json(), good, bad)
    assert fast == full
