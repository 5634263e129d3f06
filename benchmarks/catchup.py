"""tail's catch-up and history on logs with serving traffic and on a crash loop, beside analyze of the same file.

    python benchmarks/catchup.py                      # this tree
    python benchmarks/catchup.py --before ../old-tree # and another tree, in the same rounds
    python benchmarks/catchup.py --tree ../new-tree   # measure a checkout other than this one
    python benchmarks/catchup.py --only crash-loop --restarts 3000  # one log, a longer loop

Logs (written to benchmarks/out/ once):
- serving-real: a recorded SGLang 0.5.23 startup that reached ready (corpora/recorded/) followed by
  1,500,000 serving lines in its own shape (`gen_log.py --after`);
- serving-journal: the synthetic TP8 journal of `gen_log.py` (300,000 lines, mostly serving traffic,
  crash restarts); tail reads it from its latest startup;
- crash-loop: the seed's FA4 incident (corpora/mission/flash-attn-cute-warmup.log) repeated 300 times
  (`--restarts`);
- crash-loop-shifted: the same loop, each copy at its own time (its stamps moved 907 s a copy) and the
  seconds of every other copy one longer (every third line's stamps a second later).

Each command is a whole process; every round runs each once (analyze, then the others), so a ratio
over analyze is taken within one round. Prints a markdown table: median wall s, CPU s, peak RSS MiB,
lines/s, and the median of the per-round ratios over analyze.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import OUT, Sample, rounds

ROOT = Path(__file__).resolve().parent.parent
RESTARTS = 300
# journalctl's short stamp and SGLang's own, as they begin the FA4 incident's lines
_STAMPS = re.compile(r"^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)(?:(.{0,80}?\[)(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d))?")


def shifted(text: str, copy: int) -> str:
    """One copy of a startup at its own time: its lines' leading stamps moved."""
    out = []
    for i, line in enumerate(text.split("\n")):
        move = timedelta(seconds=907 * copy + (1 if copy % 2 and i % 3 == 0 else 0))

        def one(m: re.Match, move: timedelta = move) -> str:
            short = (datetime.strptime("2026 " + m[1], "%Y %b %d %H:%M:%S") + move).strftime("%b %d %H:%M:%S")
            own = m[3] and (datetime.strptime(m[3], "%Y-%m-%d %H:%M:%S") + move).strftime("%Y-%m-%d %H:%M:%S")
            return short + (m[2] or "") + (own or "")

        out.append(_STAMPS.sub(one, line, count=1))
    return "\n".join(out)


def logs(restarts: int = RESTARTS) -> dict[str, Path]:
    OUT.mkdir(exist_ok=True)
    gen = [sys.executable, str(ROOT / "benchmarks" / "gen_log.py")]
    real = OUT / "serving-real.log"
    if not real.exists():
        subprocess.run([*gen, "--after", str(ROOT / "corpora/recorded/sglang-0.5.23/healthy-gpt2.log"),
                        "--lines", "1500000", "-o", str(real)], check=True)
    journal = OUT / "serving-journal-300000.log"
    if not journal.exists():
        subprocess.run([*gen, "--lines", "300000", "--seed", "1", "-o", str(journal)], check=True)
    loop = OUT / f"crash-loop-{restarts}.log"
    if not loop.exists():
        one = (ROOT / "corpora/mission/flash-attn-cute-warmup.log").read_bytes()
        loop.write_bytes(one * restarts)
    moved = OUT / f"crash-loop-shifted-{restarts}.log"
    if not moved.exists():
        text = (ROOT / "corpora/mission/flash-attn-cute-warmup.log").read_bytes().decode()
        moved.write_bytes("".join(shifted(text, k) for k in range(restarts)).encode())
    return {"serving-real": real, "serving-journal": journal, "crash-loop": loop, "crash-loop-shifted": moved}


def commands(tree: Path, log: Path, kind: str) -> dict[str, str]:
    # -P: the tree comes from PYTHONPATH alone, never from the directory the command runs in
    py = f"PYTHONPATH={shlex.quote(str(tree))} {shlex.quote(sys.executable)} -P -m logsense"
    f = shlex.quote(str(log))
    out = {"analyze": f"{py} analyze {f} --format json"}
    if kind.startswith("crash-loop"):
        out["history"] = f"{py} history {f} --format json"
        out["tail --from-start jsonl"] = f"{py} tail {f} --no-follow --from-start --format jsonl"
    else:
        out["tail text"] = f"{py} tail {f} --no-follow"
        out["tail jsonl"] = f"{py} tail {f} --no-follow --format jsonl"
        out["tail --until-ready jsonl"] = f"{py} tail {f} --no-follow --until-ready --format jsonl"
    return out


def lines_of(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, help="another tree, run in the same rounds")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the tree measured as 'after' (default: this one)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--restarts", type=int, default=RESTARTS, help="startups in the crash loop")
    ap.add_argument("--only", choices=("serving-real", "serving-journal", "crash-loop", "crash-loop-shifted"), help="one log only")
    a = ap.parse_args()
    after = a.tree.resolve()
    trees = {"after": after} if a.before is None else {"before": a.before.resolve(), "after": after}
    print("| log | lines | tree | command | wall s | CPU s | peak RSS MiB | lines/s | x analyze (wall, median of rounds) "
          "| x before (wall / CPU, median of rounds) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, log in logs(a.restarts).items():
        if a.only and kind != a.only:
            continue
        n = lines_of(log)
        cases: dict[str, str] = {}
        for name, tree in trees.items():
            for label, cmd in commands(tree, log, kind).items():
                cases[f"{name}|{label}"] = cmd
        got = rounds(cases, a.repeat)
        for key, samples in got.items():
            name, label = key.split("|")
            ref = got[f"{name}|analyze"]
            ratio = statistics.median(s.wall / r.wall for s, r in zip(samples, ref, strict=True))
            wall = statistics.median(s.wall for s in samples)
            cpu = statistics.median(s.cpu for s in samples)
            rss = max(s.rss for s in samples) / 1024
            before = got.get(f"before|{label}") if name == "after" else None
            vs = (f"{statistics.median(s.wall / b.wall for s, b in zip(samples, before, strict=True)):.2f} / "
                  f"{statistics.median(s.cpu / b.cpu for s, b in zip(samples, before, strict=True)):.2f}"
                  if before else "")
            print(f"| {kind} | {n:,} | {name} | `{label}` | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {n / wall:,.0f} | "
                  f"{ratio:.2f} | {vs} |", flush=True)
            _check(samples)
    return 0


def _check(samples: list[Sample]) -> None:
    codes = {s.code for s in samples}
    if len(codes) > 1:
        print(f"<!-- exit codes differ between rounds: {sorted(codes)} -->")


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
