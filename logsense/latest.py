"""Where a recorded log's latest startup begins, found as the pipeline's own timeline finds it.

analyze reports a log's latest startup only: at each restart the pipeline sets aside what the
earlier start left. So a big log of a unit that restarted thousands of times (a crash loop) need
not go through the pipeline whole: the lines holding a phase marker's literal, found by the block
search and read by a timeline of their own, tell where the timeline's last restart is, and the
pipeline reads from there (`read_stream(latest=True)`). The report is the same (tests/test_latest.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from logsense.linecut import MAX_LINE_BYTES
from logsense.logtime import PLACEHOLDER_YEAR
from logsense.normalize import Normalizer
from logsense.pipeline import Pipeline
from logsense.scan import (
    BLOCK,
    DIRTY,
    Found,
    _bodies,
    _chain,
    _positioned,
    lines_found,
    scan_literals,
    search_backend,
)
from logsense.timeline import Timeline

# Below this a log is read whole: the search for its latest start would cost more than it saves.
MIN_BYTES = 2 * BLOCK
# The share of a log's first block that the pipeline is fed, under which the search is not made: on such a log
# the pipeline costs little a line, and a second read of the file would cost about as much as it could save.
MIN_FED = 0.2
# A date with its year, as every stamp that names one writes it; a line without one cannot give the log its year.
_DATED = re.compile(rb"(?:19|20)[0-9][0-9]-[0-9][0-9]-[0-9][0-9]")
# A line that begins so is read after the line before it (an indented continuation, a quoted paste), never alone.
NOT_ALONE = (b" ", b"\t", b">")


class Start(NamedTuple):
    """The line where the timeline's last restart happens, and what the timeline knew just before it."""

    offset: int  # where the line starts in the file
    line: int  # its line number
    server: str | None  # the server the timeline had read from marker lines before it
    year: str | None  # the year the log had printed before it


def latest_start(fp: BinaryIO, p: Pipeline, name: str) -> Start | None:
    """Where `p`'s timeline would restart for the last time in the file `fp` reads, from its position.

    None when the log is read whole: it is small, not a regular file, a pack needs every line, its first
    block is mostly lines the pipeline passes over (`MIN_FED`), or the restart's line could read otherwise
    after other lines (an indented or quoted line). `fp` is left where it was.
    """
    at = _positioned(fp)
    if at is None or p.reading.every_line or p.reading.pick:
        return None
    fd, base = at
    size = os.fstat(fd).st_size - base
    if size < MIN_BYTES:
        return None
    index = p.timeline.index
    every = scan_literals(p)
    head = fp.peek(64)[:64] if hasattr(fp, "peek") else b""
    if index.always or every is None or head.lstrip()[:1] == b"{":
        return None  # a pattern with no literal, or journalctl's JSON: every line is read
    cs, ci = index.literals
    markers = search_backend([x.encode() for x in cs] + list(DIRTY), [x.encode() for x in ci], size)
    fed = search_backend([x.encode() for x in every[0]] + list(DIRTY), [x.encode() for x in every[1]])
    timeline = Timeline(p.rules.phases, index)
    normalizer = Normalizer()
    found: Start | None = None
    sure = True  # whether `found` can be read from where it is
    year: tuple[int, str] | None = None  # the first line the pipeline is fed whose time names its year
    ln = 0
    try:
        bodies = _bodies(fp, name)
        first = next(bodies, None)
        if first is None or len(lines_found(first[0], fed, count=False).starts) < MIN_FED * first[0].count(b"\n"):
            return None
        for body, where in _chain([first], bodies):
            if year is None and _DATED.search(body):
                year = _first_year(body, ln, fed)
            hits = lines_found(body, markers)
            for s, line, raw in _lines(body, hits, ln):
                for i, rec in enumerate(normalizer.feed(line, raw.decode("utf-8", "replace"))):
                    restarts, server = timeline.restarts, timeline.server
                    timeline.feed(rec)
                    if timeline.restarts != restarts:
                        found = Start(base + where + s, line, server,
                                      year[1] if year is not None and year[0] < line else None)
                        # the same record after any other lines: not indented, not quoted, its line's first
                        sure = where >= 0 and i == 0 and raw[:1] not in NOT_ALONE
            ln += hits.lines
    finally:
        fp.seek(base)
    return found if sure else None


def _lines(body: bytes, hits: Found, ln: int) -> Iterator[tuple[int, int, bytes]]:
    """Where each line `hits` found starts in `body`, its number (`ln` lines before the block) and its bytes
    as the pipeline reads them (cut as `feed_stream` cuts an overlong line)."""
    assert hits.before is not None
    for s, before in zip(hits.starts, hits.before, strict=True):
        nl = body.find(b"\n", s)
        yield s, ln + before + 1, body[s : min(nl, s + MAX_LINE_BYTES)]


def _first_year(body: bytes, ln: int, fed) -> tuple[int, str] | None:
    """The first line of `body` the pipeline is fed (one holding a literal) whose time names its year, with it."""
    normalizer = Normalizer()
    for _, line, raw in _lines(body, lines_found(body, fed), ln):
        if not _DATED.search(raw):
            continue
        for rec in normalizer.feed(line, raw.decode("utf-8", "replace")):
            if rec.time and not rec.time.startswith(PLACEHOLDER_YEAR):
                return line, rec.time[:4]
    return None

