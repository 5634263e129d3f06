"""What several commands share: loading rules from the options, and the output console."""

from __future__ import annotations

import os
import sys

from rich.console import Console

from logsense.rules import RuleSet, load_rules


def rules_from_options(rules: list[str] | None, only_rules: list[str] | None, no_rules: bool = False) -> RuleSet:
    rs = load_rules(rules or [], only_rules or None)
    if no_rules:
        from logsense.analysis import verdict_only

        rs = verdict_only(rs)  # the fatal signals still decide whether the startup failed
    return rs


def console(stderr: bool = False) -> Console:
    """A console that honours NO_COLOR and dumb terminals, and never interprets log text as markup."""
    no_color = bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"
    return Console(
        file=sys.stderr if stderr else sys.stdout,
        no_color=no_color,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )
