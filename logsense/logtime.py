"""A log line's time: its ISO-like stamp read as a datetime, and the seconds between two stamps."""

from __future__ import annotations

import bisect
from datetime import datetime
from typing import Generic, TypeVar

T = TypeVar("T")

# The year given to a time printed without one (journalctl short, vLLM): durations and order hold, and
# the reports print such a time without it.
YEARLESS = 2000
PLACEHOLDER_YEAR = f"{YEARLESS}-"

TIMES_KEPT = 1 << 16  # time change points kept per log (bounded memory whatever its length)


def parse_time(t: str | None) -> datetime | None:
    """'2026-11-20 10:00:03,123' (or with '.' or 'T') as a datetime; None when absent or unreadable."""
    if not t:
        return None
    try:
        return datetime.fromisoformat(t.replace(",", "."))
    except ValueError:
        return None


def seconds_from(a: str | None, b: str | None) -> float | None:
    """Seconds from stamp `a` to stamp `b` (negative when `b` reads earlier), or None when either is unreadable."""
    ta, tb = parse_time(a), parse_time(b)
    if ta is None or tb is None:
        return None
    try:
        return (tb - ta).total_seconds()
    except TypeError:  # one stamp with a zone, one without: no duration can be told
        return None


def seconds_between(a: str | None, b: str | None) -> float | None:
    """Seconds from stamp `a` to stamp `b`, or None when either is unreadable or time runs backwards."""
    s = seconds_from(a, b)
    return round(s, 3) if s is not None and s >= 0 else None


def time_to(start: float | None, end: float | None) -> float | None:
    """Seconds from a startup's first time to a later point of it (epochs), for every command's "time to failure"
    and "time to ready": 0 where the end's stamp reads earlier (two loggers of one server disagree by a second)."""
    if start is None or end is None:
        return None
    return round(max(end - start, 0.0), 3)


class TimesSeen(Generic[T]):
    """Where a log's time changes, line by line: the time at any line read so far, in bounded memory (a time is
    the log's stamp, or the epoch read from it).

    A failure's time is asked for its first line, sometimes long after it (a cause named at the end); past
    TIMES_KEPT points every other one is dropped, which keeps the whole log, at worst giving a time a little
    earlier than the line's own.
    """

    __slots__ = ("points",)

    def __init__(self) -> None:
        self.points: list[tuple[int, T]] = []

    def note(self, line: int, time: T) -> None:
        points = self.points
        if points and points[-1][1] == time:
            return
        points.append((line, time))
        if len(points) > TIMES_KEPT:
            self.points = points[::2]

    def at(self, line: int | None) -> T | None:
        """The time at `line` (the last one noted at or before it); the last time of all when `line` is None."""
        points = self.points
        if line is None:
            return points[-1][1] if points else None
        i = bisect.bisect_right(points, line, key=lambda point: point[0])
        return points[i - 1][1] if i else None
