"""The terminal report of `logsense diff`: each run's verdict, where they part ways, what only the bad run did.

Log text is data: every line goes into a `rich.text.Text`, never through markup, and
control sequences were stripped when the line was normalized (`clean` again for safety).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from logsense.diff import DiffResult, Run
from logsense.model import UNKNOWN, Status
from logsense.normalize import clean
from logsense.report.term import Terminal
from logsense.report.text import duration
from logsense.run_templates import TemplateLine

SHOW_BAD = 25  # bad-only entries shown (the JSON has them all)
SHOW_GOOD = 8
MAX_SHOWN = 240  # characters of a log line on screen
MAX_FRAMES = 9  # frames of a new code path on screen: the first two and the innermost ones


def _n(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _short(text: str, width: int = MAX_SHOWN) -> str:
    text = clean(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _value(v: Any) -> str:
    if isinstance(v, str):
        return repr(v) if v == "" or v != v.strip() else v
    return repr(v)


def _verdict(label: str, run: Run) -> Text:
    r = run.report
    root = r.root
    t = Text(f"{label:<5}", style="bold")
    t.append(_short(r.source, 80), style="dim")
    t.append(f"  {r.lines:,} lines", style="dim")
    if run.restarts:
        t.append(f", last of {run.restarts + 1} starts", style="dim")
    t.append("  ")
    if root is not None:
        t.append("✗ failed", style="bold red")
        if root.phase:
            t.append(f" in {root.phase}", style="cyan")
        t.append(": ")
        t.append("cause unknown" if root.cause == UNKNOWN else clean(root.title), style="bold")
        if root.cause != UNKNOWN:
            t.append(f"  [{root.cause}]", style="dim")
    elif r.status is Status.READY:
        t.append("✓ ready", style="green")
    else:
        t.append(f"… {r.status.value}", style="yellow")
        if r.phase:
            t.append(f" (ends in {r.phase})", style="dim")
    return t


def _line(side: str, x: TemplateLine, style: str) -> Text:
    t = Text(f"  {side:<4} {x.line:>7} │ ", style="dim")
    t.append(_short(x.text), style=style)
    return t


def _entry(x: TemplateLine) -> Text:
    t = Text(f"  {x.line:>7}  ", style="dim")
    t.append(f"{x.phase:<18}", style="cyan")
    t.append(f"{('×' + str(x.count)) if x.count > 1 else '':>5}  ", style="dim")
    style = {"exception": "bold red", "error": "red", "traceback": "red", "warning": "yellow"}.get(x.kind, "")
    t.append(_short(x.text), style=style)
    return t


def _path_entry(first: TemplateLine, frames: list[str]) -> Text:
    t = Text(f"  {first.line:>7}  ", style="dim")
    t.append(f"{first.phase:<18}", style="cyan")
    t.append(f"{'':>5}  ", style="dim")
    t.append("new code path: ", style="magenta")
    if len(frames) > MAX_FRAMES:
        head, tail = frames[:2], frames[-(MAX_FRAMES - 3):]
        t.append(" → ".join(head))
        t.append(f" → … {len(frames) - len(head) - len(tail)} more → ", style="dim")
        t.append(" → ".join(tail))
    else:
        t.append(" → ".join(frames))
    return t


_CODE = ("frame", "source", "chain")


def _print_entries(console: Terminal, entries, limit: int, hint: str = "") -> None:
    shown, rest = _entries(entries, limit)
    for t in shown:
        console.print(t)
    if rest:
        console.print(Text(f"  … and {rest} more{hint}", style="dim"))


def _entries(lines: list[TemplateLine], limit: int) -> tuple[list[Text], int]:
    """Bad-only lines as screen entries: a run of new traceback frames becomes one code path."""
    out: list[Text] = []
    i, n = 0, len(lines)
    while i < n and len(out) < limit:
        x = lines[i]
        if x.kind in _CODE:
            j = i
            frames: list[str] = []
            while j < n and lines[j].kind in _CODE:
                f = lines[j].frame
                if f and (not frames or frames[-1] != f):
                    frames.append(f)
                j += 1
            if frames:
                out.append(_path_entry(x, frames))
            i = j
            continue
        out.append(_entry(x))
        i += 1
    return out, n - i


def render(result: DiffResult, console: Terminal) -> None:
    console.print(_verdict("good", result.good))
    console.print(_verdict("bad", result.bad))
    console.print()

    d = result.divergence
    if d is None:
        console.print(Text("no difference in templates or phases: the two startups did the same things",
                           style="green"))
    else:
        head = Text("where they part ways: ", style="bold")
        head.append(f"phase {d.phase}", style="bold cyan")
        if d.entered_by:
            other = "bad" if d.entered_by == "good" else "good"
            head.append(f"  (only the {d.entered_by} run entered it; the {other} one never did)", style="dim")
        console.print(head)
        if d.bad:
            console.print(_line("bad", d.bad, "bold"))
        if d.good:
            console.print(_line("good", d.good, ""))
        if d.bad and not d.good:
            console.print(Text("  (the good run has no line of its own in this phase)", style="dim"))
    if result.first_error:
        console.print(Text("first error only the bad run printed:", style="bold"))
        console.print(_line("bad", result.first_error, "bold red"))
        for x in result.first_error_chain:
            t = _line("", x, "red")
            t.append("  (in the same traceback chain)", style="dim")
            console.print(t)
    console.print()

    n_err = sum(1 for x in result.bad_only if x.errorish)
    if result.bad_only:
        head = Text("only in the bad run: ", style="bold")
        head.append(f"{_n(len(result.bad_only), 'template')} ({n_err} error-like), by first appearance", style="dim")
        console.print(head)
        _print_entries(console, result.bad_only, SHOW_BAD, " (--format json lists them all)")
    else:
        console.print(Text("the bad run printed nothing the good run did not print too", style="green"))
    if result.good_only:
        head = Text("only in the good run: ", style="bold")
        head.append(_n(len(result.good_only), "template"), style="dim")
        console.print(head)
        _print_entries(console, result.good_only, SHOW_GOOD)
    console.print()

    if result.facts:
        table = Table(show_edge=False, pad_edge=False, box=None, title_justify="left")
        table.add_column(Text("facts that differ", style="bold"))
        table.add_column(Text("good", style="bold"))
        table.add_column(Text("bad", style="bold"))
        for f in result.facts:
            g = Text("(not in log)", style="dim") if f.only_in == "bad" else Text(_short(_value(f.good), 100))
            b = Text("(not in log)", style="dim") if f.only_in == "good" else Text(_short(_value(f.bad), 100))
            table.add_row(Text(f.label), g, b)
        console.print(table)
    else:
        console.print(Text("facts and flags: the same in both runs", style="dim"))
    console.print()

    if result.phases:
        table = Table(show_edge=False, pad_edge=False, box=None)
        table.add_column(Text("phases", style="bold"))
        table.add_column(Text("good", style="bold"), justify="right")
        table.add_column(Text("bad", style="bold"), justify="right")
        for p in result.phases:
            g = Text(duration(p.good) if not p.ready else "✓") if p.in_good else Text("—", style="dim")
            b = Text(duration(p.bad) if not p.ready else "✓") if p.in_bad else Text("—", style="dim")
            table.add_row(Text(p.name), g, b)
        console.print(table)
