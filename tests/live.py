"""What the live-server tests share: the recorder's matrix started for real, and logsense run on its log.

Both servers (SGLang, vLLM) go through tools/record_startups.py, so a test starts a configuration
exactly as the recorder records it.
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
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_recorder() -> ModuleType:
    if "record_startups" in sys.modules:
        return sys.modules["record_startups"]
    spec = importlib.util.spec_from_file_location("record_startups", REPO / "tools" / "record_startups.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["record_startups"] = module
    spec.loader.exec_module(module)
    return module


recorder = _load_recorder()


def server_env(server: str, script: str) -> tuple[Path, Path]:
    """(venv, models) of the pinned install of `server`; skip, or fail under CI, when it is absent."""
    venv = recorder.venv_path(server)
    if not (venv / ".logsense-complete").is_file():
        message = f"no {server} venv at {venv}: run {script}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI: " + message)
        pytest.skip(message)
    return venv, recorder.ensure_models(venv, server)


class Server:
    """A configuration of the matrix started for real, writing its log to a file."""

    def __init__(self, server: str, name: str, env: tuple[Path, Path], workdir: Path) -> None:
        venv, models = env
        self.config = next(c for c in recorder.load_matrix(server=server) if c.name == name)
        self.ready_line: bytes = recorder.SERVERS[server].ready_line
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
            if self.ready_line in self.log_path.read_bytes():
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


def starter(server: str, env: tuple[Path, Path], tmp_path: Path):
    """A `serve(name)` for a fixture to yield; `stop_all` ends what it started."""
    started: list[Server] = []

    def serve(name: str) -> Server:
        workdir = tmp_path / name
        workdir.mkdir()
        started.append(Server(server, name, env, workdir))
        return started[-1]

    def stop_all() -> None:
        for s in started:
            s.stop()

    return serve, stop_all


def logsense_process(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "logsense", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def analyze_json(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "logsense", "analyze", str(path), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


def tail_and_analyze_agree(server: Server, cause: str) -> dict:
    """tail --until-ready on the live log and analyze on the finished file both name `cause`, with the
    same fixes; returns analyze's root diagnosis."""
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
    return roots[0]


def diff_names(good: Path, bad: Server, *words: str) -> None:
    """`logsense diff` of a recorded healthy start against a failed live one names one of `words`."""
    bad.proc.wait(timeout=300)
    done = subprocess.run([sys.executable, "-m", "logsense", "diff", str(good), str(bad.log_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert any(w in done.stdout for w in words), done.stdout


def ready_probed_then_killed(server: Server, start_timeout: float, probe: tuple[str, ...]) -> None:
    """A healthy start: tail exits 0 soon after the ready line, tail --probe (`probe`: its extra options)
    gets an answer, and once the server is killed, the same ready log probed exits 4."""
    tail = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", f"{int(start_timeout)}s",
                            "--format", "jsonl")
    ready_at = server.ready_at(time.monotonic() + start_timeout)
    assert ready_at is not None, "the server never printed its ready line:\n" + server.log_path.read_text()[-3000:]
    out, err = tail.communicate(timeout=60)
    lag = time.monotonic() - ready_at
    assert tail.returncode == 0, f"tail exit {tail.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    assert lag < 10, f"tail took {lag:.1f} s after the ready line"
    assert jsonl(out)[-1]["event"] == "end"

    probed = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "3m", "--format", "jsonl",
                              "--probe", server.url, "--probe-every", "2s", *probe)
    out, err = probed.communicate(timeout=240)
    assert probed.returncode == 0, f"tail --probe exit {probed.returncode}\n{out[-2000:]}\n{err[-2000:]}"

    server.stop()  # the log still says ready; nothing answers any more
    dead = logsense_process("tail", str(server.log_path), "--until-ready", "--timeout", "2m", "--format", "jsonl",
                            "--probe", server.url, "--probe-every", "1s", "--probe-tries", "2", "--probe-timeout", "2s")
    out, err = dead.communicate(timeout=120)
    assert dead.returncode == 4, f"tail --probe on a killed server: exit {dead.returncode}\n{out[-2000:]}\n{err[-2000:]}"
