"""End to end against a real vLLM (CPU build) on this host: tail, --probe, analyze and diff on live startups.

Needs the pinned vLLM venv that tools/vllm_env.sh builds (.ci/run does). Without it these tests
skip, except under CI (CI=true), where a missing venv is a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from live import (
    analyze_json,
    diff_names,
    ready_probed_then_killed,
    server_env,
    starter,
    tail_and_analyze_agree,
)

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
    ready_probed_then_killed(server, 480, ("--probe-timeout", "60s"))
    report = analyze_json(server.log_path)  # killed with SIGKILL: the log ends at ready
    assert report["status"] == "ready", report
    assert report["facts"]["server"] == "vllm", report["facts"]


@pytest.mark.parametrize(("name", "cause"), [("port-taken", "port_in_use"),
                                             ("flag-unknown", "invalid_server_argument"),
                                             ("max-model-len-above-model", "context_length_invalid")])
def test_tail_until_ready_names_the_cause_analyze_names(serve, name, cause):
    root = tail_and_analyze_agree(serve(name), cause)
    fixes = " ".join(f["value"] for f in root.get("fixes", []))
    assert "--mem-fraction-static" not in fixes and "--context-length" not in fixes, fixes  # SGLang's flags


def test_diff_names_the_flag_that_differs(serve):
    good = RECORDED / "healthy-gpt2.log"  # the same model, recorded
    diff_names(good, serve("max-model-len-above-model"), "max_model_len", "--max-model-len")
