"""Fuzz the whole analyze path (read, scan, normalize, frame, match, report) with generated logs.

    python benchmarks/fuzz.py --examples 20000

Inputs mix real SGLang, journalctl, traceback and compiler lines with random bytes, escapes,
huge lines and odd line ends; every input must give a report whose JSON renders, and the
fast scanner must agree with reading every line. Prints how many inputs were tried.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logsense import load_rules  # noqa: E402
from logsense.pipeline import Pipeline  # noqa: E402
from logsense.report.text import render  # noqa: E402
from logsense.scan import feed_stream  # noqa: E402
from logsense.sources.recorded import read_lines  # noqa: E402

PIECES = [
    b"Traceback (most recent call last):", b'  File "/x/sglang/srt/a.py", line 1, in f', b"    x()",
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    b"ImportError: Vendored FlashAttention CUTE is not available", b"",
    b"The above exception was the direct cause of the following exception:",
    b"[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    b"[2026-01-01 00:00:00 TP1] Load weight begin. avail mem=1 GB", b"[2026-01-01 00:00:01] Capture cuda graph begin.",
    b"x.c:1:2: fatal error: Python.h: No such file or directory", b"compilation terminated.",
    b"Jan 01 00:00:00 host python3[1]: [2026-01-01 00:00:00 TP3] Load weight end. type=X, avail mem=1 GB",
    b"\x1b]0;title\x07\x1b[31mred\x1b[0m [red]m[/red]", b"a\rb\rc\r", b"-- Boot 0123456789abcdef0123456789abcdef --",
    b'{"MESSAGE": [27, 91, 51, 49, 109], "_PID": "3"}', b'{"MESSAGE": null}', b"\xff\xfe\x00\x01",
    b"server_args=ServerArgs(model_path='/m', mem_fraction_static=0.9, cuda_graph_max_bs=abc, tp_size=(1,",
    b"[2026-01-01 00:00:02] The server is fired up and ready to roll!",
]
line = st.one_of(st.sampled_from(PIECES), st.binary(max_size=80), st.builds(lambda n: b"A" * n, st.integers(0, 200_000)))
logs = st.tuples(st.lists(line, max_size=80), st.sampled_from([b"\n", b"\r\n", b"\r"]))

RULES = load_rules()
TRIED = [0]


def check(data: bytes) -> None:
    TRIED[0] += 1
    a = Pipeline(RULES)
    feed_stream(io.BufferedReader(io.BytesIO(data)), a, "fuzz")
    ra = a.finish("fuzz")
    json.dumps(ra.to_json())
    b = Pipeline(RULES)
    for n, text in read_lines(io.BytesIO(data)):
        b.feed_line(n, text)
    rb = b.finish("fuzz")
    assert [d.cause for d in ra.diagnoses] == [d.cause for d in rb.diagnoses], (data[:300], ra, rb)
    from rich.console import Console

    render(ra, Console(file=io.StringIO(), force_terminal=True, markup=False, width=120))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=5000)
    n = ap.parse_args().examples

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(logs)
    def run(case):
        lines, end = case
        check(end.join(lines))

    t = time.perf_counter()
    run()
    print(f"fuzz: {TRIED[0]} inputs tried in {time.perf_counter() - t:.0f} s, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
