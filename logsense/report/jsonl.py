"""`logsense tail --format jsonl`: one JSON object a line, flushed at once, for `jq` and scripts.

Every object has "event": follow | phase | progress | diagnosis (a root cause that leads) |
symptom (a symptom, or a weaker root cause) | ready | stopped (the unit, by systemd) |
startup (a new startup begins: the unit started again, or a new server_args) | verdict (how a startup ended: the diagnosis `analyze` gives on
its lines) | timeout | notice | end. Progress is throttled (at most one a second per phase, and
always the last step). The last object of a run is "end", with the reason, the exit code and
the verdict of the startup it judged.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from logsense.model import Diagnosis, Phase, Report
from logsense.report.json import dumps_line, times_shown

PROGRESS_EVERY = 1.0  # seconds between two progress objects of one phase


class JsonlView:
    def __init__(self, out: TextIO | None = None, progress_every: float = PROGRESS_EVERY) -> None:
        self.out = out or sys.stdout
        self.progress_every = progress_every
        self._last_progress: tuple[str | None, float] = (None, 0.0)

    def emit(self, event: str, **fields: Any) -> None:
        self.out.write(dumps_line(times_shown({"event": event, **fields})) + "\n")
        self.out.flush()

    def begin(self, info: dict[str, Any], /) -> None:
        self.emit("follow", **info)

    def notice(self, text: str, /) -> None:
        self.emit("notice", message=text)

    def phase(self, name: str, since_start: float | None, line: int | None, at: str | None, _ready: bool, /) -> None:
        # a ready phase is said again by the "ready" event that follows, with the timeline
        self.emit("phase", phase=name, line=line, time=at, since_start=_round(since_start))

    def progress(self, phase: str | None, done: int, total: int, /) -> None:
        now = time.monotonic()
        last_phase, last_at = self._last_progress
        if phase == last_phase and now - last_at < self.progress_every and done < total:
            return
        self._last_progress = (phase, now)
        self.emit("progress", phase=phase, done=done, total=total)

    def diagnosis(self, d: Diagnosis, line: int | None, /) -> None:
        self.emit("diagnosis", line=line, diagnosis=d.to_json())

    def symptom(self, d: Diagnosis, line: int | None, /) -> None:
        self.emit("symptom", line=line, diagnosis=d.to_json())

    def startup(self, why: str, text: str, at: str | None, index: int, /) -> None:
        self.emit("startup", index=index, why=why, message=text, time=at)

    def verdict(self, report: Report, outcome: str, seconds: float | None, /) -> None:
        self.emit("verdict", outcome=outcome, seconds=_round(seconds), phase=report.phase, **_verdict(report))

    def ready(self, phases: tuple[Phase, ...], total: float | None, /) -> None:
        self.emit("ready", seconds=_round(total), phases=[p.to_json() for p in phases])

    def unit_event(self, kind: str, text: str, at: str | None, /) -> None:
        self.emit("stopped" if kind == "stop" else "started", message=text, time=at)

    def timeout(self, after: float, phase: str | None, in_phase: float | None, /) -> None:
        self.emit("timeout", after=_round(after), phase=phase, in_phase=_round(in_phase))

    def end(self, reason: str, code: int, report: Report | None, /) -> None:
        fields: dict[str, Any] = {"reason": reason, "exit": code}
        if report is not None:
            fields.update(status=report.status.value, phase=report.phase, lines=report.lines,
                          phases=[p.to_json() for p in report.phases], **_verdict(report))
        self.emit("end", **fields)

    def status(self, _phase: str | None, _in_phase: float | None, _since_start: float | None,
               _progress: tuple[int, int] | None, /) -> None:
        pass  # a live status line is for terminals; jsonl already said all there is

    def close(self) -> None:
        pass


def _verdict(report: Report) -> dict[str, Any]:
    root = report.root
    return {"cause": root.cause if root else None, "rule": root.rule if root else None,
            "confidence": round(root.confidence, 3) if root else None,
            "diagnosis": root.to_json() if root else None}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
