"""`logsense tail` as a process: following a journal while it is appended to, an open traceback
said after a quiet time, Ctrl-C and a closed pipe ending it cleanly."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time

import pytest
from journal_helpers import (
    BACKENDS,
    OOM_TRACEBACK,
    T0,
    UNIT,
    entry,
    env,
    needs_journal_remote,
    oom_tail,
    ready_tail,
    rule_pack,
    sglang,
    startup,
    tail_cmd,
    unit_entries,
    write_journal,
)

from conftest import ROOT


class Proc:
    """A `logsense tail` process whose stdout lines are read by a thread, with a deadline per wait."""

    def __init__(self, args: list[str], backend: str | None = None) -> None:
        self.p = subprocess.Popen(tail_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env(backend), cwd=ROOT)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put((time.monotonic(), line))
        self.lines.put((time.monotonic(), None))

    def wait_for(self, pred, timeout: float = 10.0) -> tuple[float, str]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"not seen in {timeout} s; output so far:\n{''.join(self.seen)}")
            try:
                at, line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"ended (rc={self.p.wait()}) first; output:\n{''.join(self.seen)}"
                                     f"\nstderr:\n{self.p.stderr.read() if self.p.stderr else ''}")
            self.seen.append(line)
            if pred(line):
                return at, line

    def event(self, name: str, timeout: float = 10.0, **match) -> dict:
        def pred(line: str) -> bool:
            try:
                e = json.loads(line)
            except ValueError:
                return False
            return e.get("event") == name and all(e.get(k) == v for k, v in match.items())

        return json.loads(self.wait_for(pred, timeout)[1])

    def finish(self, timeout: float = 10.0) -> tuple[int, str]:
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise
        err = self.p.stderr.read() if self.p.stderr else ""
        return rc, err


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ending", ["oom", "ready", "timeout"])
def test_follow_a_journal_while_it_is_appended(tmp_path, backend, ending):
    pack = rule_pack(tmp_path)
    j = tmp_path / "live.journal"
    write_journal(j, unit_entries(startup()[:3]))
    timeout = "2s" if ending == "timeout" else "20s"
    p = Proc(["--file", str(j), UNIT, "--until-ready", "--timeout", timeout, "--format", "jsonl",
              "--only-rules", str(pack)], backend)
    p.event("phase", phase="distributed_init")
    write_journal(j, [entry(m, at) for at, m in startup()[3:]])  # journal-remote again on the same file appends
    p.event("phase", phase="cuda_graph_capture")
    if ending == "oom":
        write_journal(j, [entry(m, at) for at, m in oom_tail()])
        d = p.event("diagnosis")
        assert d["diagnosis"]["cause"] == "cuda_oom_cuda_graph"
        rc, err = p.finish()
        assert rc == 1, err
    elif ending == "ready":
        write_journal(j, [entry(m, at) for at, m in ready_tail()])
        p.event("ready")
        rc, err = p.finish()
        assert rc == 0, err
    else:
        assert p.event("timeout")["phase"] == "cuda_graph_capture"
        rc, err = p.finish()
        assert rc == 3, err
    assert "Traceback" not in err


def test_an_open_traceback_is_said_after_a_quiet_time(tmp_path):
    pack = rule_pack(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("".join(m + "\n" for _, m in startup()))
    p = Proc([str(log), "--format", "jsonl", "--only-rules", str(pack)])
    p.event("phase", phase="cuda_graph_capture")
    with open(log, "a") as fh:
        fh.write(sglang(T0 + 120, OOM_TRACEBACK, "TP0") + "\n")  # no line follows it
    t0 = time.monotonic()
    at, _ = p.wait_for(lambda line: '"diagnosis"' in line)
    waited = at - t0
    assert 0.3 < waited < 3, waited  # closed by the quiet time (0.5 s), not by a next line
    assert p.p.poll() is None  # still following
    p.p.send_signal(signal.SIGINT)
    rc, err = p.finish()
    assert rc == 130 and "Traceback" not in err
    rest = list(iter(lambda: p.lines.get(timeout=5)[1], None))
    end = json.loads(rest[-1])
    assert end["event"] == "end" and end["reason"] == "interrupted" and end["exit"] == 130


def _startup_journal(tmp_path):
    """A rule pack and a journal holding one startup of the unit."""
    j = tmp_path / "j.journal"
    write_journal(j, unit_entries(startup()))
    return rule_pack(tmp_path), j


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_on_a_journal_ends_cleanly(tmp_path, backend):
    pack, j = _startup_journal(tmp_path)
    p = Proc(["--file", str(j), UNIT, "--only-rules", str(pack)], backend)
    p.wait_for(lambda line: "cuda_graph_capture" in line)
    p.p.send_signal(signal.SIGINT)
    rc, err = p.finish()
    assert rc == 130
    assert err == ""


def _pipe_to_head(args: list[str], backend: str | None = None) -> tuple[int, str, str]:
    p1 = subprocess.Popen(tail_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(backend),
                          cwd=ROOT, text=True)
    p2 = subprocess.Popen(["head", "-1"], stdin=p1.stdout, stdout=subprocess.PIPE, text=True)
    assert p1.stdout is not None
    p1.stdout.close()  # only head reads it now
    first, _ = p2.communicate(timeout=10)
    try:
        rc = p1.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p1.kill()
        p1.wait()
        raise
    return rc, first, p1.stderr.read() if p1.stderr else ""


def test_a_closed_pipe_ends_it_cleanly_on_a_file(tmp_path):
    pack = rule_pack(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("".join(m + "\n" for _, m in startup()))
    rc, first, err = _pipe_to_head([str(log), "--only-rules", str(pack)])
    assert first.startswith("following")
    assert rc == 0 and err == ""


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closed_pipe_ends_it_cleanly_on_a_journal(tmp_path, backend):
    pack, j = _startup_journal(tmp_path)
    rc, first, err = _pipe_to_head(["--file", str(j), UNIT, "--format", "jsonl", "--only-rules", str(pack)], backend)
    assert json.loads(first)["event"] == "follow"
    assert rc == 0 and err == ""


def test_verbose_says_which_reader(tmp_path):
    pack = rule_pack(tmp_path)
    j = tmp_path / "none.journal"
    j.write_bytes(b"x")
    p = subprocess.run(tail_cmd("--file", str(j), UNIT, "--no-follow", "-v", "--only-rules", str(pack)),
                       capture_output=True, text=True, env=env("journalctl"), cwd=ROOT, timeout=20)
    assert "reading the journal with journalctl -o json (LOGSENSE_JOURNAL_BACKEND=journalctl)" in p.stderr
    assert p.returncode == 2 and "Traceback" not in p.stderr
