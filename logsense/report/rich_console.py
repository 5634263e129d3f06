"""The rich console the terminal hands tables and rich text to: every piece cleaned, a closed pipe an error."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from logsense.normalize import clean


class SafeConsole(Console):
    """Every piece of text is cleaned of control, bidi and zero-width characters (rich adds its own styling
    codes after this), and a closed pipe is an ordinary BrokenPipeError."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(s if s.control else Segment(clean(s.text), s.style) for s in buffer)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError  # the CLI's error boundary ends the run with exit 0 (rich would exit 1)
