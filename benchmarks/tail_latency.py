"""How long `logsense tail` takes from a log entry being written to its diagnosis being printed.

    python benchmarks/tail_latency.py                 # 100 samples per case, both sources
    python benchmarks/tail_latency.py --samples 30 --source file

One `logsense tail --format jsonl` process follows a file (or a journal file that a
long-lived systemd-journal-remote writes into from a pipe); each sample writes one failure
and times the moment its "diagnosis" line arrives on the follower's stdout. Cases:

- line: a one-line event (the FlashAttention CUTE ImportError), complete when written;
- traceback: a CUDA OOM traceback followed by the next log line, which completes it;
- quiet: the same traceback with nothing after it, said after the quiet-time flush (0.5 s).

Each sample begins a new startup (file: a new server_args after "Load weight begin"; journal:
a new invocation id), so every sample is a fresh diagnosis. The goal is p99 < 100 ms for
the complete events (line, traceback); 'quiet' shows the flush delay by design.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
UNIT = "sglang-k26-ddtree.service"

PACK = r"""
rules:
  - id: bench-fa-cute
    cause: flash_attn_cute_unavailable
    role: root
    priority: 80
    match:
      any: ['ImportError: Vendored FlashAttention CUTE is not available']
    examples:
      match: ['ImportError: Vendored FlashAttention CUTE is not available', 'x ImportError: Vendored FlashAttention CUTE is not available']
      no_match: ['Using FlashAttention CUTE backend', 'ImportError: cannot import name foo']
  - id: bench-oom-graph
    cause: cuda_oom_cuda_graph
    role: root
    priority: 80
    match:
      all: ['OutOfMemoryError', 'capture_one_batch_size']
    examples:
      match:
        - "Traceback (most recent call last):\n  File \"r.py\", line 1, in capture\n    self.capture_one_batch_size(bs)\ntorch.OutOfMemoryError: CUDA out of memory."
        - "Traceback (most recent call last):\n  File \"r.py\", line 2, in capture\n    capture_one_batch_size(1)\ntorch.OutOfMemoryError: x"
      no_match: ['torch.OutOfMemoryError: CUDA out of memory.', 'capture_one_batch_size']
