"""End to end against a real SGLang server on this CPU host: tail, --probe and diff on live startups.

Needs the pinned SGLang venv that tools/sglang_env.sh builds (.ci/run does). Without it these tests
skip, except under CI (CI=true), where a missing venv is a failure.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from live import REPO, analyze_json, jsonl, logsense_process, server_env, starter

pytestmark = pytest.mark.slow




@pytest.fixture(scope="module")
def sglang_env():
    return server_env("sglang", "tools/sglang_env.sh")


@pytest.fixture
def serve(sglang_env, tmp_path):
    serve, stop_all = starter("sglang", sglang_env, tmp_path)
    yield serve
    stop_all()


def test_healthy_server_tail_probe_and_killed(serve):
    """One healthy start (each takes minutes here): tail exits 0 at ready, --probe gets answers, then a kill."""
    server = serve("healthy-gpt2")
    tail = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "5m", "--format", "jsonl")
    ready_at = server.ready_at(time.monotonic() + 300)
    assert ready_at is not None, "the healthy server never printed its ready line:\n" + server.log_path.read_text()[-3000:]
    out, err = tail.communicate(timeout=60)
    lag = time.monotonic() - ready_at
    assert tail.returncode == 0, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    assert lag < 10, f"tail took {lag:.1f} s after the ready line"
    assert jsonl(out)[-1]["event"] == "end"

    probed = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "3m", "--format", "jsonl",
                       "--probe", server.url, "--probe-api", "generate", "--probe-every", "2s", "--probe-timeout", "30s")
    out, err = probed.communicate(timeout=240)
    assert probed.returncode == 0, f"tail --probe exit {probed.returncode}\n{out[-2000:]}\n{err[-2000:]}"

    server.stop()  # the log still says ready; nothing answers any more
    dead = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "2m", "--format", "jsonl",
                     "--probe", server.url, "--probe-every", "1s", "--probe-tries", "2", "--probe-timeout", "2s")
    out, err = dead.communicate(timeout=120)
    assert dead.returncode == 4, f"tail --probe on a killed server: exit {dead.returncode}\n{out[-2000:]}\n{err[-2000:]}"


@pytest.mark.parametrize(("name", "cause"), [("port-taken", "port_in_use"), ("flag-unknown", "invalid_server_argument")])
def test_tail_until_ready_names_the_cause_analyze_names(serve, name, cause):
    server = serve(name)
    tail = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "5m", "--format", "jsonl")
    out, err = tail.communicate(timeout=320)
    assert tail.returncode == 1, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    end = jsonl(out)[-1]
    assert end["event"] == "end" and end["cause"] == cause, end
    try:  # the finished file, as analyze sees it afterwards
        server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.stop()  # after a bind error uvicorn can wait in shutdown for good
    report = analyze_json(server.log_path)
    roots = [d for d in report.get("diagnoses", []) if d.get("root")]
    assert roots and roots[0]["cause"] == cause, report
    assert end["diagnosis"]["cause"] == roots[0]["cause"]
    assert [f["value"] for f in end["diagnosis"].get("fixes", [])] == [f["value"] for f in roots[0].get("fixes", [])]


def test_diff_names_the_flag_that_differs(serve):
    good = REPO / "corpora" / "recorded" / "sglang-0.5.23" / "healthy-gpt2.log"  # the same model, recorded
    bad = serve("context-length-above-model")
    bad.proc.wait(timeout=300)
    done = subprocess.run([sys.executable, "-m", "logsense", "diff", str(good), str(bad.log_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "context_length" in done.stdout or "--context-length" in done.stdout, done.stdout
