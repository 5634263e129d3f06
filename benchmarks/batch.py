"""`logsense stats` on an archive of many incident logs: logs per second and peak memory by `--jobs`.

    python benchmarks/batch.py                        # 10,000 logs, --jobs 1 and 2, writes benchmarks/out/batch.md
    python benchmarks/batch.py --logs 2000 --jobs 1 2 4 --repeat 2

The archive is a .tar.gz of copies of the corpus logs (corpora/**/*.log, cycled in sorted order),
every third one gzip-compressed inside the tar, as an incident archive mixes both. Each run is a
whole process (`python -m logsense stats ARCHIVE --format csv -o FILE --jobs N`: start-up, rule
loading in every worker, reading the tar once, the rows, the csv). CPU seconds are user + system
of the whole process tree: on a shared, loaded machine the wall-clock speed-up is bounded by the
cores others leave free, while logs per CPU second shows what the pool itself costs. Peak memory is given two ways:
the largest single process (`/usr/bin/time -f %M`, what a per-process limit sees) and the sum over
the process tree sampled every 50 ms (what the machine gives up). The csv of every run is compared
with the first: `--jobs` must not change a row or their order.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"


def make_archive(n: int, path: Path) -> Path:
    """A .tar.gz of `n` incident logs made from the corpus; made once per size."""
    if path.exists():
        return path
    logs = sorted(p for p in (ROOT / "corpora").rglob("*.log") if p.is_file())
    if not logs:
        raise SystemExit("no corpus logs under corpora/")
    data = [p.read_bytes() for p in logs]
    tmp = path.with_suffix(".partial")
    with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
        for i in range(n):
            src = logs[i % len(logs)]
            raw = data[i % len(logs)]
            name = f"incidents/{i // 1000:02d}/{i:05d}-{src.stem}.log"
            if i % 3 == 2:
                raw, name = gzip.compress(raw, mtime=0), name + ".gz"
            info = tarfile.TarInfo(name)
            info.size = len(raw)  # mtime stays 0: the archive is the same bytes every time
            tar.addfile(info, io.BytesIO(raw))
    tmp.rename(path)
    return path


def _tree_rss_kib(root: int) -> int:
    """Resident memory of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{d}/status") as fh:
                status = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss[int(d)] = int(line.split()[1])
                break
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def run_stats(archive: Path, jobs: int, csv_out: Path) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds of the tree, peak RSS of the largest process and summed over the tree (KiB)."""
    cmd = ["/usr/bin/time", "-f", "%U %S %M", sys.executable, "-m", "logsense", "stats", str(archive),
           "--format", "csv", "-o", str(csv_out), "--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    peak = [0]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def sample() -> None:
        while p.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kib(p.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = p.communicate()
    wall = time.perf_counter() - t
    sampler.join()
    if p.returncode != 0:
        raise SystemExit(f"stats --jobs {jobs} exited {p.returncode}:\n{err}")
    user, system, big = err.strip().splitlines()[-1].split()
    return wall, float(user) + float(system), int(big), peak[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=1, help="runs per --jobs value; the median is shown")
    ap.add_argument("-o", "--output", default=str(OUT / "batch.md"))
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    archive = make_archive(args.logs, OUT / f"incidents-{args.logs}.tar.gz")
    mib = archive.stat().st_size / 2**20
    load = os.getloadavg()
    rows: list[tuple[int, float, float, int, int]] = []
    first_csv: bytes | None = None
    with tempfile.TemporaryDirectory(prefix="logsense-batch-bench-") as tmp:
        for jobs in args.jobs:
            runs = []
            for r in range(args.repeat):
                csv_out = Path(tmp) / f"rows-{jobs}-{r}.csv"
                runs.append(run_stats(archive, jobs, csv_out))
                text = csv_out.read_bytes()
                if first_csv is None:
                    first_csv = text
                elif text != first_csv:
                    raise SystemExit(f"--jobs {jobs} gave other rows than --jobs {args.jobs[0]}")
                print(f"jobs {jobs} run {r + 1}: {runs[-1][0]:.1f} s", file=sys.stderr)
            rows.append((jobs, statistics.median(x[0] for x in runs), statistics.median(x[1] for x in runs),
                         max(x[2] for x in runs), max(x[3] for x in runs)))
    base = rows[0][1]
    lines = [
        f"{args.logs:,} logs in one .tar.gz ({mib:.1f} MiB; copies of the corpus logs, a third "
        f"gzip-compressed), {os.cpu_count()} cores, load average before the runs "
        f"{load[0]:.1f}, median of {args.repeat}; the csv is the same for every --jobs",
        "",
        "| --jobs | s | logs/s | speed-up | CPU s | logs per CPU s | peak RSS, largest process MiB | "
        "peak RSS, all processes MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for jobs, wall, cpu, big, tree in rows:
        lines.append(f"| {jobs} | {wall:.1f} | {args.logs / wall:.0f} | {base / wall:.2f}x | {cpu:.1f} | "
                     f"{args.logs / cpu:.0f} | {big / 1024:.0f} | {tree / 1024:.0f} |")
    table = "\n".join(lines) + "\n"
    Path(args.output).write_text(table, encoding="utf-8")
    print(table, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
