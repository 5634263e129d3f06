"""`logsense rules` as a user reads it: a rule in full (text or JSON), and check results line by line.

Rule text is data: it is always put into rich `Text` objects, never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.text import Text

from logsense.report.tables import rules_table
from logsense.report.term import Terminal
from logsense.rules.compile import CompiledRule
from logsense.rules.loader import RuleSpec
from logsense.taxonomy import title

if TYPE_CHECKING:
    from logsense.check import Problem


def rule_summary(r: CompiledRule) -> dict[str, Any]:
    """One rule as `rules list --format json` gives it."""
    return {"id": r.id, "cause": r.spec.cause, "role": r.spec.role, "priority": r.spec.priority,
            "confidence": r.spec.confidence, "source": f"{r.spec.path}:{r.spec.line}"}


def render_rule_list(console: Terminal, rules: list[CompiledRule], packs: int) -> None:
    """`rules list`: the table of rules, then how many from how many packs."""
    console.print(rules_table(rules))
    console.print(Text(f"{len(rules)} rules from {packs} packs", style="dim"))


def rule_json(s: RuleSpec) -> dict[str, Any]:
    """One rule in full, as `rules show --format json` gives it."""
    return {
        "id": s.id, "cause": s.cause, "role": s.role, "priority": s.priority, "confidence": s.confidence,
        "title": s.title, "explanation": s.explanation, "when_phase": sorted(s.when_phase or []),
        "match": {"any": [p.text for p in s.any], "all": [p.text for p in s.all], "within": s.within,
                  "not": [p.text for p in s.not_]},
        "fixes": [{"kind": f.kind, "value": f.value, "note": f.note, "fallback": f.fallback,
                   "if": {k: list(v) for k, v in f.when.items()}} for f in s.fixes],
        "references": list(s.references),
        "examples": [{"kind": e.kind, "log": e.log} for e in s.examples],
        "source": f"{s.path}:{s.line}",
    }


def render_rule(console: Terminal, s: RuleSpec) -> None:
    """One rule in full: what it says, its patterns, fixes and examples, and where it is."""
    head = Text(s.id, style="bold")
    head.append(f"  {s.role}, priority {s.priority}, confidence {s.confidence}", style="dim")
    console.print(head)
    console.print(Text(f"cause: {s.cause}"))
    console.print(Text(f"title: {s.title or title(s.cause)}"))
    if s.explanation:
        console.print(Text(f"why:   {s.explanation}"))
    if s.when_phase:
        console.print(Text(f"only in phases: {', '.join(sorted(s.when_phase))}"))
    for label, pats in (("matches any of", s.any), ("and all of", s.all), ("unless", s.not_)):
        if pats:
            within = f" (within {s.within} lines)" if label == "and all of" and s.within else ""
            console.print(Text(f"{label}{within}:"))
            for p in pats:
                console.print(Text(f"  {p.text}"))
    if s.fixes:
        console.print(Text("fixes:"))
        for f in s.fixes:
            line = Text(f"  [{f.kind}] {f.value}")
            if f.when:
                line.append(f"  if {', '.join(f'{k} in {list(v)}' for k, v in f.when.items())}", style="dim")
            if f.fallback:
                line.append(f"  (else: {f.fallback})", style="dim")
            console.print(line)
            if f.note:
                console.print(Text(f"      note: {f.note}", style="dim"))
    for kind in ("match", "no_match"):
        exs = [e for e in s.examples if e.kind == kind]
        if exs:
            console.print(Text(f"examples that must {'fire' if kind == 'match' else 'not fire'}:"))
            for e in exs:
                for i, ln in enumerate(e.log.splitlines() or [""]):
                    console.print(Text(("  - " if i == 0 else "    ") + ln))
    for ref in s.references:
        console.print(Text(f"see: {ref}", style="dim"))
    console.print(Text(f"source: {s.path}:{s.line}", style="dim"))


def render_checked(console: Terminal, problems: list[Problem], summary: str, *, passed: Iterable[str] = (),
                   mark: str = "FAIL ", style: str = "red") -> None:
    """What passed (one green line each), each problem as `mark path:line: message` in `style`, then `summary`."""
    for line in passed:
        console.print(Text(line, style="green"))
    for p in problems:
        console.print(Text(mark + p.render(), style=style))
    console.print(Text(summary, style=style if problems else "green"))
