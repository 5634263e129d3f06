#!/usr/bin/env python3
"""Score a batch of real logs the first time logsense sees them, and append the row to docs/first-sight.md.

usage: tools/first_sight.py BATCH_DIR [--name NAME] [--dry-run]

BATCH_DIR holds `labels.yaml` (the scorer's format: file, cause, accept, fix_any, root_line_visible,
source) and the logs it names. The batch is scored by the shared scorer (`../shared/tools/score`)
on every case and on the cases whose cause line is visible; the learned classifier's stated
probabilities are binned against how often its guess was right. A row, once written, is never
edited: run this before any rule or label-driven change is written for the batch.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "first-sight.md"
SCORER = ROOT.parent / "shared" / "tools" / "score"
SUMMARY = re.compile(r"cases=(?P<cases>\d+) .*errors=(?P<errors>\d+) .*healthy_false_alarms=(?P<flagged>\d+)/(?P<healthy>\d+) "
                     r"failures_called_healthy=(?P<missed>\d+) unknown=(?P<unknown>\d+) "
                     r"named_precision=(?P<prec>\S+) \((?P<named>\d+/\d+)\) fix_hit=(?P<fix>\d+/\d+) top1=(?P<top1>[\d.]+)")
MAYBE = re.compile(r"Maybe (?P<cause>\w+): the learned classifier's best guess \(p=(?P<p>[\d.]+)")
BINS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.01))
TABLE_HEAD = "| batch | date | commit | cases (visible) | top-1 visible | top-1 all | named precision | no failure verdict | unknown | healthy flagged | fix hit |"


def score(labels: Path, visible_only: bool) -> dict[str, str]:
    cmd = [sys.executable, str(SCORER), str(labels)] + (["--visible-only"] if visible_only else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip().splitlines()
    m = SUMMARY.search(out[-1] if out else "")
    if m is None:
        raise SystemExit(f"the scorer printed no summary for {labels}:\n" + "\n".join(out[-5:]))
    if int(m["errors"]):
        # A row is never edited: refuse to write one where logsense itself did not answer.
        raise SystemExit(f"logsense gave no JSON on {m['errors']} cases of {labels}; is it installed?\n"
                         + "\n".join(out[:5]))
    return m.groupdict()


def calibration(batch: Path, cases: list[dict]) -> list[tuple[str, float, bool]]:
    """(kind, stated p, right) for each classifier opinion: a named cause, or a 'maybe' on an unknown."""
    seen = []
    for c in cases:
        if c["cause"] == "healthy":
            continue
        p = subprocess.run(["logsense", "analyze", "--format", "json", str(batch / c["file"])],
                           capture_output=True, text=True, check=False)
        try:
            roots = [d for d in json.loads(p.stdout).get("diagnoses", []) if d.get("root")]
        except json.JSONDecodeError:
            continue
        if not roots:
            continue
        d = roots[0]
        want = {c["cause"], *(c.get("accept") or [])}
        if d.get("origin") == "classifier":
            seen.append(("named", float(d["confidence"]), d["cause"] in want))
        elif d["cause"] == "unknown" and (m := MAYBE.search(d.get("explanation", ""))):
            seen.append(("maybe", float(m["p"]), m["cause"] in want))
    return seen


def calibration_table(name: str, seen: list[tuple[str, float, bool]]) -> str:
    lines = [f"### {name}", "", "| classifier says | p bin | cases | right |", "|---|---|---|---|"]
    for kind in ("named", "maybe"):
        for lo, hi in BINS:
            hits = [ok for k, p, ok in seen if k == kind and lo <= p < hi]
            if hits:
                lines.append(f"| {kind} | {lo:.1f}-{min(hi, 1.0):.1f} | {len(hits)} | {sum(hits)} |")
    if len(lines) == 4:
        lines.append("| (no classifier opinion) | | 0 | 0 |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("batch", type=Path)
    ap.add_argument("--name")
    ap.add_argument("--dry-run", action="store_true", help="print the row, write nothing")
    a = ap.parse_args()
    labels = a.batch / "labels.yaml"
    cases = yaml.safe_load(labels.read_text())
    name = a.name or a.batch.name
    vis, every = score(labels, True), score(labels, False)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    row = (f"| {name} | {dt.date.today().isoformat()} | {commit} | {every['cases']} ({vis['cases']}) | "
           f"{vis['top1']} | {every['top1']} | {every['prec']} ({every['named']}) | {vis['missed']} | "
           f"{every['unknown']} | {every['flagged']}/{every['healthy']} | {every['fix']} |")
    calib = calibration_table(name, calibration(a.batch, cases))
    print(row)
    print(calib)
    if a.dry_run:
        return 0
    text = DOC.read_text()
    if f"| {name} |" in text:
        raise SystemExit(f"{name} already has a row: a first-sight row is never edited")
    head, sep, rest = text.partition(TABLE_HEAD)
    table_end = rest.find("\n\n")
    rest = rest[:table_end] + "\n" + row + rest[table_end:]
    DOC.write_text(head + sep + rest.rstrip("\n") + "\n\n" + calib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
