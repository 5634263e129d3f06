"""Shared fixtures: the bundled rules, loaded once per session; the command line run in this process."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "corpora"

# Started in the background without job control (`cmd &` in a script), the test run has SIGINT
# ignored, and every process it starts inherits that: the Ctrl-C tests would then time out or
# see the command finish. A handler (unlike "ignored") is reset to the default across exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Two small startups shared by the check and pre-commit tests.
HEALTHY = """\
[2026-11-20 10:00:00] server_args=ServerArgs(model_path='/models/tiny', tokenizer_path='/models/tiny', tp_size=1)
[2026-11-20 10:00:02 TP0] Init torch distributed begin.
[2026-11-20 10:00:03 TP0] Load weight begin. avail mem=78.48 GB
[2026-11-20 10:00:10 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB
[2026-11-20 10:00:11 TP0] KV Cache is allocated. #tokens: 86461, K size: 5.11 GB, V size: 5.11 GB
[2026-11-20 10:00:12 TP0] Capture cuda graph begin. This can take up to several minutes.
[2026-11-20 10:00:20 TP0] Capture cuda graph end. Time elapsed: 8.00 s
[2026-11-20 10:00:21] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-11-20 10:00:23] The server is fired up and ready to roll!
"""

MODULE_MISSING = """\
[2026-11-20 10:00:00] server_args=ServerArgs(model_path='/models/tiny', tokenizer_path='/models/tiny', tp_size=1)
[2026-11-20 10:00:03 TP0] Load weight begin. avail mem=78.48 GB
[2026-11-20 10:00:04 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/models/widget.py", line 12, in <module>
    import widget_kernels
ModuleNotFoundError: No module named 'widget_kernels'
"""


_CACHE_ENV: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    """Caches (compiled rule packs, validated packs) go to a temp dir, never the user's home.

    Set here, before collection: collecting already loads the rule packs. xdist workers and
    subprocesses inherit it (one dir per run, removed by the process that made it).
    """
    import os
    import tempfile

    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller's dir is in its environment already
    _CACHE_ENV["old"] = os.environ.get("XDG_CACHE_HOME")
    _CACHE_ENV["dir"] = tempfile.mkdtemp(prefix="logsense-test-cache-")
    os.environ["XDG_CACHE_HOME"] = _CACHE_ENV["dir"]


def pytest_unconfigure(config: pytest.Config) -> None:
    import os
    import shutil

    old, made = _CACHE_ENV.pop("old", None), _CACHE_ENV.pop("dir", None)
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old
    if made:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(autouse=True)
def _searched(monkeypatch):
    """In-process, every log is searched: a process's first small log, fed whole without a search, is the
    subject of its own test (test_scan.py); a CLI run in a subprocess is such a first log."""
    import logsense.scan

    monkeypatch.setattr(logsense.scan, "_whole_fed", True)


@pytest.fixture(scope="session")
def rules():
    from logsense import load_rules

    return load_rules()


@dataclass(frozen=True)
class CliResult:
    """What `logsense ARGS` gave: its exit code and output bytes, as subprocess.run would say it."""

    returncode: int
    stdout: bytes | str  # str with text=True, as subprocess.run
    stderr: bytes | str


def run_cli(*args: str, input: bytes | str | None = None, env: dict[str, str] | None = None,
            text: bool = False) -> CliResult:
    """`logsense ARGS` in this process, through the command's own error boundary (`logsense.cli.run`).

    A fresh interpreter costs a second per run: tests of what a command prints and which code it
    exits with use this; tests of the process itself (signals, closed pipes, the terminal,
    `python -m logsense`) keep a real subprocess.
    """
    from typer.testing import CliRunner

    from logsense.cli import run

    with CliRunner().isolation(input=input, env=env) as (out, err, _):
        code = run(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    if text:
        return CliResult(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))
    return CliResult(code, stdout, stderr)
