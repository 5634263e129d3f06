"""End to end against a real SGLang server on this CPU host: tail, --probe and diff on live startups.

Needs the pinned SGLang venv that tools/sglang_env.sh builds (.ci/run does). Without it these tests
skip, except under CI (CI=true), where a missing venv is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
READY_LINE = b"The server is fired up and ready to roll!"


def _recorder():
    spec = importlib.util.spec_from_file_location("record_startups", REPO / "tools" / "record_startups.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["record_startups"] = module
    spec.loader.exec_module(module)
    return module


recorder = _recorder()


@pytest.fixture(scope="module")
def server_env():
    """(venv, models) of the pinned SGLang install; skip or fail when it is absent."""
    venv = recorder.venv_path()
    if not (venv / ".logsense-complete").is_file():
        message = f"no SGLang venv at {venv}: run tools/sglang_env.sh"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI: " + message)
        pytest.skip(message)
    return venv, recorder.ensure_models(venv)


def _config(name: str):
    return next(c for c in recorder.load_matrix() if c.name == name)


class Server:
    """A configuration of the matrix started for real, writing its log to a file."""

    def __init__(self, name: str, env, workdir: Path) -> None:
        venv, models = env
        self.config = _config(name)
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

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.log.closed:
            return
        recorder.kill_group(self.proc, sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            recorder.kill_group(self.proc)
            self.proc.wait()
        self.log.close()
        self._holder.__exit__(None, None, None)


@pytest.fixture
def serve(server_env, tmp_path):
    started: list[Server] = []

    def _serve(name: str) -> Server:
        workdir = tmp_path / name
        workdir.mkdir()
        server = Server(name, server_env, workdir)
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


def test_healthy_server_tail_probe_and_killed(serve):
    """One healthy start (each takes minutes here): tail exits 0 at ready, --probe gets answers, then a kill."""
    server = serve("healthy-gpt2")
    tail = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "5m", "--format", "jsonl")
    ready_at = server.ready_at(time.monotonic() + 300)
    assert ready_at is not None, "the healthy server never printed its ready line:\n" + server.log_path.read_text()[-3000:]
    out, err = tail.communicate(timeout=60)
    lag = time.monotonic() - ready_at
    assert tail.returncode == 0, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    assert lag < 10, f"tail took {lag:.1f} s after the ready line"
    assert _jsonl(out)[-1]["event"] == "end"

    probed = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "3m", "--format", "jsonl",
                       "--probe", server.url, "--probe-api", "generate", "--probe-every", "2s", "--probe-timeout", "30s")
    out, err = probed.communicate(timeout=240)
    assert probed.returncode == 0, f"tail --probe exit {probed.returncode}\n{out[-2000:]}\n{err[-2000:]}"

    server.stop()  # the log still says ready; nothing answers any more
    dead = _logsense("tail", str(server.log_path), "--until-ready", "--timeout", "2m", "--format", "jsonl",
                     "--probe", server.url, "--probe-every", "1s", "--probe-tries", "2", "--probe-timeout", "2s")
    out, err = dead.communicate(timeout=120)
    assert dead.returncode == 4, f"tail --probe on a killed server: exit {dead.returncode}\n{out[-2000:]}\n{err[-2000:]}"


@pytest.mark.parametrize(("name", "cause"), [("port-taken", "port_in_use"), ("flag-unknown", "invalid_server_argument")])
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


def test_diff_names_the_flag_that_differs(serve):
    good = REPO / "corpora" / "recorded" / "sglang-0.5.23" / "healthy-gpt2.log"  # the same model, recorded
    bad = serve("context-length-above-model")
    bad.proc.wait(timeout=300)
    done = subprocess.run([sys.executable, "-m", "logsense", "diff", str(good), str(bad.log_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "context_length" in done.stdout or "--context-length" in done.stdout, done.stdout
