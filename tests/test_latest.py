"""analyze reads a big log from its latest startup (logsense.latest): the same report as reading it whole.

The corpus logs are single startups, so the restarts are made here: a log followed by others (a
unit restarted with another config), or repeated (a crash loop). The search is forced on these
small files; the reference is the same process's block-scanner read of the whole file.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from logsense.analysis import analysis_pipeline, read_into
from logsense.report import json as report_json
from logsense.sources.recorded import open_recorded
from tests.conftest import CORPORA, HEALTHY, MODULE_MISSING

LOGS = sorted(CORPORA.rglob("*.log"))


def _report(rules, path: Path, monkeypatch, skip: bool) -> str:
    import logsense.latest

    monkeypatch.setattr(logsense.latest, "MIN_BYTES", 0 if skip else 1 << 62)
    monkeypatch.setattr(logsense.latest, "MIN_FED", 0)
    p = analysis_pipeline(rules)
    report, problems = read_into(p, str(path), latest=True)
    return report_json.dumps(report, problems)


def _joined(tmp_path: Path, parts: list[Path]) -> Path:
    out = tmp_path / "restarts.log"
    with open(out, "wb") as fh:
        for part in parts:
            data = part.read_bytes()
            fh.write(data if data.endswith(b"\n") else data + b"\n")
    return out


def _same(rules, path: Path, monkeypatch) -> None:
    _report(rules, LOGS[0], monkeypatch, skip=False)  # a process's first small log is fed whole: not the reference
    assert _report(rules, path, monkeypatch, skip=True) == _report(rules, path, monkeypatch, skip=False)


@pytest.mark.parametrize("i", range(0, len(LOGS), 25))
def test_a_crash_loop_reads_as_its_last_startup(rules, tmp_path, monkeypatch, i):
    _same(rules, _joined(tmp_path, [LOGS[i]] * 3), monkeypatch)


@pytest.mark.parametrize("i", range(3, len(LOGS), 25))
def test_restarts_with_other_logs_read_as_the_last(rules, tmp_path, monkeypatch, i):
    pick = random.Random(i)
    _same(rules, _joined(tmp_path, [LOGS[i], pick.choice(LOGS), pick.choice(LOGS)]), monkeypatch)


def _start(rules, path: Path):
    """`latest_start` on the file at `path`, which it must leave where it was."""
    from logsense.latest import latest_start

    fp, name = open_recorded(str(path))
    try:
        start = latest_start(fp, analysis_pipeline(rules), name)
        assert fp.tell() == 0
        return start
    finally:
        fp.close()


@pytest.fixture
def searched(monkeypatch):
    """The search made on any log, however small or sparse."""
    import logsense.latest

    monkeypatch.setattr(logsense.latest, "MIN_BYTES", 0)
    monkeypatch.setattr(logsense.latest, "MIN_FED", 0)


def test_the_search_finds_the_timelines_last_restart(rules, tmp_path, searched):
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text(HEALTHY)
    second.write_text(MODULE_MISSING)
    path = _joined(tmp_path, [first, second, first])
    start = _start(rules, path)
    assert start is not None
    assert start.line == len(HEALTHY.splitlines()) + len(MODULE_MISSING.splitlines()) + 1
    assert path.read_bytes()[start.offset:].startswith(b"[2026-11-20 10:00:00] server_args=")
    assert start.year == "2026"


def test_a_start_that_never_loaded_weights_is_no_restart(rules, tmp_path, searched):
    """Two server_args lines with no weights loaded between them are one startup (the timeline's rule)."""
    args = HEALTHY.splitlines()[0] + "\n"
    path = tmp_path / "twice.log"
    path.write_text(args + args + HEALTHY)
    assert _start(rules, path) is None


def test_an_indented_restart_line_is_read_whole(rules, tmp_path, searched):
    """A line whose reading could depend on the lines before it (indented, quoted) is not started from."""
    indented = "".join("    " + line + "\n" for line in HEALTHY.splitlines())
    path = tmp_path / "indented.log"
    path.write_text(indented + indented)
    assert _start(rules, path) is None


def test_a_log_mostly_passed_over_is_not_searched(rules, tmp_path, monkeypatch):
    """A log whose first block the pipeline mostly passes over is read whole: a search would cost more than it saves."""
    import logsense.latest

    monkeypatch.setattr(logsense.latest, "MIN_BYTES", 0)
    quiet = "".join(f"[2026-11-20 10:01:{i % 60:02d}] quiet line {i}\n" for i in range(200))
    path = tmp_path / "quiet.log"
    path.write_text(HEALTHY + quiet + HEALTHY + quiet)
    assert _start(rules, path) is None
    monkeypatch.setattr(logsense.latest, "MIN_FED", 0)
    assert _start(rules, path) is not None


@pytest.mark.slow
def test_every_corpus_log_in_a_crash_loop_and_after_others(rules, tmp_path, monkeypatch):
    pick = random.Random(0)
    for log in LOGS:
        _same(rules, _joined(tmp_path, [log] * 3), monkeypatch)
        _same(rules, _joined(tmp_path, [log, pick.choice(LOGS), pick.choice(LOGS)]), monkeypatch)
