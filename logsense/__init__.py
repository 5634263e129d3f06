"""logsense: tells why an LLM inference server failed to start, and how to fix it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from logsense.model import Report
    from logsense.rules import RuleSet

__all__ = ["__version__", "analyze", "load_rules"]


def load_rules(extra: list[str] | None = None, only: list[str] | None = None) -> RuleSet:
    """Load and compile the bundled rule packs (or only `only`), plus `extra`; raises RuleErrors."""
    from logsense.rules import load_rules as _load

    return _load(extra, only)


def analyze(lines: Iterable[str], rules: RuleSet | None = None, source: str = "<input>") -> Report:
    """Analyze a startup log given as lines; returns the Report (diagnoses, phases, facts)."""
    from logsense.pipeline import run

    return run(lines, rules or load_rules(), source)
