"""rules/phases.yaml -> PhaseSpec: the marker lines that move a startup from one phase to the next."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from logsense.errors import RuleError, RuleErrors
from logsense.prefilter import LiteralIndex
from logsense.rules.compile import Pattern, compile_pattern
from logsense.rules.loader import Marked, PatternSpec, _Checker, plain, read_yaml
from logsense.rules.schema import PHASE_FIELDS, PHASES


@dataclass(frozen=True)
class PhaseSpec:
    name: str
    markers: tuple[Pattern, ...]
    progress: tuple[Pattern, ...]
    ready: bool
    examples: tuple[str, ...]
    description: str
    line: int
    server: str | None = None  # markers hit only lines of this server's log (the same line means ready in one)


def phase_index(specs: list[PhaseSpec]) -> LiteralIndex:
    """Literal -> ("m" marker | "p" progress, phase index, pattern index): what a line may move."""
    entries = []
    for si, spec in enumerate(specs):
        for pi, p in enumerate(spec.markers):
            for lit in p.literals or ():
                entries.append((lit, p.icase, ("m", si, pi)))
        for pi, p in enumerate(spec.progress):
            for lit in p.literals or ():
                entries.append((lit, p.icase, ("p", si, pi)))
    always = [("m", si, pi) for si, s in enumerate(specs) for pi, p in enumerate(s.markers) if not p.literals]
    return LiteralIndex(entries, always)


def load_phases(path: Path, display: str) -> list[PhaseSpec]:
    try:
        doc = read_yaml(path, display)
    except RuleError as e:
        raise RuleErrors([e]) from None
    c = _Checker(display)
    if doc is None or not isinstance(doc.value, dict) or not isinstance(doc.value.get("phases"), Marked):
        raise RuleErrors([RuleError(display, doc.line if doc else None, "a phase file is a mapping with 'phases:'")])
    out = []
    for i, m in enumerate(doc.value["phases"].value or []):
        f = c.fields(m, PHASE_FIELDS, None, f"phases[{i}].")
        if f is None:
            continue
        name = f["phase"].value if isinstance(f["phase"], Marked) else None
        if name not in PHASES:
            c.err(m, f"unknown phase '{name}' (phases: {', '.join(PHASES)})", None, f"phases[{i}].phase")
            continue

        def pats(key: str, name: str = name, f: dict = f) -> tuple[Pattern, ...]:
            val = f[key]
            out_p = []
            for j, p in enumerate(val.value if isinstance(val, Marked) else []):
                spec = PatternSpec(str(p.value), p.line, p.column, f"{key}[{j}]")
                try:
                    out_p.append(compile_pattern(spec, display, f"phase {name}"))
                except RuleError as e:
                    c.errors.append(e)
            return tuple(out_p)

        examples = tuple(str(x) for x in (plain(f["examples"]) if isinstance(f["examples"], Marked) else []))
        out.append(PhaseSpec(
            name=name,
            markers=pats("markers"),
            progress=pats("progress"),
            ready=bool(plain(f["ready"])) if isinstance(f["ready"], Marked) else False,
            examples=examples,
            description=str(plain(f["description"]) or "") if isinstance(f["description"], Marked) else "",
            line=m.line,
            server=str(plain(f["server"])) if isinstance(f["server"], Marked) and plain(f["server"]) else None,
        ))
    if c.errors:
        raise RuleErrors(c.errors)
    return out
