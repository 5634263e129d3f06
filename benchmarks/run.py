"""Throughput, memory and start-up of `logsense analyze` against grep on the same patterns.

    python benchmarks/run.py                 # 100k and 2M lines, median of 5, writes benchmarks/out/
    python benchmarks/run.py --lines 100000 --repeat 3
    python benchmarks/run.py --quick         # 100k lines, median of 3: under a minute

Every figure is a whole process (start-up and rule compilation included), page cache warm;
ratios are wall time over `LC_ALL=C grep -E -c -f patterns FILE` on the same file. The search
backend is the default install's (Aho-Corasick) unless --backend says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"


def sh(cmd: str, repeat: int) -> tuple[float, int]:
    """Median wall seconds and peak RSS (KiB) of a shell command."""
    times, rss = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "bash", "-c", cmd], capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        try:
            rss = max(rss, int(p.stderr.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            pass
    return statistics.median(times), rss


def generate(lines: int) -> Path:
    path = OUT / f"sglang-{lines}.log"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "gen_log.py"), "--lines", str(lines), "--seed", "1", "-o", str(path)],
                       check=True)
    return path


def costliest_rules(path: Path, top: int = 10) -> list[tuple[str, float, int]]:
    """Seconds spent in each rule's regexes on one log (in-process, instrumented)."""
    sys.path.insert(0, str(ROOT))
    from logsense import load_rules
    from logsense.engine import Matcher
    from logsense.pipeline import Pipeline
    from logsense.scan import feed_stream
    from logsense.sources.recorded import open_recorded

    spent: dict[str, list[float]] = {}
    orig = Matcher._search

    def timed(self, ri, p, rec):
        t = time.perf_counter()
        try:
            return orig(self, ri, p, rec)
        finally:
            s = spent.setdefault(self.rules.rules[ri].id, [0.0, 0])
            s[0] += time.perf_counter() - t
            s[1] += 1

    Matcher._search = timed
    try:
        p = Pipeline(load_rules())
        fp, name = open_recorded(str(path))
        with fp:
            feed_stream(fp, p, name)
        p.finish(name)
    finally:
        Matcher._search = orig
    rows = sorted(((k, v[0], v[1]) for k, v in spent.items()), key=lambda r: -r[1])
    return rows[:top]


SMALL_LOGS = {  # a ~200-line failure and a ~200-line healthy start: what an operator runs it on most
    "small.log": ROOT / "corpora" / "constructed" / "kv-pressure-page-size-64-tp8.log",
    "healthy.log": ROOT / "corpora" / "healthy" / "k26-ddtree-ready.log",
}


