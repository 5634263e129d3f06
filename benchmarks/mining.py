"""Template mining speed and memory on a big SGLang log (not a test).

    python benchmarks/mining.py                  # 2,000,000 lines
    python benchmarks/mining.py --lines 200000
    python benchmarks/mining.py --own            # the generator below, which fills the cluster cap
    python benchmarks/mining.py --diff 200000    # logsense diff on two halves of a generated log

The log comes from benchmarks/gen_log.py when it exists (unless --own), else from the
generator below (journalctl short format, eight TP ranks, request and batch logs, progress
bars, tracebacks, and 2 % of lines with random words, half of them never alike, so the
cluster cap is reached and the least recently used templates are evicted). It is written
once to benchmarks/out/.

Three passes over the same file, in one process:
  1. read + normalize (the floor: what every command pays);
  2. read + normalize + mask + mine (`TemplateMiner.add_masked`);
  3. read + normalize + mask + match against the mined templates (the novelty test).
"mask + mine alone" times only those calls. Peak RSS (`resource.getrusage`) is printed after
each pass and every 500,000 lines of pass 2: it levels off once the caps are reached.

`--diff N` (`diff_rows`, also called by benchmarks/run.py): whole-process `logsense diff`
on the two N-line halves of benchmarks/gen_log.py's log, beside `analyze` of each half.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))  # benchmarks/run.py's timer

from logsense.normalize import Normalizer  # noqa: E402
from logsense.sources.recorded import open_recorded, read_lines  # noqa: E402
from logsense.templates import TemplateMiner, clear_cache, mask  # noqa: E402

SITE = "/usr/local/lib/python3.12/dist-packages"
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def generate(path: Path, lines: int, seed: int = 1) -> None:
    """A seeded SGLang TP8 service log: startup, then serving traffic until `lines` lines."""
    rnd = random.Random(seed)
    t = 1_767_225_600.0
    n = 0

    def word() -> str:
        return "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))

    with open(path, "w", encoding="utf-8") as fh:

        def emit(msg: str, rank: int | None = None, prefixed: bool = True) -> None:
            nonlocal n, t
            t += rnd.random() * 0.05
            clock = time.strftime("%b %d %H:%M:%S", time.gmtime(t))
            body = msg
            if prefixed:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
                body = f"[{stamp}{'' if rank is None else f' TP{rank}'}] {msg}"
            fh.write(f"{clock} gpu-node-07 python3[48213]: {body}\n")
            n += 1

        emit("server_args=ServerArgs(model_path='/models/Qwen3-235B-A22B-FP8', tp_size=8, "
             + ", ".join(f"opt_{i}={rnd.randint(0, 9)}" for i in range(300)) + ")")
        for r in range(8):
            emit("Init torch distributed begin.", r)
        for r in range(8):
            emit(f"Load weight begin. avail mem={rnd.uniform(70, 80):.2f} GB", r)
        for i in range(49):
            emit(f"Multi-thread loading shards: {i * 2}% Completed | {i}/48 [00:{i:02d}<03:10, "
                 f"{rnd.uniform(2, 5):.2f}s/it]", prefixed=False)
        for r in range(8):
            emit(f"Load weight end. elapsed={rnd.uniform(180, 200):.2f} s, type=Qwen3MoeForCausalLM, "
                 f"avail mem={rnd.uniform(20, 30):.2f} GB, mem usage=59.73 GB.", r)
            emit(f"Using default MoE kernel config. Performance might be sub-optimal! Config file not found at "
                 f"{SITE}/sglang/srt/layers/moe/configs/E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8.json", r)
        emit("The server is fired up and ready to roll!")
        while n < lines:
            x = rnd.random()
            if x < 0.35:
                emit(f"Decode batch, #running-req: {rnd.randint(1, 256)}, #token: {rnd.randint(100, 900000)}, "
                     f"token usage: {rnd.random():.2f}, cuda graph: True, gen throughput (token/s): "
                     f"{rnd.uniform(100, 9000):.2f}, #queue-req: {rnd.randint(0, 30)}", 0)
            elif x < 0.55:
                emit(f"Prefill batch, #new-seq: {rnd.randint(1, 8)}, #new-token: {rnd.randint(1, 8192)}, "
                     f"#cached-token: {rnd.randint(0, 8192)}, token usage: {rnd.random():.2f}, #running-req: "
                     f"{rnd.randint(0, 256)}, #queue-req: {rnd.randint(0, 9)}", 0)
            elif x < 0.85:
                route = rnd.choice(("/v1/chat/completions", "/generate", "/health", "/v1/models", "/metrics"))
                emit(f'INFO:     10.{rnd.randint(0, 255)}.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}:'
                     f'{rnd.randint(1024, 65535)} - "{"GET" if route in ("/health", "/v1/models", "/metrics") else "POST"} '
                     f'{route} HTTP/1.1" 200 OK')
            elif x < 0.93:
                r = rnd.randint(0, 7)
                emit(f"Capturing batches (bs={rnd.choice((1, 2, 4, 8, 16))} avail_mem={rnd.uniform(1, 9):.2f} GB): "
                     f"{rnd.randint(0, 100)}%|{'█' * rnd.randint(0, 10):<10}| {rnd.randint(0, 36)}/36 "
                     f"[00:{rnd.randint(0, 59):02d}<00:{rnd.randint(0, 59):02d}, {rnd.uniform(1, 3):.2f}it/s]", r)
            elif x < 0.96:
                emit("Scheduler hit an exception: Traceback (most recent call last):", rnd.randint(0, 7))
                for f, fn in (("scheduler.py", "event_loop_overlap"), ("tp_worker.py", "forward_batch_generation"),
                              ("model_runner.py", "forward_decode"), ("cuda_graph_runner.py", "replay")):
                    emit(f'  File "{SITE}/sglang/srt/{f}", line {rnd.randint(10, 3000)}, in {fn}', prefixed=False)
                    emit(f"    return self.{fn}(batch)", prefixed=False)
                emit("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                     f"{rnd.uniform(1, 9):.2f} GiB. GPU {rnd.randint(0, 7)} has a total capacity of 139.81 GiB",
                     prefixed=False)
            elif x < 0.98:
                emit(f"Cache flushed for request {rnd.getrandbits(128):032x} after {rnd.randint(1, 999)} ms", 0)
            elif x < 0.99:
                emit(f"Unexpected {rnd.choice(WORDS)}{rnd.randint(0, 99)} near {rnd.choice(WORDS)}"
                     f"{rnd.randint(0, 99)}.{rnd.choice(WORDS)}_{rnd.choice(WORDS)}", rnd.randint(0, 7))
            else:  # never seen twice: these fill the cluster cap
                emit(f"{word()} {word()} lookup failed for {word()} {word()}", rnd.randint(0, 7))


def halves(lines: int) -> tuple[Path, Path]:
    """The two `lines`-line halves of gen_log.py's log of 2 x `lines` lines (written once to benchmarks/out/)."""
    OUT.mkdir(exist_ok=True)
    good, bad = OUT / f"diff-{lines}-a.log", OUT / f"diff-{lines}-b.log"
    if not (good.exists() and bad.exists()):
        whole = OUT / f"sglang-{2 * lines}.log"  # the same file benchmarks/run.py uses
        if not whole.exists():
            subprocess.run([sys.executable, str(HERE / "gen_log.py"), "--lines", str(2 * lines), "--seed", "1", "-o",
                            str(whole)], check=True)
        with open(whole, "rb") as src, open(good, "wb") as a, open(bad, "wb") as b:
            for i, line in enumerate(src):
                (a if i < lines else b).write(line)
    return good, bad


