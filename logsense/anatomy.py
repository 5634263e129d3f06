"""Exception anatomy: which part of the stack raised a failure no rule names (logsense/data/anatomy.yaml)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from logsense import exception_line
from logsense.framing import exception_lines, frame_lines, frame_location
from logsense.model import Event, Value, _set

ANATOMY_PATH = Path(__file__).parent / "data" / "anatomy.yaml"
_EXCEPTION = re.compile(rf"(?:\[rank\d+\]:\s*)?(?P<name>{exception_line.MODULES}(?P<short>{exception_line.CLASS})):?(?:\s|$)")
_VALIDATION = re.compile(r"validation errors? for (?P<model>\w+)")
_FIELD = re.compile(r"(?P<field>[a-z][a-z0-9_]*)(?:\.\w+)*\s*$")


class Area(Value):
    """One part of the stack: how to recognise it (exception types, frame paths, functions) and its family."""

    __slots__ = ("id", "title", "family", "types", "frames", "functions")
    id: str
    title: str
    family: str | None  # a group of the taxonomy; None when the area does not tell it
    types: frozenset[str]
    frames: tuple[str, ...]
    functions: frozenset[str]

    def __init__(self, id: str, title: str, family: str | None, types: frozenset[str], frames: tuple[str, ...],
                 functions: frozenset[str]) -> None:
        _set(self, "id", id)
        _set(self, "title", title)
        _set(self, "family", family)
        _set(self, "types", types)
        _set(self, "frames", frames)
        _set(self, "functions", functions)


class Likely(Value):
    """Where an unnamed failure was raised: the area, its taxonomy family, the exception and the frame."""

    __slots__ = ("area", "title", "family", "exception", "where", "flag")
    area: str
    title: str
    family: str | None
    exception: str | None
    where: str | None  # "path/tail.py in function": the frame that placed it
    flag: str | None  # a pydantic config field named by the error, as the flag that sets it

    def __init__(self, area: str, title: str, family: str | None, exception: str | None, where: str | None,
                 flag: str | None = None) -> None:
        _set(self, "area", area)
        _set(self, "title", title)
        _set(self, "family", family)
        _set(self, "exception", exception)
        _set(self, "where", where)
        _set(self, "flag", flag)

    def to_json(self) -> dict[str, str]:
        out = {"area": self.area}
        for key in ("family", "exception", "where", "flag"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out

    def sentence(self) -> str:
        """One sentence for the report: said as likely, with what placed it."""
        how = []
        if self.exception:
            how.append(f"{'an' if self.exception[:1] in 'AEIOU' else 'a'} {self.exception}")
        if self.where:
            how.append(f"raised in {self.where}")
        text = f"Likely {self.title}" + (f" ({' '.join(how)})" if how else "") + "."
        if self.flag:
            text += f" The error names the setting {self.flag}."
        return text


@lru_cache(maxsize=1)
def areas() -> tuple[Area, ...]:
    """The areas of logsense/data/anatomy.yaml, narrowest first."""
    import yaml

    data = yaml.safe_load(ANATOMY_PATH.read_text(encoding="utf-8"))
    return tuple(Area(a["id"], a["title"], a["family"], frozenset(a.get("types") or ()),
                      tuple(a.get("frames") or ()), frozenset(a.get("functions") or ()))
                 for a in data["areas"])


def of(event: Event) -> Likely | None:
    """The likely area of a traceback event's failure, or None when neither its type nor its frames place it."""
    excs = exception_lines(event)
    name = short = None
    if excs:
        m = _EXCEPTION.match(excs[-1].message.strip())
        if m:
            name, short = m.group("name"), m.group("short")
    frames = [loc for loc in (frame_location(r.message) for r in frame_lines(event)) if loc]
    for area in areas():
        if short and short in area.types:
            return _likely(area, name, frames[-1] if frames else None, event, excs)
    for path, func in reversed(frames):  # innermost first
        for area in areas():
            if any(f in path for f in area.frames) or func in area.functions:
                return _likely(area, name, (path, func), event, excs)
    return None


def _likely(area: Area, name: str | None, frame: tuple[str, str] | None, event: Event, excs: list) -> Likely:
    where = None
    if frame:
        path, func = frame
        where = "/".join(path.split("/")[-2:]) + f" in {func}"
    return Likely(area.id, area.title, area.family, name, where, _config_flag(event, excs))


def _config_flag(event: Event, excs: list) -> str | None:
    """A pydantic "N validation error for XConfig" names the field on the next line: the flag that sets it."""
    if not excs or not _VALIDATION.search(excs[-1].message):
        return None
    recs = event.records
    at = next((i for i, r in enumerate(recs) if r is excs[-1]), None)
    if at is None or at + 1 >= len(recs):
        return None
    m = _FIELD.match(recs[at + 1].message.strip())
    if not m or m.group("field") in ("value", "input"):
        return None
    return "--" + m.group("field").replace("_", "-")
