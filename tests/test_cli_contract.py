"""The command line as scripts use it: exit codes, pipes, -h, --format, JSON that parses, rows never cut."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import HEALTHY, ROOT, run_cli

LOGSENSE = [sys.executable, "-m", "logsense"]


def run(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """A real process: for what only a process shows (pipes, signals, the terminal)."""
    return subprocess.run([*LOGSENSE, *args], capture_output=True, text=True, timeout=timeout, **kw)


def cli(*args: str):
    """The same command in this process, through the same error boundary: exit codes and output."""
    return run_cli(*args, text=True)


@pytest.fixture
def healthy(tmp_path):
    f = tmp_path / "healthy.log"
    f.write_text(HEALTHY)
    return f


def test_a_closed_pipe_after_healthy_reports_is_exit_0(healthy):
    # `| head -1` closes the pipe while analyze still writes healthy reports: exit 0, nothing on stderr
    args = [str(healthy)] * 1500
    writer = subprocess.Popen([*LOGSENSE, "analyze", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = writer.stdout.readline()
    writer.stdout.close()
    err = writer.stderr.read().decode()
    assert writer.wait(timeout=120) == 0, err
    assert b"ready" in first and err == ""


def test_a_closed_pipe_keeps_a_failure():
    """`analyze failing.log | head -1`: the reader stops early, the exit code is still the verdict (pipefail)."""
    log = ROOT / "corpora" / "mission" / "flash-attn-cute-warmup.log"
    for _ in range(3):
        writer = subprocess.Popen([*LOGSENSE, "analyze", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        writer.stdout.readline()
        writer.stdout.close()
        err = writer.stderr.read().decode()
        assert writer.wait(timeout=120) == 1, err
        assert "internal error" not in err


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_closed_pipe_keeps_tails_failure(fmt):
    """`tail failing.log --no-follow | head -1`: the rest is read unseen, and the exit code is the verdict."""
    log = ROOT / "corpora" / "mission" / "python-h-missing.log"
    writer = subprocess.Popen([*LOGSENSE, "tail", str(log), "--no-follow", "--format", fmt], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    writer.stdout.readline()
    writer.stdout.close()
    err = writer.stderr.read().decode()
    assert writer.wait(timeout=120) == 1, err
    assert "internal error" not in err


@pytest.mark.parametrize("data", [b"", b"\n\n", b"-- No entries --\n"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_log_lines_is_bad_input(data, fmt):
    """`journalctl -u typo-unit | logsense analyze -`: nothing to judge is never a pass."""
    p = subprocess.run([*LOGSENSE, "analyze", "--format", fmt, "-"], input=data, capture_output=True, timeout=120)
    assert p.returncode == 2 and b"no log lines" in p.stderr and p.stdout == b"", p.stderr


def test_no_log_lines_in_a_file_is_bad_input_for_analyze_and_tail(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    for args in (["analyze", str(empty)], ["tail", str(empty), "--no-follow"],
                 ["tail", str(empty), "--no-follow", "--format", "jsonl"]):
        p = run(*args)
        assert p.returncode == 2 and "no log lines" in p.stderr, (args, p.stderr)


def test_stdin_twice_is_a_usage_error():
    log = (ROOT / "corpora" / "mission" / "python-h-missing.log").read_bytes()
    p = subprocess.run([*LOGSENSE, "analyze", "-", "-"], input=log, capture_output=True, timeout=120)
    assert p.returncode == 2 and b"stdin" in p.stderr and b"internal error" not in p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_output_that_cannot_be_written_is_said(fmt):
    """A full disk loses the report: say so, exit non-zero, never a crash report."""
    log = ROOT / "corpora" / "mission" / "python-h-missing.log"
    with open("/dev/full", "w") as full:
        p = subprocess.run([*LOGSENSE, "analyze", "--format", fmt, str(log)], stdout=full, stderr=subprocess.PIPE,
                           timeout=120)
    assert p.returncode == 2 and b"cannot write the output" in p.stderr and b"internal error" not in p.stderr


def test_an_output_path_that_cannot_be_opened_is_said(tmp_path):
    log = ROOT / "corpora" / "mission" / "python-h-missing.log"
    p = run("stats", str(log), "-o", str(tmp_path / "no" / "such" / "dir" / "x.csv"))
    assert p.returncode == 2 and "cannot open" in p.stderr and "internal error" not in p.stderr, p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_train_to_a_place_it_cannot_write_is_said():
    for out in ("/dev/full", "/dev/full/model.json"):
        p = run("train", str(ROOT / "corpora"), "-o", out, timeout=300)
        assert p.returncode == 2 and "internal error" not in p.stderr and out.split("/model")[0] in p.stderr, p.stderr


def test_one_unreadable_input_does_not_lose_the_others(tmp_path):
    """`analyze --format json ok.log missing.log`: the readable log's result is printed, the other is said."""
    log = ROOT / "corpora" / "mission" / "python-h-missing.log"
    p = run("analyze", "--format", "json", str(log), str(tmp_path / "missing.log"))
    assert p.returncode == 2 and "missing.log" in p.stderr
    assert [r["status"] for r in json.loads(p.stdout)] == ["failed"]


