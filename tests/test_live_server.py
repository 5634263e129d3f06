"""End to end against a real SGLang server on this CPU host: tail, --probe and diff on live startups.

Needs the pinned SGLang venv that tools/sglang_env.sh builds (.ci/run does). Without it these tests
skip, except under CI (CI=true), where a missing venv is a failure.
"""

from __future__ import annotations

import pytest
from live import (
    REPO,
    diff_names,
    ready_probed_then_killed,
    server_env,
    starter,
    tail_and_analyze_agree,
)

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
    ready_probed_then_killed(serve("healthy-gpt2"), 300, ("--probe-api", "generate", "--probe-timeout", "30s"))


@pytest.mark.parametrize(("name", "cause"), [("port-taken", "port_in_use"), ("flag-unknown", "invalid_server_argument")])
def test_tail_until_ready_names_the_cause_analyze_names(serve, name, cause):
    tail_and_analyze_agree(serve(name), cause)


def test_diff_names_the_flag_that_differs(serve):
    good = REPO / "corpora" / "recorded" / "sglang-0.5.23" / "healthy-gpt2.log"  # the same model, recorded
    diff_names(good, serve("context-length-above-model"), "context_length", "--context-length")
