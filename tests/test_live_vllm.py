"""End to end against a real vLLM (CPU build) on this host: tail, --probe, analyze and diff on live startups.

Needs the pinned vLLM venv that tools/vllm_env.sh builds (.ci/run does). Without it these tests
skip, except under CI (CI=true), where a missing venv is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "corpora" / "recorded" / "vllm-0.32.0"


def _recorder():
    spec = importlib.util.spec_from_file_location("record_startups", REPO / "tools" / "record_startups.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["record_startups"] = module
    spec.loader.exec_module(module)
    return module


recorder = _recorder()
READY_LINE = recorder.SERVERS["vllm"].ready_line


@pytest.fixture(scope="module")
def vllm_env():
    """(venv, models) of the pinned vLLM install; skip or fail when it is absent."""
    venv = recorder.venv_path("vllm")
    if not (venv / ".logsense-complete").is_file():
        message = f"no vLLM venv at {venv}: run tools/vllm_env.sh"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI: " + message)
        pytest.skip(message)
    return venv, recorder.ensure_models(venv, "vllm")


class Server:
    """A vLLM configuration of the matrix started for real, writing its log to a file."""

    def __init__(self, name: str, env, workdir: Path) -> None:
        venv, models = env
        self.config = next(c for c in recorder.load_matrix(server="vllm") if c.name == name)
        self.launch = recorder.prepare(self.config, venv, models, workdir / "scratch")
        self.log_path = workdir / "server.log"
        self.log = open(self.log_path, "wb")  # closed in stop()
        self._holder = recorder.port_holder(self.launch.port, self.config.listen)
        self._holder.__enter__()
        self.proc = recorder.start(self.launch, self.log, workdir / "scratch")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.launch.port}"

    def ready_at(self, deadline: float) -> float | None:
        """When the ready line showed up in the file (monotonic), or None if the server ended first."""
        while time.monotonic() < deadline:
            if READY_LINE in self.log_path.read_bytes():
                return time.monotonic()
            if self.proc.poll() is not None:
                return None
            time.sleep(0.2)
        return None

    def stop(self) -> None:
        if self.log.closed:
            return
        recorder.kill_group(self.proc)
        self.proc.wait()
        self.log.close()
        self._holder.__exit__(None, None, None)


@pytest.fixture
def serve(vllm_env, tmp_path):
    started: list[Server] = []

    def _serve(name: str) -> Server:
        workdir = tmp_path / name
        workdir.mkdir()
        server = Server(name, vllm_env, workdir)
        started.append(server)
        return server

    yield _serve
    for server in started:
        server.stop()


def _logsense(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "logsense", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _analyze(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "logsense", "analyze", str(path), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


def test_healthy_vllm_tail_probe_and_killed(serve):
    """A healthy vLLM start: tail exits 0 at uvicorn's ready line, --probe gets a chat answer, then a kill."""
    server = serve("healthy-llama-head-dim-32")  # vLLM's CPU attention serves head size 32, not the tiny models' 16
    tail = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "8m", "--format", "jsonl")
    ready_at = server.ready_at(time.monotonic() + 480)
    assert ready_at is not None, "vLLM never printed its ready line:\n" + server.log_path.read_text()[-3000:]
    out, err = tail.communicate(timeout=60)
    lag = time.monotonic() - ready_at
    assert tail.returncode == 0, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    assert lag < 10, f"tail took {lag:.1f} s after the ready line"
    assert _jsonl(out)[-1]["event"] == "end"

    probed = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "3m", "--format", "jsonl",
                       "--probe", server.url, "--probe-every", "2s", "--probe-timeout", "60s")
    out, err = probed.communicate(timeout=240)
    assert probed.returncode == 0, f"tail --probe exit {probed.returncode}\n{out[-2000:]}\n{err[-2000:]}"

    report = _analyze(server.log_path)
    assert report["status"] == "ready", report
    assert report["facts"]["server"] == "vllm", report["facts"]

    server.stop()  # the log still says ready; nothing answers any more
    dead = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "2m", "--format", "jsonl",
                     "--probe", server.url, "--probe-every", "1s", "--probe-tries", "2", "--probe-timeout", "2s")
    out, err = dead.communicate(timeout=120)
    assert dead.returncode == 4, f"tail --probe on a killed server: exit {dead.returncode}\n{out[-2000:]}\n{err[-2000:]}"


@pytest.mark.parametrize(("name", "cause"), [("port-taken", "port_in_use"),
                                             ("flag-unknown", "invalid_server_argument"),
                                             ("max-model-len-above-model", "context_length_invalid")])
def test_tail_until_ready_names_the_cause_analyze_names(serve, name, cause):
    server = serve(name)
    tail = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "5m", "--format", "jsonl")
    out, err = tail.communicate(timeout=320)
    assert tail.returncode == 1, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    end = _jsonl(out)[-1]
    assert end["event"] == "end" and end["cause"] == cause, end
    try:  # the finished file, as analyze sees it afterwards
        server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.stop()  # after a bind error uvicorn can wait in shutdown for good
    report = _analyze(server.log_path)
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
