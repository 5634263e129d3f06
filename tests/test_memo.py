"""The per-text memos change no report: every corpus log gives the same report with them as without."""

from __future__ import annotations

import io

import pytest

import logsense.memo as memo
from conftest import CORPORA
from logsense.analysis import analysis_pipeline
from logsense.memo import text_memo
from logsense.sources.recorded import read_lines


def _analyze(rules, data: bytes) -> dict:
    p = analysis_pipeline(rules)
    for n, text in read_lines(io.BufferedReader(io.BytesIO(data)), "x"):
        p.feed_line(n, text)
    return p.finish("x").to_json()


def test_memos_change_no_report(rules, monkeypatch):
    """Warm memos (every log read once before) against none, on the whole corpus."""
    logs = [p.read_bytes() for p in sorted(CORPORA.rglob("*.log"))]
    if not logs:
        pytest.skip("no corpus yet")
    for data in logs:
        _analyze(rules, data)
    warm = [_analyze(rules, data) for data in logs]
    monkeypatch.setattr(memo, "ENABLED", False)
    assert [_analyze(rules, data) for data in logs] == warm


def test_a_repeated_line_is_its_own_evidence(rules):
    """Eight ranks print the same message: each match points at its own line, not the first one's."""
    line = "[2026-01-01 00:00:0{i} TP{i}] RuntimeError: CUDA error: an illegal memory access was encountered"
    text = "\n".join(line.format(i=i) for i in range(8)).encode() + b"\n"
    report = _analyze(rules, text)
    assert report["diagnoses"], report
    top = report["diagnoses"][0]
    assert top["occurrences"] == 8 and len(top["ranks"]) == 8


def test_text_memo_calls_once_per_text_and_never_keeps_long_ones():
    calls: list[str] = []

    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    up = text_memo(upper, entries=2)
    assert [up("a"), up("a"), up("b"), up("a")] == ["A", "A", "B", "A"]
    assert calls == ["a", "b"]
    long = "x" * (memo.LONGEST + 1)
    up(long)
    up(long)
    assert calls[-2:] == [long, long]


@pytest.mark.parametrize("times", [2, 16, 17, 40])
def test_a_traceback_repeated_n_times_counts_n(rules, times):
    """Two rules of one cause match each repeat: a repeat counts once, past the matches kept (16) too."""
    lines = (CORPORA / "mission" / "flash-attn-cute-warmup.log").read_bytes().splitlines(keepends=True)
    head, block = lines[:188], lines[188:288]  # the startup, then TP0's scheduler traceback
    report = _analyze(rules, b"".join(head + block * times))
    counts = {d["cause"] if d["root"] else d["rule"]: d["occurrences"] for d in report["diagnoses"]}
    assert counts["flash_attn_cute_unavailable"] == times and counts["scheduler-hit-exception"] == times
