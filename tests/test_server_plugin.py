"""A third server is a folder: ToyServe (tests/fixtures/servers/toyserve, nothing of it anywhere else) runs
through analyze, tail, history, diff, check and stats once LOGSENSE_SERVERS names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parent / "fixtures" / "servers"
TOY = PLUGINS / "toyserve"
LOGS = TOY / "logs"


def logsense(*args: str, plugin: str | None = "toyserve") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOGSENSE_SERVERS", "PYTHONPATH")}
    if plugin is not None:
        env |= {"LOGSENSE_SERVERS": plugin, "PYTHONPATH": str(PLUGINS)}
    return subprocess.run([sys.executable, "-m", "logsense", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.fixture(scope="module")
def two_attempts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The healthy startup, then the failing one, in one file: a unit started twice."""
    path = tmp_path_factory.mktemp("toy") / "toyserve.log"
    path.write_text((LOGS / "healthy.log").read_text() + (LOGS / "weights-oom.log").read_text())
    return path


def test_analyze_reads_its_format_phases_facts_and_rules():
    run = logsense("analyze", "--format", "json", str(LOGS / "weights-oom.log"))
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert (report["status"], report["phase"]) == ("failed", "weight_loading")
    assert report["facts"]["server"] == "toyserve" and report["facts"]["server_version"] == "1.2.0"
    assert [d["rule"] for d in report["diagnoses"] if d["root"]] == ["toyserve-weights-do-not-fit"]
    healthy = logsense("analyze", "--format", "json", str(LOGS / "healthy.log"))
    assert healthy.returncode == 0 and json.loads(healthy.stdout)["status"] == "ready"


def test_tail_gives_analyzes_verdict():
    run = logsense("tail", str(LOGS / "weights-oom.log"), "--no-follow")
    assert run.returncode == 1, run.stderr
    assert "cuda_oom_weight_loading" in run.stdout and "--gpu-share" in run.stdout


def test_history_counts_its_attempts_and_the_flags_changed(two_attempts: Path):
    run = logsense("history", str(two_attempts), "--format", "json")
    assert run.returncode == 1, run.stderr
    rows = json.loads(run.stdout)
    assert [r["outcome"] for r in rows] == ["ready", "failed"]
    assert rows[1]["cause"] == "cuda_oom_weight_loading"


def test_diff_parts_the_two_runs():
    run = logsense("diff", "--format", "json", str(LOGS / "healthy.log"), str(LOGS / "weights-oom.log"))
    assert run.returncode in (0, 1), run.stderr
    assert "cannot place weights" in run.stdout


def test_check_runs_its_rule_examples_and_labelled_logs():
    run = logsense("check", str(TOY / "rules"), str(LOGS))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 incidents, 3 rules checked: 0 problems" in run.stdout


def test_stats_rows_name_its_causes():
    run = logsense("stats", "--format", "json", "-j", "1", str(LOGS / "healthy.log"), str(LOGS / "weights-oom.log"))
    assert run.returncode == 0, run.stderr
    causes = sorted(r["cause"] for r in json.loads(run.stdout))
    assert causes == ["cuda_oom_weight_loading", "healthy"]


def test_without_the_plugin_its_rules_never_fire():
    run = logsense("analyze", "--format", "json", str(LOGS / "weights-oom.log"), plugin=None)
    assert all(not d["rule"].startswith("toyserve") for d in json.loads(run.stdout)["diagnoses"])


def test_a_plugin_that_cannot_be_loaded_is_said():
    run = logsense("analyze", str(LOGS / "healthy.log"), plugin="no_such_server_module")
    assert run.returncode not in (0, 70) and "Traceback" not in run.stderr
    assert "LOGSENSE_SERVERS" in run.stderr and "no_such_server_module" in run.stderr
