"""What the tail tests share: real journal files made by systemd-journal-remote from export
format, SGLang-like startup scripts, a tiny rule pack, and running `logsense tail`."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from phase_helpers import copy_phase_files

from conftest import ROOT

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
UNIT = "sglang-k26-ddtree"
SERVICE = UNIT + ".service"
BOOT = "0123456789abcdef0123456789abcdef"
BOOT_OLD = "fedcba9876543210fedcba9876543210"
T0 = 1767225600  # 2026-01-01 00:00:00 UTC

needs_journal_remote = pytest.mark.skipif(
    not os.access(JOURNAL_REMOTE, os.X_OK), reason=f"{JOURNAL_REMOTE} is missing (apt install systemd-journal-remote)"
)
needs_journalctl = pytest.mark.skipif(shutil.which("journalctl") is None, reason="journalctl is missing (apt install systemd)")


def have_systemd_python() -> bool:
    try:
        from systemd import journal  # noqa: F401
    except ImportError:
        return False
    return True


needs_systemd_python = pytest.mark.skipif(
    not have_systemd_python(), reason="the systemd Python binding is missing (pip install systemd-python)"
)

# Both readers: the systemd-python binding and the journalctl subprocess fallback.
BACKENDS = [
    pytest.param("systemd", marks=needs_systemd_python, id="systemd-python"),
    pytest.param("journalctl", marks=needs_journalctl, id="journalctl"),
]


# -- journal files -----------------------------------------------------------------------------


def _field(out: bytearray, key: str, value: str | bytes) -> None:
    v = value.encode() if isinstance(value, str) else value
    if b"\n" in v:
        out += key.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"  # the binary form
    else:
        out += key.encode() + b"=" + v + b"\n"


def entry(msg: str, at: float, *, systemd: bool = False, pid: int = 4242, invocation: str | None = "a" * 32,
          boot: str = BOOT, unit: str = SERVICE, message_id: str | None = None) -> bytes:
    """One journal entry in export format: the service's own output, or systemd's (PID 1) about the unit."""
    out = bytearray()
    usec = int(at * 1_000_000)
    _field(out, "__REALTIME_TIMESTAMP", str(usec))
    _field(out, "__MONOTONIC_TIMESTAMP", str(usec - (T0 - 86400) * 1_000_000))  # since a boot a day before T0
    _field(out, "_BOOT_ID", boot)
    _field(out, "_HOSTNAME", "gpu-node-1")
    _field(out, "_TRANSPORT", "journal" if systemd else "stdout")
    if systemd:
        _field(out, "_PID", "1")
        _field(out, "_COMM", "systemd")
        _field(out, "SYSLOG_IDENTIFIER", "systemd")
        _field(out, "_SYSTEMD_UNIT", "init.scope")
        _field(out, "UNIT", unit)
        if invocation:
            _field(out, "INVOCATION_ID", invocation)
        if message_id:
            _field(out, "MESSAGE_ID", message_id)
    else:
        _field(out, "_PID", str(pid))
        _field(out, "_COMM", "python3")
        _field(out, "SYSLOG_IDENTIFIER", "python3")
        _field(out, "_SYSTEMD_UNIT", unit)
        if invocation:
            _field(out, "_SYSTEMD_INVOCATION_ID", invocation)
    _field(out, "PRIORITY", "6")
    _field(out, "MESSAGE", msg)
    out += b"\n"  # a blank line ends the entry
    return bytes(out)


def write_journal(path: Path, entries: list[bytes]) -> None:
    """Write (or append to: journal-remote appends to an existing -o file) a real journal file."""
    assert str(path).endswith(".journal")
    p = subprocess.run([JOURNAL_REMOTE, "-o", str(path), "-"], input=b"".join(entries), capture_output=True,
                       timeout=20)
    assert p.returncode == 0, p.stderr.decode()


# -- SGLang-like startups ----------------------------------------------------------------------


def sglang(at: float, text: str, rank: str = "") -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))
    return f"[{stamp}{' ' + rank if rank else ''}] {text}"


def startup(t0: float = T0) -> list[tuple[float, str]]:
    """A healthy startup to just before CUDA graph capture ends: (time, message)."""
    return [
        (t0 + 1, sglang(t0 + 1, "server_args=ServerArgs(model_path='/models/Kimi-K2.6', tp_size=8, "
                                "mem_fraction_static=0.88, cuda_graph_max_bs=256)")),
        (t0 + 2, sglang(t0 + 2, "Init torch distributed begin.", "TP0")),
        (t0 + 3, sglang(t0 + 3, "Load weight begin. avail mem=78.48 GB", "TP0")),
        (t0 + 4, "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]"),
        (t0 + 30, "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:45<00:45, 22.5s/it]"),
        (t0 + 93, "Loading safetensors checkpoint shards: 100% Completed | 4/4 [01:30<00:00, 22.5s/it]"),
        (t0 + 93, sglang(t0 + 93, "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                                  "avail mem=20.10 GB, mem usage=58.38 GB.", "TP0")),
        (t0 + 98, sglang(t0 + 98, "KV Cache is allocated. #tokens: 86461, K size: 5.11 GB, V size: 5.11 GB", "TP0")),
        (t0 + 99, sglang(t0 + 99, "Capture cuda graph begin. This can take up to several minutes. avail mem=8.2 GB",
                         "TP0")),
    ]


def ready_tail(t0: float = T0) -> list[tuple[float, str]]:
    return [
        (t0 + 130, sglang(t0 + 130, "Capture cuda graph end. Time elapsed: 31.0 s. mem usage=2.1 GB.", "TP0")),
        (t0 + 131, sglang(t0 + 131, "max_total_num_tokens=86461, chunked_prefill_size=8192, max_prefill_tokens=16384",
                          "TP0")),
        (t0 + 132, sglang(t0 + 132, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")),
        (t0 + 150, sglang(t0 + 150, "The server is fired up and ready to roll!")),
    ]


OOM_TRACEBACK = "\n".join([
    "Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 374, in capture',
    "    ) = self.capture_one_batch_size(bs, forward)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of "
    "79.11 GiB of which 402.31 MiB is free.",
])
FA_IMPORT = "ImportError: Vendored FlashAttention CUTE is not available"


def oom_tail(t0: float = T0) -> list[tuple[float, str]]:
    return [(t0 + 120, sglang(t0 + 120, OOM_TRACEBACK, "TP0"))]


def unit_entries(lines: list[tuple[float, str]], *, invocation: str = "a" * 32, started: float | None = T0,
                 stopped: float | None = None) -> list[bytes]:
    """A run of the unit: systemd's Starting/Started, its output (one entry per message), and a stop."""
    out = []
    if started is not None:
        out.append(entry(f"Starting {SERVICE} - SGLang K2.6 DDTree...", started, systemd=True, invocation=invocation))
        out.append(entry(f"Started {SERVICE} - SGLang K2.6 DDTree.", started + 0.1, systemd=True,
                         invocation=invocation))
    out.extend(entry(msg, at, invocation=invocation) for at, msg in lines)
    if stopped is not None:
        out.append(entry(f"{SERVICE}: Main process exited, code=exited, status=1/FAILURE", stopped, systemd=True,
                         invocation=invocation))
        out.append(entry(f"{SERVICE}: Failed with result 'exit-code'.", stopped + 0.1, systemd=True,
                         invocation=invocation))
    return out


