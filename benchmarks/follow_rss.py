"""Peak memory of `logsense tail FILE` while it follows a server that serves: a recorded startup that reached
ready, then serving lines appended as tail follows, until tail has read them all.

    python benchmarks/follow_rss.py --lines 10000000
    python benchmarks/follow_rss.py --lines 1000000 --tree ../old-tree

The serving lines are `gen_log.py --after`'s (1,000,000 written once to benchmarks/out/, appended again and
again up to --lines, 100,000 at a time). Reports the seconds from the first append until tail's offset in
the file reached its end, and tail's peak RSS (VmHWM); then tail is stopped with SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
STARTUP = ROOT / "corpora/recorded/sglang-0.5.23/healthy-gpt2.log"
CHUNK = 100_000


def serving_lines() -> list[bytes]:
    """The serving lines (the startup is left out), in chunks of CHUNK lines."""
    OUT.mkdir(exist_ok=True)
    path = OUT / "serving-lines-1000000.log"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_log.py"), "--after", str(STARTUP),
                        "--lines", "1000000", "-o", str(path)], check=True)
    lines = path.read_bytes().splitlines(keepends=True)[len(STARTUP.read_bytes().splitlines()):]
    return [b"".join(lines[i : i + CHUNK]) for i in range(0, len(lines), CHUNK)]


def offset_of(pid: int, path: Path) -> int | None:
    """Where process `pid` stands in the file `path` (its descriptor's position), None while it has none open."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                return int((Path(f"/proc/{pid}/fdinfo") / fd.name).read_text().split()[1])
        except OSError:
            continue
    return None


def settle(pid: int) -> None:
    """Wait until the process has used no CPU for half a second."""
    def cpu() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    last = cpu()
    while True:
        time.sleep(0.5)
        now = cpu()
        if now == last:
            return
        last = now


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--tree", type=Path, default=ROOT)
    a = ap.parse_args()
    chunks = serving_lines()
    log = (OUT / "follow.log").resolve()
    log.write_bytes(STARTUP.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(a.tree.resolve()), "NO_COLOR": "1"}
    # -P: the tree comes from PYTHONPATH alone, never from the directory the command runs in
    tail = subprocess.Popen([sys.executable, "-P", "-m", "logsense", "tail", str(log), "--format", "jsonl"],
                            stdout=subprocess.DEVNULL, env=env)
    try:
        while offset_of(tail.pid, log) != log.stat().st_size:
            time.sleep(0.05)
        t0 = time.perf_counter()
        written = 0
        with open(log, "ab") as fh:
            while written < a.lines:
                fh.write(chunks[(written // CHUNK) % len(chunks)])
                fh.flush()
                written += CHUNK
                time.sleep(0.01)
        size = log.stat().st_size
        while offset_of(tail.pid, log) != size:
            time.sleep(0.05)
        settle(tail.pid)  # what was read is fed, too
        seconds = time.perf_counter() - t0
        rss = peak_rss_mib(tail.pid)
    finally:
        tail.send_signal(signal.SIGTERM)
        tail.wait(30)
    print(f"| {a.tree.resolve().name} | {written:,} | {seconds:.1f} | {written / seconds:,.0f} | {rss:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
