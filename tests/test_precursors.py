"""A warning that predicts a failure is shown with its fix on a log that did not become ready, never as the verdict."""

from __future__ import annotations

import io

from logsense.model import Status
from logsense.pipeline import run
from logsense.report import text as report_text
from logsense.report.term import Terminal
from logsense.rules import load_rules

WARNED = """\
INFO 11-20 18:08:10 [__init__.py:220] No platform detected, vLLM is running on UnspecifiedPlatform
WARNING 11-20 18:08:11 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')
INFO 11-20 18:08:12 [api_server.py:1805] vLLM API server version 0.10.1
"""
READY = """\
(APIServer pid=1) INFO 11-20 18:09:00 [api_server.py:1857] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=1) INFO:     Application startup complete.
"""


def _text(report) -> str:
    out = io.StringIO()
    report_text.render(report, Terminal(out))
    return out.getvalue()


def test_an_incomplete_log_shows_the_warning_and_its_fix_and_stays_incomplete():
    report = run(WARNED.splitlines(), load_rules())
    assert report.status is Status.INCOMPLETE and report.root is None
    warned = [d for d in report.diagnoses if d.kind == "precursor"]
    # the missing library, and the missing platform it leads to
    assert sorted(d.cause for d in warned) == ["accelerator_unavailable", "cuda_library_missing"]
    assert all(d.to_json()["root"] is False for d in warned)
    text = _text(report)
    assert "warns of what may make the startup fail" in text and "LD_LIBRARY_PATH" in text


def test_a_ready_log_does_not_show_the_warning():
    report = run((WARNED + READY).splitlines(), load_rules())
    assert report.status is Status.READY and report.root is None
    assert "warns of what may make" not in _text(report)
