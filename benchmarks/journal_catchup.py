"""tail's catch-up on a unit's journal: a real journal (systemd-journal-remote, rotated as it grows) holding a
recorded SGLang startup and a million serving lines since the unit's start, beside `journalctl -u UNIT -o cat |
logsense analyze -` on the same entries.

    python benchmarks/journal_catchup.py                       # this tree, both journal readers
    python benchmarks/journal_catchup.py --before ../old-tree  # and another tree, in the same rounds
    python benchmarks/journal_catchup.py --entries 200000      # a smaller journal

Each command is a whole process, each round runs them all once, so ratios are taken within a round.
Prints a markdown table: median wall s, CPU s, peak RSS MiB (the reader's mapped journal files count in
it), entries/s, and the median of the per-round ratios over the pipe.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catchup import logs
from run import OUT, rounds

ROOT = Path(__file__).resolve().parent.parent
JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
UNIT = "sglang-bench"
T0 = 1767225600  # 2026-01-01 00:00:00 UTC


def _field(out: bytearray, key: str, value: str) -> None:
    v = value.encode()
    if b"\n" in v:
        out += key.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
    else:
        out += key.encode() + b"=" + v + b"\n"


def _entry(msg: str, at: float, systemd: bool) -> bytes:
    out = bytearray()
    usec = int(at * 1_000_000)
    _field(out, "__REALTIME_TIMESTAMP", str(usec))
    _field(out, "__MONOTONIC_TIMESTAMP", str(usec - (T0 - 86400) * 1_000_000))
    _field(out, "_BOOT_ID", "0123456789abcdef0123456789abcdef")
    _field(out, "_HOSTNAME", "gpu-node-1")
    if systemd:
        for k, v in (("_TRANSPORT", "journal"), ("_PID", "1"), ("_COMM", "systemd"), ("SYSLOG_IDENTIFIER", "systemd"),
                     ("_SYSTEMD_UNIT", "init.scope"), ("UNIT", f"{UNIT}.service"), ("INVOCATION_ID", "a" * 32),
                     ("MESSAGE_ID", "7d4958e842da4a758f6c1cdc7b36dcc5")):
            _field(out, k, v)
    else:
        for k, v in (("_TRANSPORT", "stdout"), ("_PID", "4242"), ("_COMM", "python3"), ("SYSLOG_IDENTIFIER", "python3"),
                     ("_SYSTEMD_UNIT", f"{UNIT}.service"), ("_SYSTEMD_INVOCATION_ID", "a" * 32)):
            _field(out, k, v)
    _field(out, "PRIORITY", "6")
    _field(out, "MESSAGE", msg)
    return bytes(out + b"\n")


def journal(entries: int) -> Path:
    """A directory of journal files: the unit's start, then the first `entries` lines of serving-real, one entry each."""
    d = OUT / f"journal-{entries}"
    if d.exists():
        return d
    tmp = OUT / f"journal-{entries}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    p = subprocess.Popen([JOURNAL_REMOTE, "-o", str(tmp / "unit.journal"), "-"], stdin=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdin is not None
    p.stdin.write(_entry(f"Starting {UNIT}.service - SGLang...", T0, systemd=True))
    with open(logs()["serving-real"], encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh):
            if n >= entries:
                break
            p.stdin.write(_entry(line.rstrip("\n"), T0 + 1 + n * 0.001, systemd=False))
    p.stdin.close()
    if p.wait() != 0:
        raise SystemExit(f"{JOURNAL_REMOTE} failed")
    tmp.rename(d)
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, help="another tree, run in the same rounds")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not os.access(JOURNAL_REMOTE, os.X_OK) or shutil.which("journalctl") is None:
        print(f"skipped: needs {JOURNAL_REMOTE} and journalctl (apt install systemd-journal-remote systemd)")
        return 0
    d = journal(a.entries)
    trees = {"after": ROOT} if a.before is None else {"before": a.before.resolve(), "after": ROOT}
    q = shlex.quote
    cases: dict[str, str] = {}
    for name, tree in trees.items():
        py = f"PYTHONPATH={q(str(tree))} {q(sys.executable)} -P -m logsense"
        cases[f"{name}|journalctl -o cat piped to analyze -"] = (
            f"journalctl -D {q(str(d))} -u {UNIT} -o cat --no-pager | {py} analyze - --format json")
        for backend in ("systemd", "journalctl"):
            cases[f"{name}|tail jsonl ({backend})"] = (
                f"LOGSENSE_JOURNAL_BACKEND={backend} {py} tail {UNIT} -D {q(str(d))} --no-follow --format jsonl")
    got = rounds(cases, a.repeat)
    n = a.entries + 1
    print("| tree | command | wall s | CPU s | peak RSS MiB | entries/s | x the pipe (wall, median of rounds) |")
    print("|---|---|---|---|---|---|---|")
    for key, samples in got.items():
        name, label = key.split("|", 1)
        ref = got[f"{name}|journalctl -o cat piped to analyze -"]
        ratio = statistics.median(s.wall / r.wall for s, r in zip(samples, ref, strict=True))
        wall = statistics.median(s.wall for s in samples)
        print(f"| {name} | `{label}` | {wall:.2f} | {statistics.median(s.cpu for s in samples):.2f} | "
              f"{max(s.rss for s in samples) / 1024:.0f} | {n / wall:,.0f} | {ratio:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
