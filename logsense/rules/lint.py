"""Checks across a rule pack that single-rule validation cannot see."""

from __future__ import annotations

from logsense.rules import RuleSet


def lint(rules: RuleSet) -> list[str]:
    """Findings as `path:line: rule 'id': message`."""
    out = []
    for r in rules.rules:
        where = f"{r.spec.path}:{r.spec.line}: rule '{r.id}'"
        for p in r.any + r.all:
            if not p.literals:
                out.append(f"{where}: {p.spec.field}: the prefilter cannot narrow this pattern (no literal of "
                           f"3+ characters every match must contain); it runs on every line")
        if r.spec.role == "root" and not r.spec.fixes and r.spec.cause not in ("unknown",):
            out.append(f"{where}: a root rule with no fix")
    return out
