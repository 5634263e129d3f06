"""A progress line for long commands (check, stats, train, eval): on stderr, and only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


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
