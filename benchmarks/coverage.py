"""What the rules know of the servers' own failure messages (not a test).

    python benchmarks/coverage.py WHEEL_OR_DIR [...]          # e.g. sglang-0.5.23-...whl vllm-...whl
    python benchmarks/coverage.py --areas sglang-0.5.23-...whl  # and the per-area table
    python benchmarks/coverage.py --markdown WHEEL...            # one table row per package (README)

For each wheel (or installed package / source dir) it mines every raise, logger.error/critical/
exception/fatal, sys.exit("...") and assert message on the package's startup path (the globs in
logsense/data/coverage/<package>.yaml), feeds each one, filled in, through the bundled rules, and
prints N of M sites covered by a rule, K triaged, F caught only as a failure of unknown cause,
U uncovered, with the time it took. `logsense rules coverage WHEEL` lists the sites themselves.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from logsense.coverage import measure  # noqa: E402
from logsense.coverage.classify import Status  # noqa: E402
from logsense.coverage.report import COUNTED, render_text, summary  # noqa: E402
from logsense.rules import load_rules  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="+", help="wheels, installed packages or source dirs")
    ap.add_argument("--package", help="package data to use when the name cannot be read from the source")
    ap.add_argument("--areas", action="store_true", help="print the per-area table too")
    ap.add_argument("--markdown", action="store_true", help="one markdown table row per package")
    args = ap.parse_args()
    rules = load_rules()
    rows = []
    for src in args.sources:
        t0 = time.monotonic()
        report = measure(src, rules, args.package)
        took = time.monotonic() - t0
        c = report.counts()
        m = sum(c[s] for s in COUNTED)
        rows.append((report.title, m, c, took))
        if not args.markdown:
            print(render_text(report, sites=False) if args.areas else summary(report))
            print(f"  ({len(report.verdicts)} sites in {took:.1f}s)\n")
    if args.markdown:
        print("| package | startup sites with text | covered by a rule | triaged | failure, cause unknown | uncovered |")
        print("|---|---|---|---|---|---|")
        for title, m, c, _ in rows:
            pct = f" ({100 * c[Status.COVERED] / m:.0f} %)" if m else ""
            print(f"| {title} | {m} | {c[Status.COVERED]}{pct} | {c[Status.TRIAGED]} | {c[Status.GENERIC]} "
                  f"| {c[Status.UNCOVERED]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
