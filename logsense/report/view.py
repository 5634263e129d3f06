"""What `logsense tail` shows: a view has one method per kind of event a session notes."""

from __future__ import annotations

from typing import Any, Protocol

from logsense.model import Diagnosis, Phase, Report


class TailView(Protocol):
    """A view of `tail` (the terminal's, jsonl's): each event kind a session notes is one method."""

    def begin(self, info: dict[str, Any], /) -> None: ...

    def notice(self, text: str, /) -> None: ...

    def phase(self, name: str, since_start: float | None, line: int | None, at: str | None, ready: bool, /) -> None: ...

    def progress(self, phase: str | None, done: int, total: int, /) -> None: ...

    def diagnosis(self, d: Diagnosis, line: int | None, /) -> None: ...

    def symptom(self, d: Diagnosis, line: int | None, /) -> None: ...

    def ready(self, phases: tuple[Phase, ...], total: float | None, /) -> None: ...

    def unit_event(self, kind: str, text: str, at: str | None, /) -> None: ...

    def startup(self, why: str, text: str, at: str | None, index: int, /) -> None: ...

    def timeout(self, after: float, phase: str | None, in_phase: float | None, /) -> None: ...

    def verdict(self, report: Report, outcome: str, seconds: float | None, /) -> None: ...

    def status(self, phase: str | None, in_phase: float | None, since_start: float | None,
               progress: tuple[int, int] | None, /) -> None: ...

    def end(self, reason: str, code: int, report: Report | None, /) -> None: ...

    def close(self) -> None: ...


def show(view: TailView, kind: str, f: dict[str, Any]) -> None:
    """Show one event a session noted (its kind and its fields) with the view's method for that kind."""
    if kind == "notice":
        view.notice(f["text"])
    elif kind == "phase":
        view.phase(f["name"], f["since_start"], f["line"], f["at"], f.get("ready", False))
    elif kind == "progress":
        view.progress(f["phase"], f["done"], f["total"])
    elif kind == "diagnosis":
        view.diagnosis(f["d"], f["line"])
    elif kind == "symptom":
        view.symptom(f["d"], f["line"])
    elif kind == "ready":
        view.ready(f["phases"], f["total"])
    elif kind == "unit_event":
        view.unit_event(f["kind"], f["text"], f["at"])
    elif kind == "startup":
        view.startup(f["why"], f["text"], f["at"], f["index"])
    elif kind == "timeout":
        view.timeout(f["after"], f["phase"], f["in_phase"])
    elif kind == "verdict":
        view.verdict(f["report"], f["outcome"], f["seconds"])
    elif kind == "status":
        view.status(f["phase"], f["in_phase"], f["since_start"], f["progress"])
    elif kind == "end":
        view.end(f["reason"], f["code"], f["report"])
    else:
        raise ValueError(f"no view method for a session's {kind!r} event")