def whole_process(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Median wall and CPU seconds (user + system) and peak RSS (KiB) of a command, its output discarded."""
    walls, cpus, rss = [], [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *cmd], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        walls.append(time.perf_counter() - t)
        user, system, peak = p.stderr.strip().splitlines()[-1].split()
        cpus.append(float(user) + float(system))
        rss = max(rss, int(peak))
    return statistics.median(walls), statistics.median(cpus), rss


def startup_rows(repeat: int) -> list[str]:
    """Whole-process time of the short commands: median wall and CPU seconds, as a markdown table.

    Run as `python -m logsense` (an installed `logsense` script starts the same way, without a
    version manager's shim in front). CPU seconds are given beside wall seconds because they
    say more on a shared machine. The rule-pack cache is warm except where the row says cold.
    """
    def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
        return whole_process(cmd, repeat, env)

    py = [sys.executable]
    ls = [*py, "-m", "logsense"]
    subprocess.run([*ls, "analyze", str(SMALL_LOGS["small.log"])], capture_output=True)  # warms the rule cache
    cases = [
        ("python -c pass", [*py, "-c", "pass"], None),
        ("python -c 'import typer, rich.console' (the CLI's libraries)", [*py, "-c", "import typer, rich.console"], None),
        ("logsense --help", [*ls, "--help"], None),
    ]
    for name, path in SMALL_LOGS.items():
        n_lines = path.read_bytes().count(b"\n")
        cases += [
            (f"logsense analyze {name} ({n_lines} lines)", [*ls, "analyze", str(path)], None),
            (f"logsense analyze --format json {name}", [*ls, "analyze", "--format", "json", str(path)], None),
            (f"logsense tail --until-ready {name} (a finished log: start to verdict)",
             [*ls, "tail", "--until-ready", str(path)], None),
        ]
    cases.append(("logsense analyze small.log, cold (LOGSENSE_NO_CACHE=1)",
                  [*ls, "analyze", str(SMALL_LOGS["small.log"])], {"LOGSENSE_NO_CACHE": "1"}))
    out = [f"start-up, median of {repeat} (load average {os.getloadavg()[0]:.1f} at the start):", "",
           "| start-up | wall s | CPU s | peak RSS MiB |", "|---|---|---|---|"]
    for label, cmd, env in cases:
        wall, cpu, rss = run(cmd, env)
        out.append(f"| {label} | {wall:.3f} | {cpu:.3f} | {rss / 1024:.1f} |")
    return out


def where_time_goes(path: Path) -> list[tuple[str, float]]:
    """CPU seconds of each part of `analyze` on one log, in-process: the search thread and each pipeline stage."""
    sys.path.insert(0, str(ROOT))
    from logsense import load_rules
    from logsense.analysis import analysis_pipeline
    from logsense.engine import Matcher, Ranker
    from logsense.facts import Facts
    from logsense.framing import Framer
    from logsense.normalize import Normalizer
    from logsense.scan import feed_stream
    from logsense.sources.recorded import open_recorded
    from logsense.timeline import Timeline

    spent: dict[str, float] = {}

    def timed(label: str, fn):
        def wrapper(*args, **kwargs):
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.thread_time() - t
        return wrapper

    stages = [(Normalizer, "feed", "normalize (prefixes, timestamps, levels)"),
              (Timeline, "feed", "phases (timeline)"), (Facts, "feed", "facts"),
              (Framer, "feed", "framing (multi-line events)"), (Matcher, "match", "matching (rule regexes)"),
              (Ranker, "add", "ranking")]
    originals = [(cls, name, getattr(cls, name)) for cls, name, _ in stages]
    c0, t0 = time.process_time(), time.thread_time()
    p = analysis_pipeline(load_rules())
    startup = time.thread_time() - t0
    try:
        for cls, name, label in stages:
            setattr(cls, name, timed(label, getattr(cls, name)))
        if p.watcher is not None:
            p.watcher.event = timed("classifier digest", p.watcher.event)
        p.feed_line = timed("feed_line", p.feed_line)
        fp, name = open_recorded(str(path))
        t1 = time.thread_time()
        with fp:
            feed_stream(fp, p, name, tail=p.reading.tail)
        fed = time.thread_time() - t1
        t2 = time.thread_time()
        json.dumps(p.finish(name).to_json())
        report = time.thread_time() - t2
    finally:
        for cls, name, fn in originals:
            setattr(cls, name, fn)
    main_thread = time.thread_time() - t0
    feed_line = spent.pop("feed_line", 0.0)
    rows = [("start-up (rules, classifier)", startup),
            ("search thread (read, Aho-Corasick, line starts)", time.process_time() - c0 - main_thread),
            ("block handling in the main thread (line counts, slicing, decode)", fed - feed_line)]
    rows += sorted(spent.items(), key=lambda r: -r[1])
    rows += [("pipeline glue (the rest of feed_line)", feed_line - sum(spent.values())),
             ("report (finish, JSON)", report)]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", default="100000,2000000", help="comma-separated log sizes")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="100k lines, median of 3 (under a minute)")
    ap.add_argument("--backend", default="aho-corasick",
                    help="LOGSENSE_SCAN_BACKEND for logsense: aho-corasick (the default install), hyperscan, find "
                         "or default (the best installed)")
    a = ap.parse_args()
    if a.quick:
        a.lines, a.repeat = "100000", 3
    if a.backend == "default":
        os.environ.pop("LOGSENSE_SCAN_BACKEND", None)
    else:
        os.environ["LOGSENSE_SCAN_BACKEND"] = a.backend
    OUT.mkdir(exist_ok=True)
    logsense = shutil.which("logsense") or f"{sys.executable} -m logsense"
    patterns = OUT / "patterns.txt"
    with open(patterns, "w") as fh:
        subprocess.run([*logsense.split(), "rules", "export"], stdout=fh, check=True)
    n_patterns = sum(1 for _ in open(patterns))
    rows = []
    for n in [int(x) for x in a.lines.split(",")]:
        path = generate(n)
        size = path.stat().st_size / 1e6
        # GNU grep stops at the first match when its output is /dev/null: count into a file instead
        sink = OUT / "count.txt"
        grep_cmd = f"LC_ALL=C grep -E -c -f {patterns} {path} > {sink}"
        cases = [
            ("cat > /dev/null (I/O floor)", f"cat {path} > /dev/null"),
            ("LC_ALL=C grep -E -c -f (reference)", grep_cmd),
            ("logsense analyze --format json FILE", f"{logsense} analyze --format json {path} > /dev/null"),
            ("cat FILE | grep -E -c -f", f"cat {path} | LC_ALL=C grep -E -c -f {patterns} > {sink}"),
            ("cat FILE | logsense analyze --format json -", f"cat {path} | {logsense} analyze --format json - > /dev/null"),
        ]
        measured = {label: sh(cmd, a.repeat) for label, cmd in cases}
        ref_file = measured["LC_ALL=C grep -E -c -f (reference)"][0]
        ref_pipe = measured["cat FILE | grep -E -c -f"][0]
        for label, (secs, rss) in measured.items():
            ref = ref_pipe if label.startswith("cat FILE |") else ref_file
            rows.append((n, size, label, secs, n / secs, size / secs, secs / ref, rss / 1024))
    lines = [f"patterns: {n_patterns} (from `logsense rules export`), repeat {a.repeat}, "
             f"scan backend: {os.environ.get('LOGSENSE_SCAN_BACKEND', 'default')}", "",
             "| lines | MB | method | s | lines/s | MB/s | x grep | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|"]
    for n, size, label, secs, lps, mbs, ratio, rss in rows:
        lines.append(f"| {n:,} | {size:.0f} | {label} | {secs:.2f} | {lps:,.0f} | {mbs:.0f} | {ratio:.2f} | {rss:.1f} |")
    lines += ["", *startup_rows(a.repeat if a.quick else max(a.repeat, 10))]
    from mining import diff_rows

    lines += ["", *diff_rows(100_000 if a.quick else 200_000, 3)]
    biggest = generate(int(a.lines.split(",")[0]))
    lines += ["", f"costliest rules on {biggest.name} (regex time in-process):", "", "| rule | s | searches |",
              "|---|---|---|"]
    lines += [f"| {rid} | {secs:.4f} | {count} |" for rid, secs, count in costliest_rules(biggest)]
    largest = generate(max(int(x) for x in a.lines.split(",")))
    parts = where_time_goes(largest)
    total = sum(secs for _, secs in parts)
    lines += ["", f"where the time goes on {largest.name} (in-process CPU seconds; the search thread runs beside "
              "the pipeline):", "", "| part | s | share |", "|---|---|---|"]
    lines += [f"| {label} | {secs:.2f} | {secs / total:.0%} |" for label, secs in parts]
    text = "\n".join(lines)
    print(text)
    (OUT / "results.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
