"""One duration format: analyze, tail, diff, history and stats all write a span of time as report.text.duration does."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from logsense.model import Phase, Report, Status
from logsense.report import live
from logsense.report import text as report_text
from logsense.report.term import Terminal
from logsense.report.text import duration

PACKAGE = Path(__file__).resolve().parent.parent / "logsense"


@pytest.mark.parametrize("seconds, shown", [
    (None, "?"), (0.4, "0 s"), (12, "12 s"), (89.4, "89 s"), (90, "1.5 min"), (120, "2.0 min"), (3600, "60.0 min"),
])
def test_duration(seconds, shown):
    assert duration(seconds) == shown


def _render(thing) -> str:
    buf = io.StringIO()
    Terminal(buf, width=200).print(thing)
    return buf.getvalue()


def test_analyze_and_tail_write_the_same_span_the_same_way():
    phases = (Phase("weight_loading", "2026-11-20 10:00:00", "2026-11-20 10:02:00", 3),
              Phase("serving", "2026-11-20 10:02:00", None, 9))
    report = Report("x.log", Status.READY, "serving", phases, (), {}, 9)
    analyzed = _render(report_text.phase_summary(report))
    tailed = _render(live.timeline(phases, 120.0))
    assert "weight_loading 2.0 min" in analyzed
    assert "weight_loading 2.0 min" in tailed and "ready at 2.0 min" in tailed


def test_no_module_formats_minutes_itself():
    own = re.compile(r"/\s*60\b")  # seconds turned into minutes
    where = [f"{p.relative_to(PACKAGE.parent)}:{i}" for p in sorted(PACKAGE.rglob("*.py"))
             if p != PACKAGE / "report" / "text.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if own.search(line) and "min" in line]
    assert where == [], "format durations with logsense.report.text.duration"


def test_a_phase_on_two_clocks_is_read_in_one_year_and_jsonl_prints_no_placeholder_year():
    """The last phase of the seed's Python.h log starts on SGLang's stamp (with a year) and ends on a traceback line
    that has only journalctl's (without one): one clock, never a phase that ends before it starts or year 2000."""
    import json
    import subprocess
    import sys

    log = PACKAGE.parent / "corpora" / "mission" / "python-h-missing.log"
    p = subprocess.run([sys.executable, "-m", "logsense", "tail", str(log), "--no-follow", "--format", "jsonl"],
                       capture_output=True, text=True, timeout=120)
    assert "2000-" not in p.stdout
    end = [json.loads(x) for x in p.stdout.splitlines() if '"end"' in x][-1]
    assert all(ph["seconds"] is not None and ph["seconds"] >= 0 for ph in end["phases"]), end["phases"]
    analyzed = json.loads(subprocess.run([sys.executable, "-m", "logsense", "analyze", "-f", "json", str(log)],
                                         capture_output=True, text=True, timeout=120).stdout)
    assert [ph["seconds"] for ph in analyzed["phases"]] == [ph["seconds"] for ph in end["phases"]]


@pytest.mark.parametrize("name", ["mission/python-h-missing.log", "mission/flash-attn-cute-warmup.log",
                                  # two loggers of one server a second apart: the failure stamped before the start
                                  "constructed/flashinfer-too-old.log"])
def test_tail_and_history_give_one_startup_the_same_time(name):
    """A file's only startup is read from its top by tail, as history and analyze read it: the unit's start
    and an import's warnings before server_args are its own, so both say the same time to failure."""
    import json
    import subprocess
    import sys

    log = PACKAGE.parent / "corpora" / name
    run = [sys.executable, "-m", "logsense"]
    tailed = subprocess.run([*run, "tail", str(log), "--no-follow", "--format", "jsonl"], capture_output=True,
                            text=True, timeout=120).stdout.splitlines()
    events = [json.loads(x) for x in tailed]
    assert events[0]["start"].startswith("from its start")
    verdict = next(e for e in events if e["event"] == "verdict")
    rows = json.loads(subprocess.run([*run, "history", str(log), "-f", "json"], capture_output=True, text=True,
                                     timeout=120).stdout)
    assert len(rows) == 1 and rows[0]["seconds"] == verdict["seconds"]
    stats = json.loads(subprocess.run([*run, "stats", str(log), "-f", "json"], capture_output=True, text=True,
                                      timeout=120).stdout)
    assert stats[0]["time_to_failure"] == verdict["seconds"]


@pytest.mark.slow
def test_one_time_to_failure_for_every_single_startup_in_the_corpus(capsys):
    """tail, history and stats give every failed single-startup corpus log the same time to failure: from its
    first timed line to its root cause's first evidence line."""
    import json

    from logsense.batch import collect
    from logsense.commands import history, tail

    logs = sorted(p for p in (PACKAGE.parent / "corpora").rglob("*.log"))
    compared, differ = 0, []
    for log in logs:
        history.main(target=str(log), fmt="json")
        rows = json.loads(capsys.readouterr().out)
        if len(rows) != 1 or rows[0]["outcome"] != "failed":
            continue
        tail.main(target=str(log), fmt="jsonl", follow=False)
        verdicts = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"verdict"' in x]
        stats = collect([str(log)], jobs=1)[0]["time_to_failure"]
        compared += 1
        if not (verdicts[-1]["seconds"] == rows[0]["seconds"] == stats):
            differ.append((log.name, verdicts[-1]["seconds"], rows[0]["seconds"], stats))
    assert compared > 300
    assert not differ, differ[:10]
