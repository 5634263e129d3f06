"""The one console every command writes to the terminal with: control characters cleaned, NO_COLOR and
dumb terminals honoured, log text never read as markup, piped output never wrapped."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from logsense.normalize import clean

PIPED_WIDTH = 1000  # piped output is read by programs: rows are never wrapped or cut at 80 columns


class SafeConsole(Console):
    """The one place text reaches a terminal: every piece of text is cleaned of control, bidi and zero-width
    characters (rich adds its own styling codes after this), and a closed pipe is an ordinary BrokenPipeError."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(s if s.control else Segment(clean(s.text), s.style) for s in buffer)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError  # the CLI's error boundary ends the run with exit 0 (rich would exit 1)


def console(stderr: bool = False) -> Console:
    """A console that honours NO_COLOR and dumb terminals, and never interprets log text as markup."""
    no_color = bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"
    file = sys.stderr if stderr else sys.stdout
    piped = not _isatty(file)  # even with COLUMNS set: a program reads this, not a person
    return SafeConsole(
        file=file,
        no_color=no_color,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
        width=PIPED_WIDTH if piped else None,
    )


def _isatty(file: object) -> bool:
    try:
        return bool(file.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False
