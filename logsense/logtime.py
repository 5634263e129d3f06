"""A log line's time: its ISO-like stamp read as a datetime, and the seconds between two stamps."""

from __future__ import annotations

from datetime import datetime


def parse_time(t: str | None) -> datetime | None:
    """'2026-11-20 10:00:03,123' (or with '.' or 'T') as a datetime; None when absent or unreadable."""
    if not t:
        return None
    try:
        return datetime.fromisoformat(t.replace(",", "."))
    except ValueError:
        return None


def seconds_between(a: str | None, b: str | None) -> float | None:
    """Seconds from stamp `a` to stamp `b`, or None when either is unreadable or time runs backwards."""
    ta, tb = parse_time(a), parse_time(b)
    if ta is None or tb is None:
        return None
    try:
        s = (tb - ta).total_seconds()
    except TypeError:  # one stamp with a zone, one without: no duration can be told
        return None
    return round(s, 3) if s >= 0 else None
