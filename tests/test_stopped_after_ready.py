"""A ready server stopped in an orderly way is `ready`, with the stop said; a stop marker before ready is no stop."""

from __future__ import annotations

import io

from logsense.model import Status
from logsense.pipeline import run
from logsense.report import text as report_text
from logsense.report.term import Terminal
from logsense.rules import load_rules

READY = """\
[2026-11-20 10:00:00] server_args=ServerArgs(model_path='m', tokenizer_path='m')
[2026-11-20 10:00:01 TP0] Load weight begin. avail mem=78.00 GB
[2026-11-20 10:00:30] The server is fired up and ready to roll!
"""
# what SGLang prints when the ready server gets SIGTERM and its children die in the cleanup
STOP = """\
[2026-11-20 10:05:00] SIGTERM received. signum=None frame=None. Draining requests and shutting down...
[2026-11-20 10:05:01] Subprocess scheduler_0 (pid=4242) crashed with exit code -9. Triggering SIGQUIT for cleanup...
[2026-11-20 10:05:01] Traceback (most recent call last):
[2026-11-20 10:05:01]   File "x.py", line 1, in f
[2026-11-20 10:05:01] RuntimeError: the cleanup raced the stop
Killed
"""
FAILURE_AFTER_READY = """\
[2026-11-20 10:04:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
[2026-11-20 10:04:00 TP0]   File "x.py", line 1, in f
[2026-11-20 10:04:00 TP0] RuntimeError: CUDA error: an illegal memory access was encountered
"""


def test_ready_then_stopped_is_ready_with_the_stop_said():
    report = run((READY + STOP).splitlines(), load_rules())
    assert report.status is Status.READY
    assert report.root is None
    assert report.stopped is not None and report.stopped.start_line == 4
    assert report.to_json()["phases"][-1] == {**report.stopped.to_json(), "stop": True}
    out = io.StringIO()
    report_text.render(report, Terminal(out))
    assert "then stopped (line 4)" in out.getvalue()


def test_a_failure_before_the_stop_still_counts():
    report = run((READY + FAILURE_AFTER_READY + STOP).splitlines(), load_rules())
    assert report.status is Status.FAILED


def test_a_stop_marker_before_ready_is_no_stop():
    lines = READY.splitlines()[:2] + STOP.splitlines()
    report = run(lines, load_rules())
    assert report.stopped is None
    assert report.status is Status.FAILED


def test_a_restart_after_the_stop_is_a_new_startup():
    report = run((READY + STOP + READY.splitlines()[0] + "\n").splitlines(), load_rules())
    assert report.stopped is None
    assert report.status is Status.INCOMPLETE
