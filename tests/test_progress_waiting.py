"""A long step (a big log, a cold rule pack) shows it is working on a terminal, and nothing anywhere else."""

from __future__ import annotations

import io
import time

from logsense.progress import Waiting


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_shown_after_a_second_on_a_terminal_then_erased():
    out = _Tty()
    with Waiting("logsense: analyzing big.log", out):
        time.sleep(Waiting.DELAY + 0.3)  # a sleep the timer signal interrupts and Python resumes
    text = out.getvalue()
    assert "logsense: analyzing big.log … 1 s" in text
    assert text.endswith("\r\x1b[K")


def test_nothing_when_quick_or_not_a_terminal():
    quick = _Tty()
    with Waiting("x", quick):
        pass
    assert quick.getvalue() == ""
    pipe = io.StringIO()
    with Waiting("x", pipe):
        time.sleep(Waiting.DELAY + 0.3)
    assert pipe.getvalue() == ""
