"""`analyze --baseline` reads through the block scanner and says what feeding every line says."""

from __future__ import annotations

import json

import pytest

from conftest import CORPORA
from logsense.analysis import analyze_path
from logsense.pipeline import Pipeline
from logsense.rules import load_rules

BASELINES = CORPORA / "healthy"
# a failure no rule names (the novel lines are its evidence), an incomplete log (they are a note),
# failures a rule names and startups that became ready; in each, lines the scanner leaves out
LOGS = [
    CORPORA / "constructed" / "unknown-segfault-attention-init.log",
    CORPORA / "real" / "045-cuda_graph_capture_hang_custom_allreduce.log",
    CORPORA / "mission" / "flash-attn-cute-warmup.log",
    CORPORA / "mission" / "cuda-oom-cuda-graph.log",
    CORPORA / "healthy" / "k26-ddtree-ready.log",
    CORPORA / "recorded" / "sglang-0.5.23" / "healthy-gpt2-debug.log",
    CORPORA / "recorded" / "vllm-0.32.0" / "healthy-gpt2-debug.log",
]


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def _analyze(path, rules, monkeypatch, scan: bool) -> tuple[dict, int]:
    """The JSON report of `analyze --baseline` and how many lines were fed to the pipeline."""
    monkeypatch.setenv("LOGSENSE_SCAN", "on" if scan else "off")
    fed = []
    feed_line = Pipeline.feed_line
    monkeypatch.setattr(Pipeline, "feed_line", lambda self, n, raw: fed.append(n) or feed_line(self, n, raw))
    report, _ = analyze_path(str(path), rules, baseline=str(BASELINES))
    return report.to_json(), len(fed)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_baseline_reports_the_same_through_the_scanner(log, rules, monkeypatch):
    every, n_every = _analyze(log, rules, monkeypatch, scan=False)
    scanned, n_scanned = _analyze(log, rules, monkeypatch, scan=True)
    assert json.dumps(scanned, sort_keys=True) == json.dumps(every, sort_keys=True)
    assert n_scanned <= n_every


def test_the_scanner_leaves_lines_out(rules, monkeypatch):
    _, n_every = _analyze(LOGS[2], rules, monkeypatch, scan=False)
    _, n_scanned = _analyze(LOGS[2], rules, monkeypatch, scan=True)
    assert n_scanned < n_every


def test_the_novel_lines_are_the_evidence_of_an_unknown_failure(rules, monkeypatch):
    report, _ = _analyze(LOGS[0], rules, monkeypatch, scan=True)
    root = report["diagnoses"][0]
    assert root["cause"] == "unknown" and "never seen in the healthy baselines" in root["explanation"]
