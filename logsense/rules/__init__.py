"""Rule packs: load, validate and compile them; `load_rules(paths)` is the only entry point."""

from __future__ import annotations

import gc
from functools import cached_property
from pathlib import Path

from logsense.errors import RuleError, RuleErrors
from logsense.paths import display
from logsense.prefilter import LiteralIndex
from logsense.rules import cache
from logsense.rules.compile import CompiledRule, compile_rule
from logsense.rules.loader import load_pack
from logsense.rules.phases import PhaseKey, PhaseSpec, load_phases, phase_index, phase_names, unknown_phases

RuleKey = tuple[int, str, int]  # (rule index, "any" | "all" | "not", pattern index)


def bundled_rules_dir() -> Path:
    """The rule packs shipped with logsense (rules/ in a checkout, logsense/_rules when installed)."""
    here = Path(__file__).resolve().parent.parent
    checkout = here.parent / "rules"
    if (checkout / "phases.yaml").is_file():
        return checkout
    return here / "_rules"


def verdict_rules_dir() -> Path:
    """The packs every analysis loads (the fatal signals), even with --only-rules."""
    return bundled_rules_dir() / "common"


class RuleSet:
    """The rules of one analysis, with the phase file's phases and the packs they came from."""

    def __init__(self, rules: list[CompiledRule], phases: list[PhaseSpec], sources: list[str] | None = None) -> None:
        self.rules = rules
        self.phases = phases
        self.sources = sources if sources is not None else []

    def get(self, rule_id: str) -> CompiledRule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    @cached_property
    def index(self) -> LiteralIndex[RuleKey]:
        """Literal -> (rule index, pattern kind, pattern index)."""
        entries: list[tuple[str, bool, RuleKey]] = []
        always: list[RuleKey] = []
        for ri, rule in enumerate(self.rules):
            for kind, pats in (("any", rule.any), ("all", rule.all), ("not", rule.not_)):
                for pi, p in enumerate(pats):
                    if not p.literals:
                        always.append((ri, kind, pi))
                    for lit in p.literals:
                        entries.append((lit, p.icase, (ri, kind, pi)))
        return LiteralIndex(entries, always)

    @cached_property
    def phase_names(self) -> tuple[str, ...]:
        """The phases in startup order, as the phase file names them."""
        return phase_names(self.phases)

    @cached_property
    def phase_index(self) -> LiteralIndex[PhaseKey]:
        """The phase markers' literals, for every Timeline of this rule set."""
        return phase_index(self.phases)


def _cached_pack(path: Path, display: str) -> tuple[list[CompiledRule], list[RuleError]]:
    """Parse and compile one pack file, or take what the same bytes gave before from the cache."""
    try:
        data = path.read_bytes()
    except OSError:
        return _compile_pack(path, display)  # load_pack says why it cannot be read
    name = cache.key("pack", data)
    entry = cache.load(name)
    if isinstance(entry, list) and all(isinstance(r, CompiledRule) for r in entry):
        for rule in entry:  # decoded just now, seen by no one yet: given its path as __init__ would
            object.__setattr__(rule.spec, "path", display)
        return entry, []
    rules, errors = _compile_pack(path, display)
    if not errors:  # a pack with problems is read again each time, so that they are reported each time
        cache.store(name, [_placed(r, "") for r in rules])
    return rules, errors


def _placed(rule: CompiledRule, display: str) -> CompiledRule:
    """The rule as read from `display`: the cache keeps no path (the same bytes may sit anywhere)."""
    return CompiledRule(rule.spec.replace(path=display), rule.any, rule.all, rule.not_)


def _compile_pack(path: Path, display: str) -> tuple[list[CompiledRule], list[RuleError]]:
    specs, errors = load_pack(path, display)
    rules = []
    for spec in specs:
        try:
            rules.append(compile_rule(spec))
        except RuleError as e:
            errors.append(e)
    return rules, errors


def _cached_phases(path: Path, display: str) -> list[PhaseSpec]:
    """The phase markers of a phases.yaml, cached as packs are; raises RuleErrors."""
    try:
        name = cache.key("phases", path.read_bytes())
    except OSError:
        return load_phases(path, display)
    entry = cache.load(name)
    if isinstance(entry, list) and all(isinstance(p, PhaseSpec) for p in entry):
        return entry
    phases = load_phases(path, display)
    cache.store(name, phases)
    return phases


def bundled_phase_names() -> tuple[str, ...]:
    """The phases of the bundled phase file, for what is checked without a rule set (labels, `label --phase`)."""
    path = bundled_rules_dir() / "phases.yaml"
    return phase_names(_cached_phases(path, display(path)))


def pack_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.yaml") if p.name != "phases.yaml" and not p.name.endswith(".label.yaml"))


def load_rules(extra: list[str] | None = None, only: list[str] | None = None, strict: bool = True) -> RuleSet:
    """Load the bundled packs (or only `only`), plus `extra` dirs/files; raise RuleErrors on any problem."""
    # Thousands of objects that live as long as the process are made here, and none is garbage:
    # the collector would only scan them again and again (~2 % of a short run).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _load_rules(extra, only, strict)
    finally:
        if collecting:
            gc.enable()


def _load_rules(extra: list[str] | None, only: list[str] | None, strict: bool) -> RuleSet:
    roots = [Path(p) for p in only] if only else [bundled_rules_dir()]
    roots += [Path(p) for p in extra or []]
    verdict = verdict_rules_dir()
    if only and verdict.is_dir() and not any(r.resolve() == verdict.resolve() or r.resolve() in verdict.resolve().parents
                                             for r in roots if r.exists()):
        roots.append(verdict)  # whatever the cause rules, the fatal signals decide the verdict
    errors: list[RuleError] = []
    rules: list[CompiledRule] = []
    seen: dict[str, str] = {}
    sources = []
    phases: list[PhaseSpec] | None = None
    for root in roots:
        if not root.exists():
            errors.append(RuleError(str(root), None, "no such rule file or directory"))
            continue
        phase_file = root / "phases.yaml" if root.is_dir() else None
        if phase_file is not None and phase_file.is_file():
            try:
                phases = _cached_phases(phase_file, display(phase_file))
            except RuleErrors as e:
                errors.extend(e.errors)
        for path in pack_files(root):
            shown = display(path)
            sources.append(shown)
            compiled, errs = _cached_pack(path, shown)
            errors.extend(errs)
            for rule in compiled:
                if rule.id in seen:
                    errors.append(RuleError(shown, rule.spec.line, f"duplicate rule id (also in {seen[rule.id]})",
                                            rule=rule.id, field="id"))
                    continue
                seen[rule.id] = shown
                rules.append(rule)
    if phases is None:
        bundled = bundled_rules_dir() / "phases.yaml"
        phases = _cached_phases(bundled, display(bundled)) if bundled.is_file() else []
    errors.extend(unknown_phases(rules, phase_names(phases)))
    if errors and strict:
        raise RuleErrors(errors)
    return RuleSet(rules, phases, sources)
