"""The ready phase is whichever phase the phase file marks `ready: true`, whatever its name."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from phase_helpers import copy_phase_files, phase_files

from logsense.commands import tail
from logsense.diff import phase_rows
from logsense.model import Status
from logsense.pipeline import run
from logsense.report import text as report_text
from logsense.report.live import timeline
from logsense.report.term import Terminal
from logsense.rules import RuleSet, load_rules

# a traceback the server survived: it is dropped once the server is ready, not a failure
LOG = """\
[2026-11-20 10:00:00] server_args=ServerArgs(model_path='m', tokenizer_path='m')
[2026-11-20 10:00:01 TP0] Load weight begin. avail mem=78.00 GB
[2026-11-20 10:00:02 TP0] Traceback (most recent call last):
[2026-11-20 10:00:02 TP0]   File "x.py", line 1, in f
[2026-11-20 10:00:02 TP0] RuntimeError: a retry that the server survived
[2026-11-20 10:00:30] The server is fired up and ready to roll!
"""


@pytest.fixture
def pack(tmp_path) -> Path:
    """The bundled phases with the ready phases named 'up' (SGLang's and vLLM's)."""
    d = tmp_path / "pack"
    copy_phase_files(d)
    files = phase_files(d)
    assert sum(f.read_text(encoding="utf-8").count("- phase: serving\n") for f in files) == 3
    for f in files:
        f.write_text(f.read_text(encoding="utf-8").replace("- phase: serving\n", "- phase: up\n"), encoding="utf-8")
    (d / "rules.yaml").write_text("rules: []\n", encoding="utf-8")
    return d


@pytest.fixture
def renamed(pack) -> RuleSet:
    return load_rules(only=[str(pack)])


def test_a_ready_phase_of_another_name_makes_the_startup_ready(renamed):
    assert renamed.phase_names[-2:] == ("up", "stopped")  # the stop phase is named after the ready one
    report = run(LOG.splitlines(), renamed)
    assert report.status is Status.READY and report.root is None
    assert [(p.name, p.ready) for p in report.phases] == [("server_args", False), ("weight_loading", False), ("up", True)]


def test_the_bundled_ready_phase_is_marked_ready():
    report = run(LOG.splitlines(), load_rules())
    assert report.status is Status.READY and [p.name for p in report.phases if p.ready] == ["serving"]


def test_the_reports_give_the_ready_phase_no_duration(renamed):
    report = run(LOG.splitlines(), renamed)
    buf = io.StringIO()
    report_text.render(report, Terminal(buf, width=200))
    assert "weight_loading 29 s → up\n" in buf.getvalue()
    assert "up" not in timeline(report.phases, 30.0).plain
    rows = {r.name: r for r in phase_rows(report, report, renamed.phase_names)}
    assert rows["up"].ready and not rows["weight_loading"].ready


def test_tail_says_ready_once_at_a_ready_phase_of_another_name(tmp_path, capsys, pack):
    log = tmp_path / "server.log"
    log.write_text(LOG, encoding="utf-8")
    code = tail.main(target=str(log), fmt="text", only_rules=[str(pack)], follow=False, from_start=True,
                     classifier=False)
    out = capsys.readouterr().out
    assert code == 0
    assert "✓ ready" in out and "server_args" in out and "▸ up" not in out
