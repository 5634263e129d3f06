#!/usr/bin/env python3
"""`analyze --format json` of every log in corpora/ and firstsight/, to a file: a refactor compares two of them.

    python3 tools/json_snapshot.py -o before.jsonl        # on the old tree
    python3 tools/json_snapshot.py --compare before.jsonl # on the new one: lists every log that differs

Each line is {"log": path, "json": the analyze output}; the output is the command's own
(report_json.dumps), so "no difference" means byte-identical reports.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIRS = ("corpora", "firstsight")


def logs() -> list[Path]:
    """Every log in the corpora and the first-sight batches, in a fixed order."""
    found = {p for d in DIRS for pat in ("*.log", "*.log.gz") for p in (ROOT / d).rglob(pat)}
    return sorted(found)


def snapshot() -> dict[str, str]:
    """Log path (relative to the repository) -> its `analyze --format json` text."""
    from logsense import load_rules
    from logsense.analysis import analyze_path
    from logsense.report import json as report_json

    rules = load_rules()
    out = {}
    for path in logs():
        report, problems = analyze_path(str(path), rules, classifier=True, baseline=None, no_rules=False)
        out[str(path.relative_to(ROOT))] = report_json.dumps(report, problems)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the snapshot here (JSON lines)")
    ap.add_argument("--compare", help="a snapshot to compare with: prints the logs whose output differs")
    a = ap.parse_args()
    now = snapshot()
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            for log, text in now.items():
                f.write(json.dumps({"log": log, "json": text}, ensure_ascii=False) + "\n")
    if a.compare:
        with open(a.compare, encoding="utf-8") as f:
            before = {d["log"]: d["json"] for d in map(json.loads, f)}
        differ = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        for log in differ:
            print(log)
        print(f"{len(now)} logs, {len(differ)} differ", file=sys.stderr)
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
