"""How a path is shown to the user; below every module that names files, so any of them may import it."""

from __future__ import annotations

import os
from pathlib import Path


def display(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:  # os.path, not pathlib: a warm start shows every rule pack's path
        real, cwd = os.path.realpath(path), os.path.realpath(os.getcwd())
    except (ValueError, OSError):
        return str(Path(path))
    if real == cwd:
        return "."
    if real.startswith(cwd.rstrip(os.sep) + os.sep):
        return real[len(cwd.rstrip(os.sep)) + 1:]
    return str(Path(path))
