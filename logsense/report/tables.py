"""Tables for the terminal: each builds a rich `Table` of plain data; the command prints it.

Log and rule text is data: every cell is a `Text`, never markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from logsense.normalize import clean
from logsense.report.text import duration
from logsense.rules.compile import CompiledRule


def rules_table(rules: Iterable[CompiledRule]) -> Table:
    """`logsense rules list`: one row a rule, in pack order (file, then line)."""
    t = Table(show_edge=False, pad_edge=False)
    for col in ("rule", "cause", "role", "prio", "source"):
        t.add_column(col)
    for r in sorted(rules, key=lambda r: (r.spec.path, r.spec.line)):
        t.add_row(Text(r.id), Text(r.spec.cause), Text(r.spec.role), Text(str(r.spec.priority)),
                  Text(f"{r.spec.path}:{r.spec.line}"))
    return t


def history_table(rows: list[dict[str, Any]]) -> Table:
    """`logsense history`: one row a startup attempt, with what changed since the one before."""
    changed = "changed since the previous attempt"
    t = Table(box=None, pad_edge=False, header_style="bold")
    for c in ("#", "started", "outcome", "phase", "root cause", "took", changed):
        t.add_column(c, no_wrap=c != changed, overflow="fold")
    for r in rows:
        t.add_row(Text(str(r["attempt"])), Text(r["started"] or "?"), Text(r["outcome"]), Text(r["phase"] or ""),
                  Text(r["cause"] or ""), Text(duration(r["seconds"])), Text(clean(", ".join(r["changed"]))))
    return t


def stats_table(rows: list[dict[str, Any]], fit: bool) -> Table:
    """`logsense stats`: one row a log; `fit` (a terminal) cuts long cells, else every cell is whole."""
    t = Table(show_edge=False, header_style="bold", pad_edge=False)
    t.add_column("source", no_wrap=True, overflow="ellipsis", min_width=12, max_width=48 if fit else None)
    t.add_column("status", no_wrap=True, min_width=10)
    t.add_column("cause", no_wrap=True, overflow="ellipsis", min_width=14, max_width=30 if fit else None)
    t.add_column("phase", no_wrap=True, overflow="ellipsis", min_width=8, max_width=18 if fit else None)
    t.add_column("time", justify="right", no_wrap=True, min_width=9)
    t.add_column("sure", justify="right", no_wrap=True, min_width=10)
    for r in rows:
        fail, ready = r["time_to_failure"], r["time_to_ready"]
        secs = fail if _num(fail) else (ready if _num(ready) else None)
        when = "" if secs is None else ("✗ " if _num(fail) else "✓ ") + duration(secs)
        origin = _cell(r["origin"])
        sure = f"{r['confidence']:.2f} {'model' if origin == 'classifier' else origin}" if _num(r["confidence"]) else ""
        t.add_row(Text(_short_source(clean(_cell(r["source"])))), Text(_cell(r["status"])),
                  Text(clean(_cell(r["cause"]))), Text(_cell(r["phase"])), Text(when), Text(sure))
    return t


def stats_summary(rows: list[dict[str, Any]]) -> Text:
    """`N logs: cause n, ...`, the commonest first (a log with no cause counts under its status)."""
    counts = Counter(_cell(r["cause"]) or _cell(r["status"]) for r in rows)
    return Text(f"{len(rows)} logs: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()), style="bold")


def _cell(v: object) -> str:
    """A cell's text: None and NaN (pandas' missing value) are empty."""
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _num(v: object) -> bool:
    return isinstance(v, (int, float)) and v == v


def _short_source(source: str, keep: int = 2) -> str:
    """The last path parts: the table is for reading, the csv keeps the full name."""
    head, sep, member = source.rpartition("!")
    parts = (member if sep else source).split("/")
    tail = "/".join(parts[-keep:])
    return (head.rsplit("/", 1)[-1] + "!" + tail) if sep else tail
