"""Shared fixtures: the bundled rules, loaded once per session; the command line run in this process."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "corpora"

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


@pytest.fixture(scope="session", autouse=True)
def _no_writes_to_home(tmp_path_factory):
    """The validated-pack cache (and any other XDG cache) goes to a temp dir, for this process and its children."""
    import os

    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


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
