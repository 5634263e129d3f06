"""End to end against a real vLLM (CPU build) on this host: tail, --probe, analyze and diff on live startups.

Needs the pinned vLLM venv that tools/vllm_env.sh builds (.ci/run does). Without it these tests
skip, except under CI (CI=true), where a missing venv is a failure.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from live import analyze_json, jsonl, logsense_process, server_env, starter

pytestmark = pytest.mark.slow


RECORDED = Path(__file__).resolve().parents[1] / "corpora" / "recorded" / "vllm-0.32.0"


@pytest.fixture(scope="module")
def vllm_env():
    return server_env("vllm", "tools/vllm_env.sh")


@pytest.fixture
def serve(vllm_env, tmp_path):
    serve, stop_all = starter("vllm", vllm_env, tmp_path)
    yield serve
    stop_all()


def test_healthy_vllm_tail_probe_and_killed(serve):
    """A healthy vLLM start: tail exits 0 at uvicorn's ready line, --probe gets a chat answer, then a kill."""
    server = serve("healthy-llama-head-dim-32")  # vLLM's CPU attention serves head size 32, not the tiny models' 16
    tail = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "8m", "--format", "jsonl")
    ready_at = server.ready_at(time.monotonic() + 480)
    assert ready_at is not None, "vLLM never printed its ready line:\n" + server.log_path.read_text()[-3000:]
    out, err = tail.communicate(timeout=60)
    lag = time.monotonic() - ready_at
    assert tail.returncode == 0, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    assert lag < 10, f"tail took {lag:.1f} s after the ready line"
    assert jsonl(out)[-1]["event"] == "end"

    probed = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "3m", "--format", "jsonl",
                       "--probe", server.url, "--probe-every", "2s", "--probe-timeout", "60s")
    out, err = probed.communicate(timeout=240)
    assert probed.returncode == 0, f"tail --probe exit {probed.returncode}\n{out[-2000:]}\n{err[-2000:]}"

    report = analyze_json(server.log_path)
    assert report["status"] == "ready", report
    assert report["facts"]["server"] == "vllm", report["facts"]

    server.stop()  # the log still says ready; nothing answers any more
    dead = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "2m", "--format", "jsonl",
                     "--probe", server.url, "--probe-every", "1s", "--probe-tries", "2", "--probe-timeout", "2s")
    out, err = dead.communicate(timeout=120)
    assert dead.returncode == 4, f"tail --probe on a killed server: exit {dead.returncode}\n{out[-2000:]}\n{err[-2000:]}"


@pytest.mark.parametrize(("name", "cause"), [("port-taken", "port_in_use"),
                                             ("flag-unknown", "invalid_server_argument"),
                                             ("max-model-len-above-model", "context_length_invalid")])
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
    fixes = " ".join(f["value"] for f in roots[0].get("fixes", []))
    assert "--mem-fraction-static" not in fixes and "--context-length" not in fixes, fixes  # SGLang's flags


def test_diff_names_the_flag_that_differs(serve):
    good = RECORDED / "healthy-gpt2.log"  # the same model, recorded
    bad = serve("max-model-len-above-model")
    bad.proc.wait(timeout=300)
    done = subprocess.run([sys.executable, "-m", "logsense", "diff", str(good), str(bad.log_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "max_model_len" in done.stdout or "--max-model-len" in done.stdout, done.stdout