# -- a tiny rule pack --------------------------------------------------------------------------

PACK = r"""
rules:
  - id: test-oom-cuda-graph
    cause: cuda_oom_cuda_graph
    role: root
    priority: 80
    confidence: 0.9
    match:
      all:
        - 'OutOfMemoryError|CUDA out of memory'
        - 'capture_one_batch_size|Capture cuda graph failed'
    fixes:
      - kind: flag
        value: --cuda-graph-max-bs 16
    examples:
      match:
        - log: |
            Traceback (most recent call last):
              File "/x/cuda_graph_runner.py", line 374, in capture
                ) = self.capture_one_batch_size(bs, forward)
            torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB.
        - 'Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB'
      no_match:
        - 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB.'
        - '[2025-02-04 05:29:19 TP0] Capture cuda graph end. Time elapsed: 1.79 s'
  - id: test-fa-cute
    cause: flash_attn_cute_unavailable
    role: root
    priority: 80
    confidence: 0.9
    match:
      any:
        - 'ImportError: Vendored FlashAttention CUTE is not available'
    fixes:
      - kind: flag
        value: --mm-attention-backend sdpa
    examples:
      match:
        - 'ImportError: Vendored FlashAttention CUTE is not available'
        - '[2026-01-01 10:00:00] ImportError: Vendored FlashAttention CUTE is not available (x)'
      no_match:
        - '[2026-01-02 10:00:01 TP0] Using FlashAttention CUTE backend'
        - 'ImportError: cannot import name foo'
"""


def rule_pack(tmp_path: Path) -> Path:
    d = tmp_path / "pack"
    d.mkdir(exist_ok=True)
    copy_phase_files(d)
    (d / "tail.yaml").write_text(PACK)
    return d


# -- running logsense tail ---------------------------------------------------------------------


def tail_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "logsense", "tail", *args]


def env(backend: str | None = None, **extra: str) -> dict:
    e = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1", COLUMNS="200", **extra)
    e.pop("LOGSENSE_JOURNAL_BACKEND", None)
    if backend:
        e["LOGSENSE_JOURNAL_BACKEND"] = backend
    return e


def run_tail(*args: str, backend: str | None = None, timeout: float = 20, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(tail_cmd(*args), capture_output=True, text=True, timeout=timeout, env=env(backend),
                          cwd=ROOT, **kw)
