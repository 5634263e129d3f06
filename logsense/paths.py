"""How a path is shown to the user; below every module that names files, so any of them may import it."""

from __future__ import annotations

from pathlib import Path


def display(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(p)
