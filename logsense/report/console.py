"""The one console every command writes to the terminal with: control characters cleaned, NO_COLOR and
dumb terminals honoured, log text never read as markup, piped output never wrapped."""

from __future__ import annotations

import sys

from logsense.report.term import Terminal


def console(stderr: bool = False) -> Terminal:
    """The terminal for stdout (or stderr), coloured as the environment and the file allow."""
    return Terminal.for_file(sys.stderr if stderr else sys.stdout)
