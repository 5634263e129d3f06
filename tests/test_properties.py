"""Property tests: normalize and framing never raise, lose or duplicate a line, whatever the input."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logsense.framing import Framer
from logsense.normalize import Normalizer
from logsense.pipeline import Pipeline
from logsense.scan import feed_stream
from logsense.sources.recorded import read_lines

PIECES = [
    "Traceback (most recent call last):", '  File "a.py", line 1, in f', "    x()", "ValueError: boom", "",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "[2026-01-01 00:00:00 TP1] Load weight begin. avail mem=1 GB", "x.c:1:2: fatal error: Python.h: No such file or directory",
    "compilation terminated.", "    6 | #include <Python.h>", "Jan 01 00:00:00 host python3[1]: hello",
    "                                        continued", "\x1b[31mred\x1b[0m", "a\rb\rc", "-- Boot 0123456789abcdef0123456789abcdef --",
    '{"MESSAGE": "json line", "_PID": "3"}', '{"MESSAGE": [104, 105], "_PID": "3"}', "FAILED: x.o",
]
lines = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=40)), max_size=60)


def frame_all(raw_lines):
    n, f, events = Normalizer(), Framer(), []
    fed = []
    for i, line in enumerate(raw_lines, 1):
        for rec in n.feed(i, line):
            fed.append(rec)
            events.extend(f.feed(rec))
    events.extend(f.flush())
    return fed, events


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lines)
def test_every_record_in_exactly_one_event(raw_lines):
    raw_lines = [x.replace("\n", " ") for x in raw_lines]
    fed, events = frame_all(raw_lines)
    framed = [r for e in events for r in e.records]
    assert sorted(map(id, framed)) == sorted(map(id, fed))
    assert all(e.records for e in events)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=3000), st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=50))
def test_reading_does_not_depend_on_chunking(data, sizes):
    class Chunked(io.RawIOBase):
        def __init__(self):
            self.pos, self.i = 0, 0

        def readable(self):
            return True

        def readinto(self, b):
            size = min(len(b), sizes[self.i % len(sizes)])
            self.i += 1
            chunk = data[self.pos : self.pos + size]
            b[: len(chunk)] = chunk
            self.pos += len(chunk)
            return len(chunk)

    whole = list(read_lines(io.BytesIO(data)))
    chunked = list(read_lines(io.BufferedReader(Chunked(), buffer_size=8)))
    assert whole == chunked


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          deadline=None)
@given(lines)
def test_scan_path_equals_line_path(rules, raw_lines):
    text = "\n".join(x.replace("\n", " ").replace("\r", "") for x in raw_lines).encode("utf-8", "replace") + b"\n"
    a = Pipeline(rules)
    feed_stream(io.BufferedReader(io.BytesIO(text)), a, "x")
    b = Pipeline(rules)
    for n, t in read_lines(io.BytesIO(text)):
        b.feed_line(n, t)
    ra, rb = a.finish("x").to_json(), b.finish("x").to_json()
    assert [d["cause"] for d in ra["diagnoses"]] == [d["cause"] for d in rb["diagnoses"]]
    assert ra["status"] == rb["status"]


# What a hostile or odd log adds inside lines: terminal escapes, NULs, C1, bidi and zero-width characters.
NOISE = ["\x1b[0m", "\x1b[31;1m", "\x00", "\x1b]0;title\x07", "\u200b", "\u202e", "\x85", "\x7f", "\ufeff"]
ROOT_LINES = [
    "ImportError: Vendored FlashAttention CUTE is not available",
    "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "[2026-01-01 00:00:09] The server is fired up and ready to roll!",
    "ModuleNotFoundError: No module named 'sgl_kernel'",
]


@st.composite
def odd_logs(draw):
    base = draw(st.lists(st.one_of(st.sampled_from(PIECES + ROOT_LINES), st.text(max_size=30)), max_size=40))
    out = []
    for line in base:
        line = line.replace("\n", " ").replace("\r", " ").replace("\x0b", " ").replace("\x0c", " ")
        line = line.replace("\x1c", " ").replace("\x1d", " ").replace("\x1e", " ").replace("\x85", " ")
        line = line.replace("\u2028", " ").replace("\u2029", " ")
        for _ in range(draw(st.integers(0, 2))):
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.sampled_from(NOISE)) + line[at:]
        out.append(line)
    return out, draw(st.sampled_from(["utf-8", "utf-16"])), draw(st.sampled_from(["\n", "\r\n", "\r"]))


def _verdict(p: Pipeline) -> tuple:
    r = p.finish("x").to_json()
    return r["status"], [d["cause"] for d in r["diagnoses"]], [ph["name"] for ph in r.get("phases", [])]


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          deadline=None)
@given(odd_logs())
def test_scan_of_odd_bytes_equals_feeding_every_line(rules, log):
    from logsense.sources.recorded import as_text_bytes

    lines, encoding, ending = log
    text = ending.join(lines) + ending
    data = text.encode("utf-8", "surrogatepass") if encoding == "utf-8" else "\ufeff".encode("utf-16-le") + \
        text.encode("utf-16-le", "surrogatepass")
    if ending == "\r" and not any(lines):
        return  # nothing but line ends: no text to find
    scanned = Pipeline(rules)
    feed_stream(as_text_bytes(io.BufferedReader(io.BytesIO(data)), "x"), scanned, "x")
    every = Pipeline(rules)
    for n, line in enumerate(lines, 1):
        every.feed_line(n, line.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
    assert _verdict(scanned) == _verdict(every), repr(log)
