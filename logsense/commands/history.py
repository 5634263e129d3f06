"""`logsense history UNIT|FILE`: one row per startup attempt, as `tail --from-start --no-follow` judges them.

Each row: when it started, its outcome (ready / failed / stopped / incomplete), the phase it
ended in, the root cause, the time to ready or to the failure, and the server flags that
changed since the previous attempt (from the server_args line each startup prints).
"""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

from logsense.commands.common import WallClock, analysis_factory, rules_from_options, source_kind
from logsense.normalize import shown_time
from logsense.repeats import NotRepeated, Repeats
from logsense.report.console import console
from logsense.scan import keep_for
from logsense.session import EXIT, Outcome, Session, Verdict
from logsense.sources.stream import FileSource, JournalItems, Source

COLUMNS = ("attempt", "started", "outcome", "phase", "cause", "seconds", "changed")
REUSE = True  # a repeated startup of a big log file takes the verdict of the one it repeats (`logsense.repeats`)
_NOT_FLAGS = {"random_seed"}  # drawn anew at each start when not set: not a change the operator made


def main(target: str | None = None, unit: str | None = None, files: list[str] | None = None,
         directory: str | None = None, since: str | None = None, until: str | None = None, boot: str | None = None,
         fmt: str = "table", rules: list[str] | None = None, only_rules: list[str] | None = None) -> int:
    files = list(files or [])
    target = unit or target
    kind = source_kind(target, unit, files, directory, since or until or boot, "history")
    rs = rules_from_options(rules, only_rules)
    new_pipeline = analysis_factory(rs)

    def judge(reuse: bool) -> list[Verdict]:
        source: Source
        if kind == "file":
            assert target is not None
            source = FileSource(target, rs, from_start=True, follow=False, keep=keep_for(new_pipeline()))
        else:
            source = JournalItems(target, files=files, directory=directory, since=since, until=until, boot=boot,
                                  from_start=True, follow=False)
        try:
            return attempts(source, Session(rs, new_pipeline, WallClock(), utc_times=kind == "journal",
                                            source_name=source.description), reuse=reuse)
        finally:
            source.close()

    try:
        verdicts = judge(REUSE)
    except NotRepeated:
        verdicts = judge(False)  # a repeat that did not end as the startup it repeats: every line is read
    rows = table(verdicts)
    _print(rows, fmt)
    if not verdicts:
        return 3
    return EXIT[verdicts[-1].outcome] if verdicts[-1].outcome is not Outcome.INCOMPLETE else 3


def attempts(source: Source, session: Session, reuse: bool = True) -> list[Verdict]:
    """Every startup in the source, judged in turn (the source is read to its end). With `reuse`, a startup
    that repeats an earlier one of a big log file takes its verdict (`logsense.repeats`); the same verdicts."""
    repeats = Repeats.of(source, session) if reuse else None
    try:
        while not source.ended:
            for item in source.each(0.0) if isinstance(source, FileSource) else source.read(0.0):
                if repeats is None:
                    session.feed(item)
                elif repeats.feed(item):
                    break  # the source moved past repeated startups: read on from there
            if source.ended:
                break
    finally:
        if repeats is not None:
            repeats.close()
    session.tick(caught_up=True, ended=True)
    return [v for v in session.verdicts if v.first_line is not None]


def _started(t: str | None) -> str | None:
    """The attempt's start to the second; a log that never names its year (vLLM's, journalctl's short
    format) shows month and day only, never the placeholder year it is read with."""
    return shown_time(t[:19]) if t else None


def table(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    rows = []
    before: dict[str, Any] | None = None
    for n, v in enumerate(verdicts, 1):
        args = {k[4:]: x for k, x in v.report.facts.items() if k.startswith("arg_") and k[4:] not in _NOT_FLAGS}
        root = v.report.root
        rows.append({
            "attempt": n,
            "started": _started(v.started_at),
            "outcome": v.outcome.value,
            "phase": root.phase if root is not None and root.phase else v.report.phase,
            "cause": root.cause if root is not None else None,
            "seconds": v.seconds,
            "changed": changed(before, args) if before is not None and args else [],
        })
        if args:
            before = args
    return rows


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The flags that differ, as the operator would write them: `--skip-server-warmup`, `--tp-size 8`."""
    out = []
    for k in sorted(set(before) | set(after)):
        a, b = before.get(k), after.get(k)
        if a == b:
            continue
        flag = "--" + k.replace("_", "-")
        if b is True:
            out.append(flag)
        elif b in (False, None):
            out.append(f"no {flag}" if a is True else f"{flag} unset")
        else:
            out.append(f"{flag} {b}")
    return out


def _print(rows: list[dict[str, Any]], fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    if fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([r["attempt"], r["started"] or "", r["outcome"], r["phase"] or "", r["cause"] or "",
                        "" if r["seconds"] is None else r["seconds"], "; ".join(r["changed"])])
        return
    from logsense.report.tables import history_table

    t = history_table(rows)
    out = console()
    if not out.is_terminal:
        out.width = max(out.width, 200)  # piped: one row a line, never cut
    if not rows:
        out.print("no startup found")
    else:
        out.print(t)