"""


def stamp() -> str:
    return time.strftime("[%Y-%m-%d %H:%M:%S]")


def prelude(i: int) -> list[str]:
    """A new startup, up to CUDA graph capture, so the next failure is a fresh diagnosis."""
    return [
        f"{stamp()} server_args=ServerArgs(model_path='/models/m{i}', tp_size=8)",
        f"{stamp()} Load weight begin. avail mem=78.48 GB",
        f"{stamp()} Capture cuda graph begin. This can take up to several minutes.",
    ]


def failure(case: str) -> list[str]:
    if case == "line":
        return [f"{stamp()} ImportError: Vendored FlashAttention CUTE is not available"]
    tb = [
        f"{stamp()} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/cuda_graph_runner.py", line 374, in capture',
        "    ) = self.capture_one_batch_size(bs, forward)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB.",
    ]
    if case == "traceback":
        tb.append(f"{stamp()} Received sigquit from a child process. It usually means the child failed.")
    return tb


class Follower:
    def __init__(self, args: list[str], env: dict) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "logsense", "tail", *args, "--format", "jsonl"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, bufsize=0)
        self.q: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.q.put((time.perf_counter(), line))
        self.q.put((time.perf_counter(), None))

    def wait(self, event: str, timeout: float = 10.0) -> float:
        deadline = time.perf_counter() + timeout
        while True:
            at, line = self.q.get(timeout=max(deadline - time.perf_counter(), 0.001))
            if line is None:
                err = self.p.stderr.read().decode() if self.p.stderr else ""
                raise SystemExit(f"logsense tail ended: {err}")
            if json.loads(line).get("event") == event:
                return at

    def drain(self) -> None:
        while not self.q.empty():
            self.q.get_nowait()

    def stop(self) -> None:
        self.p.terminate()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def bench_file(tmp: Path, pack: Path, cases: list[str], samples: int) -> dict[str, list[float]]:
    log = tmp / "server.log"
    log.write_text("")
    f = Follower([str(log), "--only-rules", str(pack)], dict(os.environ))
    f.wait("follow")
    out: dict[str, list[float]] = {c: [] for c in cases}
    with open(log, "a") as fh:
        i = 0
        for case in cases:
            for _ in range(samples):
                i += 1
                fh.write("\n".join(prelude(i)) + "\n")
                fh.flush()
                f.wait("phase")  # the new startup is read before the clock starts
                time.sleep(0.03)
                f.drain()
                fh.write("\n".join(failure(case)) + "\n")
                fh.flush()
                t0 = time.perf_counter()
                out[case].append(f.wait("diagnosis") - t0)
                if case == "quiet":
                    time.sleep(0.05)
    f.stop()
    return out


def _field(k: str, v: str) -> bytes:
    b = v.encode()
    if b"\n" in b:
        return k.encode() + b"\n" + struct.pack("<Q", len(b)) + b + b"\n"
    return k.encode() + b"=" + b + b"\n"


def export(msg: str, inv: str) -> bytes:
    usec = int(time.time() * 1e6)
    return b"".join([
        _field("__REALTIME_TIMESTAMP", str(usec)), _field("__MONOTONIC_TIMESTAMP", str(usec % 10**12)),
        _field("_BOOT_ID", "0123456789abcdef0123456789abcdef"), _field("_HOSTNAME", "bench"),
        _field("_SYSTEMD_UNIT", UNIT), _field("_SYSTEMD_INVOCATION_ID", inv), _field("_PID", "4242"),
        _field("SYSLOG_IDENTIFIER", "python3"), _field("MESSAGE", msg), b"\n",
    ])


def bench_journal(tmp: Path, pack: Path, cases: list[str], samples: int, backend: str) -> dict[str, list[float]]:
    j = tmp / f"bench-{backend}.journal"
    first = subprocess.run([JOURNAL_REMOTE, "-o", str(j), "-"], input=export("start", "0" * 32), capture_output=True)
    if first.returncode:
        raise SystemExit(first.stderr.decode())
    writer = subprocess.Popen([JOURNAL_REMOTE, "-o", str(j), "-"], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert writer.stdin is not None
    env = dict(os.environ, LOGSENSE_JOURNAL_BACKEND=backend)
    f = Follower(["--file", str(j), "sglang-k26-ddtree", "--only-rules", str(pack)], env)
    f.wait("follow")
    out: dict[str, list[float]] = {c: [] for c in cases}
    i = 0
    for case in cases:
        for _ in range(samples):
            i += 1
            inv = f"{i:032x}"
            writer.stdin.write(b"".join(export(m, inv) for m in prelude(i)))
            writer.stdin.flush()
            f.wait("phase")
            time.sleep(0.03)
            f.drain()
            lines = failure(case)
            # the service's stdout: one entry per line, as journald stores it
            writer.stdin.write(b"".join(export(m, inv) for m in lines))
            writer.stdin.flush()
            t0 = time.perf_counter()
            out[case].append(f.wait("diagnosis") - t0)
    f.stop()
    writer.stdin.close()
    writer.wait(timeout=10)
    return out


def summary(name: str, xs: list[float]) -> str:
    xs = sorted(x * 1000 for x in xs)
    p99 = xs[min(len(xs) - 1, round(0.99 * (len(xs) - 1)))]
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return (f"{name:<34} n={len(xs):<4} median {statistics.median(xs):7.1f} ms   p95 {p95:7.1f} ms   "
            f"p99 {p99:7.1f} ms   max {xs[-1]:7.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--source", choices=["file", "journal", "all"], default="all")
    ap.add_argument("--cases", default="line,traceback,quiet")
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    tmp = Path(tempfile.mkdtemp(prefix="tail-latency-"))
    try:
        pack = tmp / "pack"
        pack.mkdir()
        shutil.copy(ROOT / "rules" / "phases.yaml", pack / "phases.yaml")
        (pack / "bench.yaml").write_text(PACK)
        results: list[str] = []
        if args.source in ("file", "all"):
            for case, xs in bench_file(tmp, pack, cases, args.samples).items():
                results.append(summary(f"file, {case}", xs))
                print(results[-1], flush=True)
        if args.source in ("journal", "all"):
            if not os.access(JOURNAL_REMOTE, os.X_OK):
                print(f"journal: skipped ({JOURNAL_REMOTE} is missing)")
            else:
                backends = ["journalctl"]
                try:
                    from systemd import journal  # noqa: F401

                    backends.insert(0, "systemd")
                except ImportError:
                    print("journal, systemd-python: skipped (the binding is not installed)")
                for backend in backends:
                    for case, xs in bench_journal(tmp, pack, cases, args.samples, backend).items():
                        results.append(summary(f"journal ({backend}), {case}", xs))
                        print(results[-1], flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
