"""The terminal view of `logsense tail`: phases as they begin, diagnoses the moment they are known,
the timeline at ready, and (on a terminal) a status line redrawn in place below them:

    ● CUDA graphs  12 s · 95 s since start  [██████████░░░░░░░░░░] 26/52

Log text is data: every line is a rich `Text`, never markup, with control sequences stripped.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.text import Text

from logsense.model import Diagnosis, Phase, Report
from logsense.normalize import clean
from logsense.report import text as report_text

LABELS = {
    "import": "imports",
    "server_args": "args",
    "distributed_init": "distributed init",
    "weight_loading": "weights",
    "kv_cache_alloc": "KV cache",
    "cuda_graph_capture": "CUDA graphs",
    "warmup": "warmup",
    "serving": "ready",
}
BAR = 20


def label(phase: str | None) -> str:
    return LABELS.get(phase or "", phase or "?")


def secs(s: float | None) -> str:
    if s is None:
        return "?"
    if s < 600:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def bar(done: int, total: int, width: int = BAR) -> str:
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return "█" * filled + "░" * (width - filled)


def timeline(phases: tuple[Phase, ...], total: float | None) -> Text:
    """'✓ ready at 150 s: args 1 s · weights 90 s · KV cache 5 s · CUDA graphs 31 s · warmup 3 s'"""
    t = Text("✓ ready", style="bold green")
    if total is not None:
        t.append(f" at {secs(total)}", style="bold green")
    parts = [(label(p.name), p.seconds) for p in phases if p.name != "serving"]
    if parts:
        t.append(": ")
        for i, (name, s) in enumerate(parts):
            if i:
                t.append(" · ", style="dim")
            t.append(name)
            if s is not None:
                t.append(f" {secs(s)}", style="cyan")
    return t


class LiveView:
    def __init__(self, console: Console, status_line: bool | None = None) -> None:
        self.console = console
        if status_line is None:
            status_line = console.file.isatty() and os.environ.get("TERM") != "dumb"
        self.status_line = status_line
        self._drawn = False
        self._said: set[int] = set()  # evidence lines of the diagnoses said in this run
        console.on_broken_pipe = _broken_pipe  # type: ignore[method-assign] # rich would exit 1; a closed pipe is an end

    # -- lines that stay -----------------------------------------------------------------------

    def _print(self, text: Text) -> None:
        self._clear()
        self.console.print(text)
        self.console.file.flush()

    def begin(self, info: dict) -> None:
        t = Text("following ", style="dim")
        t.append(clean(info.get("description", "")), style="bold")
        if info.get("start"):
            t.append(f", {clean(info['start'])}", style="dim")
        self._print(t)

    def notice(self, text: str) -> None:
        self._print(Text(clean(text), style="dim"))

    def phase(self, name: str, since_start: float | None, line: int | None, at: str | None) -> None:
        if name == "serving":
            return  # the ready line that follows says it, with the timeline
        t = Text(f"{secs(since_start) if since_start is not None else '':>9}  ", style="dim")
        t.append("▸ ", style="cyan")
        t.append(label(name))
        self._print(t)

    def progress(self, phase: str | None, done: int, total: int) -> None:
        pass  # shown in the status line; printed lines would drown the rest

    def diagnosis(self, d: Diagnosis, line: int | None) -> None:
        self._clear()
        lines = {e.line for e in d.evidence}
        if lines & self._said:
            # the same lines were already explained by a stronger cause: one line for this one
            report_text.render_brief(self.console, d, f"also: [{d.cause}] sure {report_text.sureness(d.confidence)} —")
        else:
            report_text.render_diagnosis(self.console, d, principal=True)
        self._said |= lines
        self.console.file.flush()

    def ready(self, phases: tuple[Phase, ...], total: float | None) -> None:
        self._print(timeline(phases, total))

    def unit_event(self, kind: str, text: str, at: str | None) -> None:
        if kind == "stop":
            t = Text("■ unit stopped: ", style="bold yellow")
        else:
            t = Text("↻ unit started again: ", style="bold")
            self._said.clear()
        t.append(clean(text))
        self._print(t)

    def timeout(self, after: float, phase: str | None, in_phase: float | None) -> None:
        t = Text(f"⧗ not ready after {secs(after)}", style="bold yellow")
        if phase:
            t.append(f"; in {label(phase)}", style="yellow")
            if in_phase is not None:
                t.append(f" for {secs(in_phase)}", style="yellow")
        self._print(t)

    def end(self, reason: str, code: int, report: Report | None) -> None:
        if reason in ("failed", "stopped", "input-end") and report is not None:
            self.summary(report, reason)
        else:
            self._clear()

    def summary(self, report: Report, reason: str | None = None) -> None:
        """How the run stands: failed (and why), ready, or not yet; then its phases."""
        head = Text()
        if report.failed and report.root:
            head.append("✗ failed", style="bold red")
            if report.root.phase:
                head.append(f" in {label(report.root.phase)}", style="red")
            head.append(f": {clean(report.root.title)}")
        elif report.status.value == "ready" and reason == "stopped":
            head.append("✗ the server became ready, then the unit stopped", style="bold red")
        elif report.status.value == "ready":
            head.append("✓ the server became ready; no failure found", style="green")
        elif reason == "stopped":
            head.append("✗ the unit stopped before the server was ready; no rule knows why", style="bold red")
        else:
            head.append("no failure found; the server is not ready yet", style="yellow")
        self._print(head)
        self._print(report_text.phase_summary(report))

    # -- the status line -----------------------------------------------------------------------

    def status(self, phase: str | None, in_phase: float | None, since_start: float | None,
               progress: tuple[int, int] | None) -> None:
        if not self.status_line:
            return
        t = Text("● ", style="cyan")
        t.append(label(phase), style="bold")
        t.append(f"  {secs(in_phase)}", style="cyan")
        if since_start is not None:
            t.append(f" · {secs(since_start)} since start", style="dim")
        if progress:
            done, total = progress
            t.append(f"  [{bar(done, total)}] {done}/{total}")
        t.truncate(max(self.console.width - 1, 10))
        self.console.file.write("\r\x1b[2K")
        self.console.print(t, end="", no_wrap=True, overflow="crop")
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


def _broken_pipe() -> None:
    raise BrokenPipeError
