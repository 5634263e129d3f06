"""Tables for the terminal: each builds a rich `Table` of plain data; the command prints it.

Log and rule text is data: every cell is a `Text`, never markup.
"""

from __future__ import annotations

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
