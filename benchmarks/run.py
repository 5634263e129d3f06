"""Throughput, memory and start-up of `logsense analyze` against grep on the same patterns.

    python benchmarks/run.py                 # 100k and 2M lines, 5 rounds, writes benchmarks/out/
    python benchmarks/run.py --lines 100000 --repeat 3
    python benchmarks/run.py --quick         # 100k lines, 3 rounds: under a minute on a quiet machine
    python benchmarks/run.py --quick --twice # the whole table twice, and whether the figures agree within 15 %

Every figure is a whole process (start-up and rule compilation included), page cache warm.
The reference and the commands compared with it run interleaved, one of each per round
(grep, analyze, grep, analyze ...), and each ratio is taken within its round: load that
comes and goes on a shared machine moves both sides of a pair alike. A ratio is given as the
median of the rounds' ratios, their spread (lowest to highest), and the ratio of the fastest
runs; CPU seconds (user + system of the process and its children, from `os.wait4`) beside
wall seconds. The search backend is the default install's (Aho-Corasick) unless --backend
says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"


AGREE = 0.15  # two runs of the table agree when each compared figure differs by at most this


@dataclass(frozen=True)
class Sample:
    """One whole process: wall seconds, CPU seconds (user + system, its children included), peak RSS in KiB."""

    wall: float
    cpu: float
    rss: int
    code: int = 0  # the exit status


def run_once(cmd: str | Sequence[str], env: dict[str, str] | None = None) -> Sample:
    """Run a command (a string goes to `bash -c`), its output discarded: wall, CPU (`os.wait4`) and peak RSS.

    The peak RSS comes from /usr/bin/time, a small process in between: Linux counts the RSS of
    the process that forked a child in the child's own peak (this script's, once it has run an
    in-process profile), while the CPU seconds of `os.wait4` are the child's and its children's.
    """
    argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    with tempfile.NamedTemporaryFile("r", prefix="rss-", dir=OUT) as peak:
        t = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", peak.name, *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        kib = peak.read().split()
    return Sample(wall, usage.ru_utime + usage.ru_stime, int(kib[-1]) if kib and kib[-1].isdigit() else 0,
                  p.returncode)


def rounds(cases: dict[str, str | Sequence[str]], repeat: int,
           env: dict[str, dict[str, str]] | None = None) -> dict[str, list[Sample]]:
    """Each command once per round, in the given order, for `repeat` rounds: a reference and what is
    compared with it are measured side by side, so a ratio can be taken within each round."""
    out: dict[str, list[Sample]] = {label: [] for label in cases}
    for _ in range(repeat):
        for label, cmd in cases.items():
            out[label].append(run_once(cmd, (env or {}).get(label)))
    return out


@dataclass(frozen=True)
class Ratio:
    """How one command compares with its reference over paired rounds."""

    median: float  # the median of the per-round wall ratios
    low: float  # the lowest and highest per-round wall ratio
    high: float
    fastest: float  # the fastest wall time over the reference's fastest
    cpu: float  # the median of the per-round CPU ratios

    @classmethod
    def of(cls, samples: list[Sample], reference: list[Sample]) -> Ratio:
        walls = [a.wall / b.wall for a, b in zip(samples, reference, strict=True)]
        cpus = [a.cpu / b.cpu for a, b in zip(samples, reference, strict=True) if b.cpu > 0]
        return cls(statistics.median(walls), min(walls), max(walls),
                   min(x.wall for x in samples) / min(x.wall for x in reference),
                   statistics.median(cpus) if cpus else float("nan"))

    @property
    def spread(self) -> str:
        return f"{self.low:.2f}-{self.high:.2f}"


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


def startup_rows(repeat: int) -> list[str]:
    """Whole-process time of the short commands, as a markdown table.

    A start-up takes ~0.1-0.2 s, and on a shared machine one run of it can take half as long
    again as the next, so each command is run `repeat` times, interleaved (one of each per round,
    `python -c pass` first): what the load does to one round it does to all of them. Given per
    command: the fastest wall time (the least disturbed run: the figure two runs of the table
    are compared on), the median wall time, the median of each round's wall time above `python
    -c pass`'s (logsense's own share) and over it (x python: what the machine's speed of the
    moment does to every start-up alike cancels out), and CPU seconds (user + system, which move
    less with load than wall time), fastest and median. Run as `python -m logsense` (an installed `logsense`
    script starts the same way, without a version manager's shim in front); the rule-pack cache
    is warm except in the last row, which is run 3 times.
    """
    py = [sys.executable]
    ls = [*py, "-m", "logsense"]
    subprocess.run([*ls, "analyze", str(SMALL_LOGS["small.log"])], capture_output=True)  # warms the caches
    cases: dict[str, list[str]] = {
        "python -c pass": [*py, "-c", "pass"],
        "python -S -c pass (no site-packages: the interpreter alone)": [*py, "-S", "-c", "pass"],
        "python -c 'import typer, rich.console' (the CLI's libraries)": [*py, "-c", "import typer, rich.console"],
        "logsense --help": [*ls, "--help"],
    }
    for name, path in SMALL_LOGS.items():
        n_lines = path.read_bytes().count(b"\n")
        cases[f"logsense analyze {name} ({n_lines} lines)"] = [*ls, "analyze", str(path)]
        cases[f"logsense analyze --format json {name}"] = [*ls, "analyze", "--format", "json", str(path)]
        cases[f"logsense tail --until-ready {name} (a finished log: start to verdict)"] = [
            *ls, "tail", "--until-ready", str(path)]
        cases[f"logsense tail --no-follow {name}"] = [*ls, "tail", "--no-follow", str(path)]
    load = os.getloadavg()[0]
    samples = rounds(dict(cases), repeat)
    cold = "logsense analyze small.log, cold (LOGSENSE_NO_CACHE=1)"
    samples.update(rounds({cold: [*ls, "analyze", str(SMALL_LOGS["small.log"])]}, 3, {cold: {"LOGSENSE_NO_CACHE": "1"}}))
    bare = samples["python -c pass"]
    out = [f"start-up: {repeat} interleaved rounds (load average {load:.1f} at the start, "
           f"{os.getloadavg()[0]:.1f} at the end); over python: the median of each round's wall time above "
           "`python -c pass`'s; x python: the median of each round's ratio to it", "",
           "| start-up | fastest wall s | median wall s | over python s | x python | fastest CPU s | median CPU s "
           "| peak RSS MiB |",
           "|---|---|---|---|---|---|---|---|"]
    for label, xs in samples.items():
        paired = len(xs) == len(bare)
        over = (statistics.median(x.wall - b.wall for x, b in zip(xs, bare, strict=True)) if paired
                else statistics.median(x.wall for x in xs) - statistics.median(b.wall for b in bare))
        # the machine's own speed moves every start-up alike: a ratio within the round cancels it
        times = (statistics.median(x.wall / b.wall for x, b in zip(xs, bare, strict=True)) if paired
                 else statistics.median(x.wall for x in xs) / statistics.median(b.wall for b in bare))
        out.append(f"| {label} | {min(x.wall for x in xs):.3f} | {statistics.median(x.wall for x in xs):.3f} | "
                   f"{over:.3f} | {times:.2f} | {min(x.cpu for x in xs):.3f} | {statistics.median(x.cpu for x in xs):.3f} | "
                   f"{max(x.rss for x in xs) / 1024:.1f} |")
    return out


def where_time_goes(path: Path) -> list[tuple[str, float]]:
    """CPU seconds of each part of `analyze` on one log, in-process: the search child and each pipeline stage."""
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
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
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
    done = resource.getrusage(resource.RUSAGE_CHILDREN)  # the search child is reaped by now
    child = done.ru_utime + done.ru_stime - kids.ru_utime - kids.ru_stime
    feed_line = spent.pop("feed_line", 0.0)
    rows = [("start-up (rules, classifier)", startup),
            ("search child (read, one Aho-Corasick pass, line starts and numbers)",
             child + time.process_time() - c0 - main_thread),
            ("block handling in the main process (taking blocks from the child, slicing, decode)", fed - feed_line)]
    rows += sorted(spent.items(), key=lambda r: -r[1])
    rows += [("pipeline glue (the rest of feed_line)", feed_line - sum(spent.values())),
             ("report (finish, JSON)", report)]
    return rows


def analyze_rows(n: int, patterns: Path, repeat: int) -> list[tuple]:
    """The main table's rows for one log size: grep and analyze from a file and from a pipe, paired by round."""
    path = generate(n)
    size = path.stat().st_size / 1e6
    ls = f"{sys.executable} -m logsense"
    # GNU grep stops at the first match when its output is /dev/null: count into a file instead
    sink = OUT / "count.txt"
    grep_file, grep_pipe = "LC_ALL=C grep -E -c -f (reference)", "cat FILE | grep -E -c -f"
    cases = {
        "cat > /dev/null (I/O floor)": f"cat {path} > /dev/null",
        grep_file: f"LC_ALL=C grep -E -c -f {patterns} {path} > {sink}",
        "logsense analyze --format json FILE": f"{ls} analyze --format json {path} > /dev/null",
        grep_pipe: f"cat {path} | LC_ALL=C grep -E -c -f {patterns} > {sink}",
        "cat FILE | logsense analyze --format json -": f"cat {path} | {ls} analyze --format json - > /dev/null",
    }
    measured = rounds(cases, repeat)
    for label in (grep_file, grep_pipe):  # grep -c: 0 or 1; 2 is an error, and a ratio over it says nothing
        if any(x.code > 1 for x in measured[label]):
            sys.exit(f"{label} failed: {cases[label]} (a pattern grep -E rejects? `logsense rules export`)")
    rows = []
    for label, samples in measured.items():
        ref = measured[grep_pipe if label.startswith("cat FILE |") else grep_file]
        wall = statistics.median(x.wall for x in samples)
        rows.append((n, size, label, wall, n / wall, size / wall, Ratio.of(samples, ref),
                     max(x.rss for x in samples) / 1024, min(x.wall for x in samples),
                     statistics.median(x.cpu for x in samples)))
    return rows


def table(a: argparse.Namespace) -> list[str]:
    """Every section of the benchmark, as markdown lines."""
    patterns = OUT / "patterns.txt"
    with open(patterns, "w") as fh:
        subprocess.run([sys.executable, "-m", "logsense", "rules", "export"], stdout=fh, check=True)
    n_patterns = sum(1 for _ in open(patterns))
    rows = [row for n in [int(x) for x in a.lines.split(",")] for row in analyze_rows(n, patterns, a.repeat)]
    lines = [f"patterns: {n_patterns} (from `logsense rules export`), {a.repeat} rounds (each command once a "
             f"round, interleaved), scan backend: {os.environ.get('LOGSENSE_SCAN_BACKEND', 'default')}, load "
             f"average {os.getloadavg()[0]:.1f} at the end", "",
             "s, lines/s, MB/s: median wall; x grep: median of the per-round wall ratios (spread: lowest-highest); "
             "x grep (fastest): fastest over fastest; x grep (CPU): median of the per-round CPU ratios", "",
             "| lines | MB | method | s | lines/s | MB/s | x grep | peak RSS MiB | s (fastest) | CPU s | x grep spread "
             "| x grep (fastest) | x grep (CPU) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, size, label, secs, lps, mbs, r, rss, fastest, cpu in rows:
        lines.append(f"| {n:,} | {size:.0f} | {cell(label)} | {secs:.2f} | {lps:,.0f} | {mbs:.0f} | {r.median:.2f} | "
                     f"{rss:.1f} | {fastest:.2f} | {cpu:.2f} | {r.spread} | {r.fastest:.2f} | {r.cpu:.2f} |")
    lines += ["", *startup_rows(10 if a.quick else max(a.repeat, 20))]
    from mining import diff_rows

    lines += ["", *diff_rows(100_000 if a.quick else 200_000, a.repeat)]
    biggest = generate(int(a.lines.split(",")[0]))
    lines += ["", f"costliest rules on {biggest.name} (regex time in-process):", "", "| rule | s | searches |",
              "|---|---|---|"]
    lines += [f"| {rid} | {secs:.4f} | {count} |" for rid, secs, count in costliest_rules(biggest)]
    largest = generate(max(int(x) for x in a.lines.split(",")))
    parts = where_time_goes(largest)
    total = sum(secs for _, secs in parts)
    lines += ["", f"where the time goes on {largest.name} (CPU seconds; the search runs beside "
              "the pipeline, in a forked child):", "", "| part | s | share |", "|---|---|---|"]
    lines += [f"| {label} | {secs:.2f} | {secs / total:.0%} |" for label, secs in parts]
    return lines


def cell(text: str) -> str:
    """Text for a markdown table cell (a shell pipe in a command would end the cell)."""
    return text.replace("|", "\\|")


KEYS = ("lines", "method", "command", "start-up")  # the columns that name a row
COMPARED = ("x grep", "x grep (CPU)", "wall s", "CPU s", "lines/s (wall)", "lines/s (CPU)", "x analyze (wall)",
            "x analyze (CPU)", "fastest wall s", "fastest CPU s", "x python")  # the columns whose figures two runs must agree on


def figures(lines: list[str]) -> dict[str, float]:
    """The COMPARED figures of every markdown table in `lines`, named by their row and column."""
    out: dict[str, float] = {}
    header: list[str] = []
    for line in lines:
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if not header:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        row = dict(zip(header, cells, strict=False))
        name = " · ".join(row[k] for k in KEYS if k in row)
        if "logsense" not in name:
            continue  # a reference's own figures (grep, cat, python -c pass) are not what is judged
        for col in COMPARED:
            value = re.sub(r"[,x]", "", row.get(col, ""))
            try:
                out[f"{name} · {col}"] = float(value)
            except ValueError:
                continue
    return out


def agreement(first: list[str], second: list[str]) -> list[str]:
    """Each compared figure of two runs side by side, and whether they are within AGREE of each other.

    The ratios (over grep, over analyze, over `python -c pass`, each taken within its round) are
    what the targets are stated in, and what the machine's speed of the moment cancels out of; the
    seconds and lines/s beside them move with it, and are shown apart.
    """
    a, b = figures(first), figures(second)
    names = [k for k in a if k in b]
    ratios = [k for k in names if k.rsplit(" · ", 1)[1].startswith("x ")]
    out: list[str] = []
    for title, keys in (("ratios", ratios), ("seconds and lines/s", [k for k in names if k not in ratios])):
        agree = 0
        rows = ["| figure | run 1 | run 2 | differs by | within 15 %? |", "|---|---|---|---|---|"]
        for k in keys:
            x, y = a[k], b[k]
            d = abs(x - y) / min(x, y) if min(x, y) > 0 else (0.0 if x == y else float("inf"))
            agree += d <= AGREE
            rows.append(f"| {cell(k)} | {x:,.3g} | {y:,.3g} | {d:.0%} | {'yes' if d <= AGREE else 'no'} |")
        out += [f"two runs of the table, one after the other, {title}: {agree} of {len(keys)} within "
                f"{AGREE:.0%} (differs by: |run 1 - run 2| over the smaller)", "", *rows, ""]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", default="100000,2000000", help="comma-separated log sizes")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (each command once a round)")
    ap.add_argument("--quick", action="store_true", help="100k lines, 3 rounds (under a minute)")
    ap.add_argument("--twice", action="store_true",
                    help="run the whole table twice and say which figures agree within 15 %%")
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
    first = table(a)
    lines = first
    if a.twice:
        second = table(a)
        lines = ["## run 1", "", *first, "", "## run 2", "", *second, "", "## both", "", *agreement(first, second)]
    text = "\n".join(lines)
    print(text)
    (OUT / "results.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
