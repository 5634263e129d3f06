"""One verdict: `tail --no-follow --from-start` ends with the diagnosis `analyze` gives, on every corpus log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from logsense.analysis import analyze_path
from logsense.commands.common import WallClock, analysis_factory, rules_from_options
from logsense.scan import keep_for
from logsense.session import Session
from logsense.sources import stream
from logsense.sources.stream import FileSource

LOGS = sorted(p for p in (ROOT / "corpora").rglob("*.log"))


@pytest.fixture(scope="module")
def rules():
    return rules_from_options(None, None)


def verdict(report) -> tuple:
    root = report.root
    if root is None:
        return (report.status.value, None, None, None, report.phase)
    return (report.status.value, root.cause, root.rule, round(root.confidence, 3), root.phase)


def tail_report(path: Path, rules, by_blocks: bool = False):
    new = analysis_factory(rules)
    source = FileSource(str(path), rules, from_start=True, follow=False, keep=keep_for(new()) if by_blocks else None)
    session = Session(rules, new, WallClock(), source_name=str(path))
    try:
        while not source.ended:
            for item in source.read(0.0):
                session.feed(item)
        session.tick(caught_up=True, ended=True)
    finally:
        source.close()
    assert session.verdicts, path
    return session.verdicts[-1].report


def test_the_corpus_is_there():
    assert len(LOGS) >= 100


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(ROOT / "corpora")))
def test_tail_and_analyze_agree(path, rules, monkeypatch):
    """Line by line, and by blocks as tail reads a big backlog (here every log is one)."""
    analyzed, _ = analyze_path(str(path), rules)
    assert verdict(tail_report(path, rules)) == verdict(analyzed)
    monkeypatch.setattr(stream, "CATCH_UP_MIN", 0)
    by_blocks = tail_report(path, rules, by_blocks=True)
    assert verdict(by_blocks) == verdict(analyzed)
    assert by_blocks.lines == analyzed.lines


@pytest.mark.parametrize("name", ["mission/flash-attn-cute-warmup.log", "mission/python-h-missing.log",
                                  "healthy/k26-ddtree-ready.log"])
def test_the_jsonl_end_event_carries_analyzes_verdict(name):
    path = ROOT / "corpora" / name
    env = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    tail = subprocess.run([sys.executable, "-m", "logsense", "tail", str(path), "--no-follow", "--from-start",
                           "--format", "jsonl"], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    analyze = subprocess.run([sys.executable, "-m", "logsense", "analyze", str(path), "--format", "json"],
                             capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    end = json.loads(tail.stdout.splitlines()[-1])
    report = json.loads(analyze.stdout)
    root = next((d for d in report["diagnoses"] if d["root"]), None)
    assert end["event"] == "end" and end["status"] == report["status"]
    assert end["cause"] == (root["cause"] if root else None) and end["rule"] == (root["rule"] if root else None)
    assert end["confidence"] == (root["confidence"] if root else None)
    assert tail.returncode == analyze.returncode
    if root is not None:  # the last diagnosis printed is the verdict
        said = [json.loads(x) for x in tail.stdout.splitlines() if '"event": "diagnosis"' in x]
        assert said[-1]["diagnosis"]["rule"] == root["rule"]


def test_a_backlog_written_while_following_is_read_by_blocks_with_the_same_notes(rules, tmp_path, monkeypatch):
    """A writer faster than tail leaves a backlog at each look: it is read by blocks, and the notes, the verdict
    and its time are those of reading every line."""
    startup = (ROOT / "corpora" / "mission" / "flash-attn-cute-warmup.log").read_text().splitlines(keepends=True)
    cut = len(startup) // 2
    serving = [f"[2026-05-07 20:2{i % 10}:00] INFO:     127.0.0.1:{40000 + i} - \"GET /health HTTP/1.1\" 200 OK\n"
               for i in range(3000)]
    parts = ["".join(startup[:20]), "".join(startup[20:cut]) + "".join(serving), "".join(startup[cut:])]
    monkeypatch.setattr(stream, "CATCH_UP_MIN", 2048)

    def follow(by_blocks: bool):
        path = tmp_path / f"live-{by_blocks}.log"
        path.write_text("")
        new = analysis_factory(rules)
        source = FileSource(str(path), rules, from_start=True, follow=True, keep=keep_for(new()) if by_blocks else None)
        session = Session(rules, new, WallClock(), source_name="live")
        notes, gaps = [], 0
        try:
            for part in parts:
                with open(path, "a") as fh:
                    fh.write(part)
                while True:
                    items = source.read(0.0)
                    if not items:
                        break
                    gaps += sum(isinstance(item, stream.Gap) for item in items)
                    for item in items:
                        notes += session.feed(item)
                notes += session.tick(caught_up=True)
            notes += session.tick(caught_up=True, ended=True)
        finally:
            source.close()
        said = [(n.kind, sorted((k, repr(v)) for k, v in n.fields.items())) for n in notes if n.kind != "status"]
        return said, [(v.outcome, v.seconds, v.report.lines) for v in session.verdicts], gaps

    lines, lines_verdicts, _ = follow(False)
    blocks, blocks_verdicts, gaps = follow(True)
    assert gaps > 0
    assert blocks == lines and blocks_verdicts == lines_verdicts
