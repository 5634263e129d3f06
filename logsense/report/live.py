"""The terminal view of `logsense tail`: phases as they begin, diagnoses the moment they are known,
the timeline at ready, the verdict of each startup, and (on a terminal) a status line redrawn
in place below them:

    ● cuda_graph_capture  12 s · 95 s since start  [██████████░░░░░░░░░░] 26/52

Phase names and durations are written as the `analyze` report writes them. Log text is data:
every line is a `Text`, never markup, with control sequences stripped.
"""

from __future__ import annotations

import os
from typing import Any

from logsense.model import Diagnosis, Phase, Report, Status
from logsense.normalize import clean
from logsense.report import text as report_text
from logsense.report.term import Terminal, Text
from logsense.report.text import duration

BAR = 20


def bar(done: int, total: int, width: int = BAR) -> str:
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return "█" * filled + "░" * (width - filled)


def timeline(phases: tuple[Phase, ...], total: float | None) -> Text:
    """'✓ ready at 150 s: server_args 1 s · weight_loading 90 s · kv_cache_alloc 5 s · ...'"""
    t = Text("✓ ready", style="bold green")
    if total is not None:
        t.append(f" at {duration(total)}", style="bold green")
    parts = [(p.name, p.seconds) for p in phases if not p.ready]
    if parts:
        t.append(": ")
        for i, (name, s) in enumerate(parts):
            if i:
                t.append(" · ", style="dim")
            t.append(name)
            if s is not None:
                t.append(f" {duration(s)}", style="cyan")
    return t


class LiveView:
    def __init__(self, console: Terminal, status_line: bool | None = None) -> None:
        self.console = console
        if status_line is None:
            status_line = console.file.isatty() and os.environ.get("TERM") != "dumb"
        self.status_line = status_line
        self._drawn = False

    # -- lines that stay -----------------------------------------------------------------------

    def _print(self, text: Text) -> None:
        self._clear()
        self.console.print(text)
        self.console.file.flush()

    def begin(self, info: dict[str, Any], /) -> None:
        t = Text("following ", style="dim")
        t.append(clean(info.get("description", "")), style="bold")
        if info.get("start"):
            t.append(f", {clean(info['start'])}", style="dim")
        self._print(t)

    def notice(self, text: str, /) -> None:
        self._print(Text(clean(text), style="dim"))

    def phase(self, name: str, since_start: float | None, line: int | None, _at: str | None, ready: bool, /) -> None:
        if ready:
            return  # the ready line that follows says it, with the timeline
        t = Text(f"{duration(since_start) if since_start is not None else '':>9}  ", style="dim")
        t.append("▸ ", style="cyan")
        t.append(name)
        if line is not None:
            t.append(f"  line {line}", style="dim")
        self._print(t)

    def progress(self, _phase: str | None, _done: int, _total: int, /) -> None:
        pass  # shown in the status line; printed lines would drown the rest

    def diagnosis(self, d: Diagnosis, _line: int | None, /) -> None:
        """A root cause that leads what is known of this startup: in full."""
        self._clear()
        report_text.render_diagnosis(self.console, d, principal=True)
        self.console.file.flush()

    def symptom(self, d: Diagnosis, _line: int | None, /) -> None:
        """A symptom, or a root cause weaker than the one shown: one line; the verdict comes at the end."""
        self._clear()
        what = "symptom" if not d.root else f"also: [{d.cause}] sure {report_text.sureness(d.confidence)}"
        report_text.render_brief(self.console, d, f"{what} —")
        self.console.file.flush()

    def ready(self, phases: tuple[Phase, ...], total: float | None, /) -> None:
        self._print(timeline(phases, total))

    def unit_event(self, kind: str, text: str, _at: str | None, /) -> None:
        t = Text("■ unit stopped: " if kind == "stop" else "↻ unit started: ", style="bold yellow")
        t.append(clean(text))
        self._print(t)

    def startup(self, why: str, _text: str, at: str | None, index: int, /) -> None:
        """A new startup: a separator, and its timeline begins again."""
        rule = "─" * 8
        t = Text(f"{rule} startup {index + 1}", style="bold")
        if at:
            t.append(f" at {clean(at)}", style="dim")
        t.append(f" ({'the unit started again' if why == 'started' else 'new server_args in the log'}) {rule}",
                 style="dim")
        self._print(t)

    def timeout(self, after: float, phase: str | None, in_phase: float | None, /) -> None:
        t = Text(f"⧗ not ready after {duration(after)}", style="bold yellow")
        if phase:
            t.append(f"; in {phase}", style="yellow")
            if in_phase is not None:
                t.append(f" for {duration(in_phase)}", style="yellow")
        self._print(t)

    def end(self, _reason: str, _code: int, _report: Report | None, /) -> None:
        self._clear()  # the verdict was said when the startup was concluded

    def verdict(self, report: Report, outcome: str, seconds: float | None, /) -> None:
        """How a startup ended: failed (and why), ready, stopped, or not ready yet; then its phases."""
        head = Text()
        took = f" after {duration(seconds)}" if seconds is not None else ""
        root = report.root
        if outcome == "failed" and root is not None:
            head.append(f"✗ failed{took}", style="bold red")
            if root.phase:
                head.append(f" in {root.phase}", style="red")
            head.append(f": {clean(root.title)}")
            head.append(f"  [{root.cause}, sure {report_text.sureness(root.confidence)}]", style="dim")
        elif outcome == "not-answering":
            head.append("✗ the log says ready, but the server does not answer its endpoint", style="bold red")
        elif outcome == "stopped":
            what = "after the server was ready" if report.status is Status.READY else "before the server was ready"
            head.append(f"■ the unit stopped {what}{took}", style="bold yellow")
        elif outcome == "ready":
            head.append(f"✓ ready{took}", style="bold green")
        else:
            head.append(f"… not ready yet: the log ends in {report.phase or 'import'}", style="yellow")
        self._print(head)
        self._print(report_text.phase_summary(report))

    # -- the status line -----------------------------------------------------------------------

    def status(self, phase: str | None, in_phase: float | None, since_start: float | None,
               progress: tuple[int, int] | None, /) -> None:
        if not self.status_line:
            return
        t = Text("● ", style="cyan")
        t.append(phase or "import", style="bold")
        if in_phase is not None:
            t.append(f"  {duration(in_phase)}", style="cyan")
        if since_start is not None:
            t.append(f" · {duration(since_start)} since start", style="dim")
        if progress:
            done, total = progress
            t.append(f"  [{bar(done, total)}] {done}/{total}")
        t.truncate(max(self.console.width - 1, 10))
        self.console.file.write("\r\x1b[2K")
        self.console.print(t, end="")  # never wrapped: truncated above to fit the line
        self.console.file.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.console.file.write("\r\x1b[2K")
            self._drawn = False

    def close(self) -> None:
        try:
            self._clear()
            self.console.file.flush()
        except (OSError, ValueError):
            pass
