"""Tracebacks (chained), compiler errors and interleaved ranks frame into the right events."""

from __future__ import annotations

from logsense.framing import Framer, error_lines, exception_lines, frame_lines, wrapped_message
from logsense.normalize import Normalizer


def frame(text: str):
    n, f, out = Normalizer(), Framer(), []
    for i, line in enumerate(text.splitlines(), 1):
        for rec in n.feed(i, line):
            out.extend(f.feed(rec))
    out.extend(f.flush())
    return out


CHAINED = """\
[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "a.py", line 1, in <module>
    import flash_attn.cute
ModuleNotFoundError: No module named 'flash_attn.cute'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "b.py", line 2, in run
    f()
ImportError: Vendored FlashAttention CUTE is not available
[2026-01-01 00:00:01] Received sigquit from a child process. It usually means the child failed.
"""


def test_chained_traceback_is_one_event():
    events = frame(CHAINED)
    assert [e.kind for e in events] == ["traceback", "line"]
    assert events[0].first_line == 1 and events[0].last_line == 11


def test_a_framed_traceback_is_read_in_one_place():
    tb, line = frame(CHAINED)
    assert [r.line for r in exception_lines(tb)] == [4, 11]  # the cause, then the exception it ends in
    assert [r.line for r in frame_lines(tb)] == [2, 9]
    assert error_lines(tb) == exception_lines(tb)
    assert exception_lines(line) == frame_lines(line) == [] and error_lines(line) == list(line.records)


def test_a_traceback_cut_before_its_exception_has_only_frames():
    (tb,) = frame("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\n")
    assert exception_lines(tb) == [] and [r.line for r in frame_lines(tb)] == [2]
    assert error_lines(tb) == [tb.records[0]]


def test_every_line_in_exactly_one_event():
    events = frame(CHAINED)
    lines = [r.line for e in events for r in e.records]
    assert lines == list(range(1, 13))


WRAPPED = """\
ValueError: To serve at least one request with the model's max seq len (1048576),
22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).
Based on the available memory, the estimated maximum model length is 810208.
INFO 05-07 20:21:05 [gpu_worker.py:276] Available KV cache memory: 6.94 GiB
"""


def test_an_exception_message_a_paste_wrapped_is_read_joined():
    """A bare exception line takes the unstamped lines after it; a stamped record ends it."""
    wrapped, after = frame(WRAPPED)
    assert [r.line for r in wrapped.records] == [1, 2, 3] and after.first_line == 4
    joined = wrapped_message(wrapped)
    assert joined is not None and joined.line == 1
    assert "max seq len (1048576), 22.5 GiB KV cache is needed" in joined.message
    assert wrapped_message(after) is None


def test_a_wrapped_message_is_matched_by_the_rules(rules):
    from logsense.pipeline import run

    text = ("AssertionError: Error in memory profiling. Initial free memory 82.94 GiB,\n"
            "current free memory 90.17 GiB. This happens when other processes sharing the\n"
            "same container release GPU memory while vLLM is profiling during initialization.\n")
    report = run(text.splitlines(), rules)
    assert report.root is not None and report.root.cause == "gpu_memory_not_free"


PREFIXED_WRAPPED = """\
(VllmWorker rank=3 pid=150413) ERROR 04-24 07:04:06 [multiproc_executor.py:435] ImportError: /venv/torchac_cuda.so:
 undefined symbol: _ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_
(VllmWorker rank=3 pid=150413) ERROR 04-24 07:04:06 [multiproc_executor.py:435] WorkerProc failed to start
raw stderr of another process
"""


def test_a_prefixed_exception_line_takes_the_wrapped_line_that_lost_the_prefix():
    """The line a paste wrapped off a vLLM-prefixed exception line has no pid: it goes on that line's message."""
    events = frame(PREFIXED_WRAPPED)
    assert [r.line for r in events[0].records] == [1, 2]
    joined = wrapped_message(events[0])
    assert joined is not None and joined.message.endswith(".so: undefined symbol: _ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_")
    assert [e.first_line for e in events[1:]] == [3, 4]


def test_compiler_error_joins_its_traceback():
    text = """\
/tmp/x/cuda_utils.c:6:10: fatal error: Python.h: No such file or directory
    6 | #include <Python.h>
      |          ^~~~~~~~~~
compilation terminated.
Traceback (most recent call last):
  File "build.py", line 3, in _build
subprocess.CalledProcessError: Command '['/usr/bin/gcc', 'x.c']' returned non-zero exit status 1.
[2026-01-01 00:00:01] next
"""
    events = frame(text)
    assert events[0].kind == "traceback" and events[0].last_line == 7


def test_other_rank_line_does_not_cut_a_traceback():
    text = """\
[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
[2026-01-01 00:00:00 TP1] Load weight end.
  File "a.py", line 1, in <module>
RuntimeError: boom
[2026-01-01 00:00:00 TP0] after
"""
    events = frame(text)
    tb = next(e for e in events if e.kind == "traceback")
    assert [r.line for r in tb.records] == [1, 3, 4]
