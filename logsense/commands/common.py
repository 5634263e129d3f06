"""What several commands share: loading rules from the options (the console is logsense.report.console)."""

from __future__ import annotations

from logsense.rules import RuleSet, load_rules


def rules_from_options(rules: list[str] | None, only_rules: list[str] | None, no_rules: bool = False) -> RuleSet:
    rs = load_rules(rules or [], only_rules or None)
    if no_rules:
        from logsense.analysis import verdict_only

        rs = verdict_only(rs)  # the fatal signals still decide whether the startup failed
    return rs
