"""rules/phases.yaml -> PhaseSpec: the marker lines that move a startup from one phase to the next.

The phase file is the one list of phases: their names, in startup order, are the order in
which the file first names them (`phase_names`); rules' `when_phase`, labels and reports take
them from there, so a phase is added in YAML alone.
"""

from __future__ import annotations

from pathlib import Path

from logsense import re_cache
from logsense.errors import RuleError, RuleErrors
from logsense.model import Value, _set
from logsense.prefilter import LiteralIndex
from logsense.rules.compile import CompiledRule, Pattern, compile_pattern
from logsense.rules.loader import Marked, PatternSpec, _Checker, plain, read_yaml
from logsense.rules.schema import PHASE_FIELDS

_NAME = re_cache.compile(r"[a-z][a-z0-9_]*")


class PhaseSpec(Value):
    """One startup phase of the phase file: the markers that begin it, its progress lines, whether it is ready."""

    __slots__ = ("name", "markers", "progress", "ready", "examples", "description", "line", "server", "stop")
    name: str
    markers: tuple[Pattern, ...]
    progress: tuple[Pattern, ...]
    ready: bool
    examples: tuple[str, ...]
    description: str
    line: int
    server: str | None  # markers hit only lines of this server's log (the same line means ready in one)
    stop: bool  # entered only after ready: the server was stopped, it did not fail

    def __init__(self, name: str, markers: tuple[Pattern, ...], progress: tuple[Pattern, ...], ready: bool,
                 examples: tuple[str, ...], description: str, line: int, server: str | None = None,
                 stop: bool = False) -> None:
        _set(self, "name", name)
        _set(self, "markers", markers)
        _set(self, "progress", progress)
        _set(self, "ready", ready)
        _set(self, "examples", examples)
        _set(self, "description", description)
        _set(self, "line", line)
        _set(self, "server", server)
        _set(self, "stop", stop)


PhaseKey = tuple[str, int, int]  # ("m" marker | "p" progress, phase index, pattern index)


def phase_index(specs: list[PhaseSpec]) -> LiteralIndex[PhaseKey]:
    """Literal -> ("m" marker | "p" progress, phase index, pattern index): what a line may move."""
    entries: list[tuple[str, bool, PhaseKey]] = []
    for si, spec in enumerate(specs):
        for pi, p in enumerate(spec.markers):
            for lit in p.literals or ():
                entries.append((lit, p.icase, ("m", si, pi)))
        for pi, p in enumerate(spec.progress):
            for lit in p.literals or ():
                entries.append((lit, p.icase, ("p", si, pi)))
    always = [("m", si, pi) for si, s in enumerate(specs) for pi, p in enumerate(s.markers) if not p.literals]
    return LiteralIndex(entries, always)


def phase_names(specs: list[PhaseSpec]) -> tuple[str, ...]:
    """The phases in startup order: the order in which the phase file first names them."""
    return tuple(dict.fromkeys(s.name for s in specs))


def unknown_phases(rules: list[CompiledRule], names: tuple[str, ...]) -> list[RuleError]:
    """A rule whose `when_phase` names a phase the phase file in use does not."""
    out = []
    for r in rules:
        for p in sorted(map(str, r.spec.when_phase or ())):
            if p not in names:
                out.append(RuleError(r.spec.path, r.spec.line, f"unknown phase '{p}' (phases: {', '.join(names)})",
                                     rule=r.id, field="when_phase"))
    return out


def load_phases(path: Path, display: str) -> list[PhaseSpec]:
    """Read and compile a phase file; raises RuleErrors naming file:line of each problem."""
    try:
        doc = read_yaml(path, display)
    except RuleError as e:
        raise RuleErrors([e]) from None
    c = _Checker(display)
    if doc is None or not isinstance(doc.value, dict) or not isinstance(doc.value.get("phases"), Marked):
        raise RuleErrors([RuleError(display, doc.line if doc else None, "a phase file is a mapping with 'phases:'")])
    out = []
    named: set[str] = set()
    ready: str | None = None  # the first ready phase: every phase is named before it, in startup order
    for i, m in enumerate(doc.value["phases"].value or []):
        f = c.fields(m, PHASE_FIELDS, None, f"phases[{i}].")
        if f is None:
            continue
        at = f["phase"] if isinstance(f["phase"], Marked) else m
        name = at.value if at is not m else None
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            c.err(at, "a phase name is lowercase letters, digits and '_', starting with a letter", None,
                  f"phases[{i}].phase")
            continue
        is_stop = bool(plain(f["stop"])) if isinstance(f["stop"], Marked) else False
        if name not in named and ready is not None and not is_stop:
            c.err(at, f"phase '{name}' is first named after the ready phase '{ready}': name every phase "
                  f"first in startup order, before the ready phase (known: {', '.join(sorted(named))})", None,
                  f"phases[{i}].phase")
            continue
        named.add(name)

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
        is_ready = bool(plain(f["ready"])) if isinstance(f["ready"], Marked) else False
        if is_ready and ready is None:
            ready = name
        out.append(PhaseSpec(
            name=name,
            markers=pats("markers"),
            progress=pats("progress"),
            ready=is_ready,
            examples=examples,
            description=str(plain(f["description"]) or "") if isinstance(f["description"], Marked) else "",
            line=m.line,
            server=str(plain(f["server"])) if isinstance(f["server"], Marked) and plain(f["server"]) else None,
            stop=is_stop,
        ))
    if c.errors:
        raise RuleErrors(c.errors)
    return out
