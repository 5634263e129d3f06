"""A progress line for long commands (check, stats, train, eval, a big log): on stderr, and only on a terminal."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any, TextIO


class Progress:
    """`label 12/40 name` redrawn in place at most ten times a second; silent when stderr is a pipe or file."""

    def __init__(self, label: str, total: int | None = None, out: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self.out = out if out is not None else sys.stderr
        try:
            self.on = self.out.isatty()
        except (AttributeError, ValueError, OSError):
            self.on = False
        self._last = 0.0
        self._shown = False

    def step(self, what: str = "") -> None:
        """One more item done (`what`: its name, shown cut to fit)."""
        self.done += 1
        now = time.monotonic()
        if not self.on or now - self._last < 0.1:
            return
        self._last = now
        from logsense.normalize import clean

        count = f"{self.done}/{self.total}" if self.total else str(self.done)
        self._write(f"\r\x1b[K{self.label} {count} {clean(what)[-60:]}")
        self._shown = True

    def close(self) -> None:
        """Erase the line, so what the command prints next starts clean."""
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):
            self.on = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Waiting:
    """`label … 12 s` on stderr while one long step runs (a big log, a cold rule pack): shown after DELAY seconds,
    redrawn every EVERY, erased at the end; silent when stderr is not a terminal.

    A timer signal draws it, not a thread: the block search forks, and a fork copies no other thread.
    """

    DELAY = 1.0
    EVERY = 0.5

    def __init__(self, label: str, out: TextIO | None = None) -> None:
        self.label = label
        self.out = out if out is not None else sys.stderr
        try:
            tty = self.out.isatty()
        except (AttributeError, ValueError, OSError):
            tty = False
        self.on = tty and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        self._shown = False
        self._began = 0.0
        self._old: Any = None

    def __enter__(self) -> Waiting:
        if self.on:
            self._began = time.monotonic()
            self._old = signal.signal(signal.SIGALRM, self._tick)
            signal.setitimer(signal.ITIMER_REAL, self.DELAY, self.EVERY)
        return self

    def _tick(self, *_: object) -> None:
        from logsense.normalize import clean
        from logsense.report.text import duration

        try:
            self.out.write(f"\r\x1b[K{clean(self.label)[-70:]} … {duration(time.monotonic() - self._began)}")
            self.out.flush()
            self._shown = True
        except (OSError, ValueError):
            pass

    def __exit__(self, *exc: object) -> None:
        if not self.on:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._old if self._old is not None else signal.SIG_DFL)
        if self._shown:
            try:
                self.out.write("\r\x1b[K")
                self.out.flush()
            except (OSError, ValueError):
                pass