def diff_rows(lines: int = 200_000, repeat: int = 3, every_line: bool = False) -> list[str]:
    """`logsense diff` on two halves of a generated log against `analyze` of each half, as a markdown table.

    Whole processes, `repeat` rounds of analyze A, analyze B, diff (interleaved, as in run.py);
    medians, CPU seconds beside wall seconds. "x analyze" is the median over the rounds of the
    diff's time over the two analyze runs of the same round (spread: lowest-highest).
    `every_line` adds the diff fed every line (LOGSENSE_SCAN=off: what diff did before it read
    through the scanner), run once.
    """
    from run import Sample, rounds, run_once

    good, bad = halves(lines)
    ls = [sys.executable, "-m", "logsense"]
    a_label, b_label = (f"logsense analyze --format json {x} ({lines:,} lines)" for x in "AB")
    diff_label = "logsense diff --format json A B"
    measured = rounds({a_label: [*ls, "analyze", "--format", "json", str(good)],
                       b_label: [*ls, "analyze", "--format", "json", str(bad)],
                       diff_label: [*ls, "diff", "--format", "json", str(good), str(bad)]}, repeat)
    if every_line:
        measured["LOGSENSE_SCAN=off logsense diff --format json A B (every line, once)"] = [
            run_once([*ls, "diff", "--format", "json", str(good), str(bad)], {"LOGSENSE_SCAN": "off"})]
    both = [Sample(x.wall + y.wall, x.cpu + y.cpu, 0) for x, y in zip(measured[a_label], measured[b_label],
                                                                        strict=True)]
    out = [f"diff on two halves of a generated log, {repeat} rounds (load average {os.getloadavg()[0]:.1f} at "
           "the end):", "", "| command | wall s | CPU s | lines/s (wall) | lines/s (CPU) | x analyze (wall) | "
           "x analyze (CPU) | peak RSS MiB | wall s (fastest) | x analyze spread |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for label, samples in measured.items():
        n = 2 * lines if "diff" in label else lines
        wall = statistics.median(x.wall for x in samples)
        cpu = statistics.median(x.cpu for x in samples)
        ratio, spread = " | ", " "
        if "diff" in label:  # (the every-line diff, run once, against the first round)
            walls = [x.wall / y.wall for x, y in zip(samples, both, strict=False)]
            cpus = [x.cpu / y.cpu for x, y in zip(samples, both, strict=False)]
            ratio = f"{statistics.median(walls):.2f} | {statistics.median(cpus):.2f}"
            spread = f"{min(walls):.2f}-{max(walls):.2f}"
        out.append(f"| {label} | {wall:.2f} | {cpu:.2f} | {n / wall:,.0f} | {n / cpu:,.0f} | {ratio} | "
                   f"{max(x.rss for x in samples) / 1024:.1f} | {min(x.wall for x in samples):.2f} | {spread} |")
    return out


def messages(path: Path):
    fp, name = open_recorded(str(path))
    with fp:
        norm = Normalizer()
        for line_no, text in read_lines(fp, name):
            yield from norm.feed(line_no, text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--max-clusters", type=int, default=20_000)
    ap.add_argument("--own", action="store_true",
                    help="use the generator in this file even when gen_log.py exists (it fills the cluster cap)")
    ap.add_argument("--diff", type=int, metavar="N", help="time logsense diff on two N-line halves instead")
    ap.add_argument("--every-line", action="store_true", help="with --diff: also the diff fed every line")
    ap.add_argument("--generate", metavar="PATH", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.diff:
        print("\n".join(diff_rows(a.diff, every_line=a.every_line)))
        return 0
    if a.generate:
        generate(Path(a.generate), a.lines)
        return 0
    OUT.mkdir(exist_ok=True)
    gen = HERE / "gen_log.py"
    if gen.exists() and not a.own:
        path = OUT / f"sglang-{a.lines}.log"  # the same file benchmarks/run.py uses
        cmd = [sys.executable, str(gen), "--lines", str(a.lines), "--seed", "1", "-o", str(path)]
    else:
        path = OUT / f"mining-{a.lines}.log"
        cmd = [sys.executable, __file__, "--lines", str(a.lines), "--generate", str(path)]
    if not path.exists():
        subprocess.run(cmd, check=True)  # in a child: the generator's memory is not counted here
    size = path.stat().st_size / 1e6
    print(f"{path.name}: {size:.0f} MB; peak RSS at start {peak_mib():.1f} MiB")

    t = time.perf_counter()
    n = sum(1 for _ in messages(path))
    t_read = time.perf_counter() - t
    print(f"1. read + normalize:          {n:,} records in {t_read:.1f} s = {n / t_read:,.0f} lines/s; "
          f"peak RSS {peak_mib():.1f} MiB")

    miner = TemplateMiner(max_clusters=a.max_clusters)
    clock = time.perf_counter
    spent = 0.0
    t = clock()
    for i, rec in enumerate(messages(path), 1):
        t0 = clock()
        miner.add_masked(mask(rec.message))
        spent += clock() - t0
        if i % 500_000 == 0:
            print(f"   {i:>9,} lines mined: {len(miner):,} templates, {miner.evicted:,} evicted, "
                  f"peak RSS {peak_mib():.1f} MiB")
    t_mine = clock() - t
    print(f"2. read + normalize + mine:   {n / t_mine:,.0f} lines/s; mask + mine alone {n / spent:,.0f} lines/s; "
          f"{len(miner):,} templates (cap {a.max_clusters:,}), {miner.evicted:,} evicted; peak RSS {peak_mib():.1f} MiB")

    clear_cache()
    spent, novel = 0.0, 0
    t = clock()
    for rec in messages(path):
        t0 = clock()
        novel += miner.match_masked(mask(rec.message)) is None
        spent += clock() - t0
    t_match = clock() - t
    print(f"3. read + normalize + match:  {n / t_match:,.0f} lines/s; mask + match alone {n / spent:,.0f} lines/s; "
          f"{novel:,} lines fit no live template; peak RSS {peak_mib():.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