def test_tail_of_a_pipe_or_fifo_is_a_usage_error(tmp_path):
    """A pipe has no place to return to: a clear message, never a crash report or a hang."""
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    for args in (["tail", str(fifo), "--no-follow"], ["history", str(fifo)]):
        p = run(*args, timeout=60)
        assert p.returncode == 2 and "pipe or a device" in p.stderr, (args, p.stderr)
    log = (ROOT / "corpora" / "mission" / "python-h-missing.log").read_bytes()
    p = subprocess.run([*LOGSENSE, "tail", "/dev/stdin", "--no-follow"], input=log, capture_output=True, timeout=60)
    assert p.returncode == 2 and b"internal error" not in p.stderr, p.stderr


def _wait_until_reading_stdin(pid: int, timeout: float = 60.0) -> None:
    """Until the process blocks in read(0, ...): a fixed sleep loses to a loaded machine, where the
    interrupt then lands in the interpreter's start-up, before logsense's own handling exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/syscall") as f:
                fields = f.read().split()
        except OSError:
            time.sleep(2.0)  # no /proc: the old guess
            return
        if len(fields) > 1 and fields[0] in ("0", "63") and fields[1] == "0x0":  # read (x86_64, arm64) of fd 0
            return
        time.sleep(0.05)
    raise AssertionError("the process never started reading stdin")


def test_a_closed_stdout_keeps_the_exit_code():
    """Started with descriptor 1 closed (`>&-`): nothing is written, nothing crashes, the verdict is the exit code."""
    import os

    log = ROOT / "corpora" / "mission" / "python-h-missing.log"
    for args in (["analyze", str(log)], ["analyze", "--format", "json", str(log)], ["rules", "export"]):
        p = subprocess.run([*LOGSENSE, *args], stderr=subprocess.PIPE, pass_fds=(), close_fds=True,
                           preexec_fn=lambda: os.close(1))
        assert p.returncode == (0 if args[0] == "rules" else 1) and b"internal error" not in p.stderr, (args, p.stderr)


def test_ctrl_c_is_130_and_quiet():
    p = subprocess.Popen([*LOGSENSE, "analyze", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    _wait_until_reading_stdin(p.pid)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert b"Traceback" not in err


def test_eof_error_is_bad_input_not_interrupt(monkeypatch):
    from logsense import cli
    from logsense.commands import rules as rules_cmd

    def boom(*a, **k):
        raise EOFError("stdin closed")

    monkeypatch.setattr(rules_cmd, "list_rules", boom)
    assert cli.run(["rules", "list"]) == 2


def test_a_logsense_error_reaches_the_boundary(tmp_path, capsys):
    from logsense import cli

    assert cli.run(["analyze", str(tmp_path / "missing.log")]) == 2
    assert "no such file" in capsys.readouterr().err


COMMANDS = [["analyze"], ["tail"], ["history"], ["check"], ["label"], ["train"], ["eval"], ["stats"], ["diff"],
            ["rules"], ["rules", "list"], ["rules", "show"], ["rules", "test"], ["rules", "export"], ["rules", "lint"],
            ["rules", "coverage"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_dash_h_everywhere(cmd):
    from logsense import cli

    assert cli.run([*cmd, "-h"]) == 0


@pytest.mark.parametrize("cmd", [["rules", "list"], ["rules", "show", "x"], ["analyze", "x.log"], ["diff", "a", "b"],
                                 ["stats", "x.log"], ["eval", "corpora"], ["history", "x.log"]], ids=" ".join)
def test_format_is_validated(cmd, capsys):
    from logsense import cli

    assert cli.run([*cmd, "--format", "yaml"]) == 2
    assert "--format 'yaml'" in capsys.readouterr().err


def test_rules_test_of_an_unknown_rule_names_it():
    p = cli("rules", "test", "no-such-rule")
    assert p.returncode == 2
    assert "no-such-rule" in p.stderr and "0 passed" not in p.stdout


def test_several_inputs_as_json_are_one_array(healthy, tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1\nModuleNotFoundError: No module named 'w'\n")
    p = cli("analyze", "-f", "json", str(healthy), str(bad))
    reports = json.loads(p.stdout)
    assert [r["status"] for r in reports][0] == "ready" and len(reports) == 2
    assert p.returncode == 1
    one = json.loads(cli("analyze", "-f", "json", str(healthy)).stdout)
    assert isinstance(one, dict)


def test_piped_rules_list_keeps_whole_ids_on_one_line():
    p = run("rules", "list", env={**os.environ, "COLUMNS": "80"})
    rows = [ln.split()[0] for ln in p.stdout.splitlines()[2:-1] if ln.strip()]
    longest = max(rows, key=len)
    assert len(longest) > 20
    from logsense import load_rules

    ids = {r.id for r in load_rules().rules}
    assert set(rows) == ids
    assert run("rules", "show", longest).returncode == 0


def test_piped_text_is_not_wrapped(tmp_path):
    long_name = tmp_path / ("x" * 150 + ".log")
    long_name.write_text(HEALTHY)
    p = run("analyze", str(long_name), env={**os.environ, "COLUMNS": "80"})
    assert any(str(long_name) in ln for ln in p.stdout.splitlines())


def test_facts_keep_one_type(tmp_path):
    f = tmp_path / "x.log"
    f.write_text(HEALTHY + "[2026-11-20 10:00:11 TP0] max_total_num_tokens=86461, chunked_prefill_size=2048, "
                 "max_prefill_tokens=16384, max_running_requests=2049, context_len=131072\n")
    facts = json.loads(cli("analyze", "-f", "json", str(f)).stdout)["facts"]
    assert facts["max_total_num_tokens"] == 86461 and facts["context_len"] == 131072
    assert facts["max_running_requests"] == 2049


def test_diff_of_two_healthy_runs_ignores_a_line_the_rules_know_as_benign(tmp_path):
    good = tmp_path / "good.log"
    good.write_text(HEALTHY)
    lines = HEALTHY.splitlines(keepends=True)
    bad = tmp_path / "other.log"
    bad.write_text("".join(lines[:3]) + "[2026-11-20 10:00:04] Ignore import error when loading "
                   "sglang.srt.models.foo: ImportError: No module named 'bar'\n" + "".join(lines[3:]))
    p = cli("diff", "-f", "json", str(good), str(bad))
    assert p.returncode == 0, p.stdout
    assert json.loads(p.stdout)["first_bad_error"] is None
    worse = tmp_path / "worse.log"
    worse.write_text("".join(lines[:3]) + "[2026-11-20 10:00:04] RuntimeError: something new broke\n"
                     + "".join(lines[3:]))
    assert cli("diff", str(good), str(worse)).returncode == 1


def test_pre_commit_hooks_run_once_and_the_readme_pins_nothing_that_does_not_exist():
    import yaml

    from conftest import ROOT

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert all(h.get("require_serial") is True for h in hooks)  # a wrong label reported once, not per batch
    readme = (ROOT / "README.md").read_text()
    assert "rev: v0.1.0" not in readme
    assert "pip install -e '.[dev,learn]' && logsense analyze" in readme  # the set-up needs no C toolchain


def test_progress_shows_on_a_terminal_only():
    import io

    from logsense.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    piped, tty = io.StringIO(), Tty()
    for out in (piped, tty):
        with Progress("checking", 3, out=out) as p:
            p.step("a.log\x1b]0;x\x07")
    assert piped.getvalue() == ""
    assert "checking 1/3 a.log" in tty.getvalue() and "\x07" not in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")


def test_a_time_without_a_year_is_never_year_2000_in_json(tmp_path):
    bare = tmp_path / "short.log"
    bare.write_text("Nov 20 10:00:00 host python3[1]: server_args=ServerArgs(model_path='/m', tp_size=1)\n"
                    "Nov 20 10:00:03 host python3[1]: Load weight begin. avail mem=78.48 GB\n"
                    "Nov 20 10:00:23 host python3[1]: The server is fired up and ready to roll!\n")
    out = cli("analyze", "-f", "json", str(bare)).stdout
    assert "2000-" not in out
    phases = json.loads(out)["phases"]
    assert phases[0]["start"] == "11-20 10:00:00" and phases[0]["seconds"] == 3.0
    inner = tmp_path / "inner.log"
    inner.write_text("".join(f"Nov 20 10:00:0{i} host python3[1]: [2026-11-20 10:00:0{i}] {m}\n" for i, m in
                             enumerate(["server_args=ServerArgs(model_path='/m', tp_size=1)",
                                        "The server is fired up and ready to roll!"])))
    assert json.loads(cli("analyze", "-f", "json", str(inner)).stdout)["phases"][0]["start"].startswith("2026-11-20")


@pytest.mark.parametrize("case", ["state-wrong-types", "tail-a-dir"])
def test_bad_input_to_tail_is_exit_2_with_one_line(tmp_path, healthy, case):
    if case == "state-wrong-types":
        state = tmp_path / "state.json"
        state.write_text('{"schema": "two", "offset": "x", "line": [], "inode": {}}')
        p = cli("tail", "--no-follow", "--resume", str(state), str(healthy))
    else:
        p = cli("tail", "--no-follow", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
