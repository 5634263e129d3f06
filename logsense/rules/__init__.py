"""Rule packs: load, validate and compile them; `load_rules(paths)` is the only entry point."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from logsense.errors import RuleError, RuleErrors
from logsense.prefilter import LiteralIndex
from logsense.rules.compile import CompiledRule, compile_rule
from logsense.rules.loader import load_pack
from logsense.rules.phases import PhaseSpec, load_phases

# Part of every digest: a new logsense (or regex module) checks each pack again.
_COMPILER_VERSION = b"logsense-rules-1"


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


@dataclass
class RuleSet:
    rules: list[CompiledRule]
    phases: list[PhaseSpec]
    sources: list[str] = field(default_factory=list)

    def get(self, rule_id: str) -> CompiledRule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    @cached_property
    def index(self) -> LiteralIndex:
        """Literal -> (rule index, pattern kind, pattern index)."""
        entries, always = [], []
        for ri, rule in enumerate(self.rules):
            for kind, pats in (("any", rule.any), ("all", rule.all), ("not", rule.not_)):
                for pi, p in enumerate(pats):
                    if not p.literals:
                        always.append((ri, kind, pi))
                    for lit in p.literals:
                        entries.append((lit, p.icase, (ri, kind, pi)))
        return LiteralIndex(entries, always)


def _cache_file() -> Path | None:
    if os.environ.get("LOGSENSE_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "logsense" / "validated-packs.json"


def _validated() -> set[str]:
    """Digests of pack files whose patterns all compiled before: their check can be skipped."""
    f = _cache_file()
    try:
        return set(json.loads(f.read_text())) if f else set()
    except (OSError, ValueError, TypeError):
        return set()


def _remember(digests: set[str]) -> None:
    f = _cache_file()
    if f is None:
        return
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(sorted(digests)[-500:]))
        tmp.replace(f)
    except OSError:
        pass  # a read-only home only costs the check next time


def pack_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.yaml") if p.name != "phases.yaml" and not p.name.endswith(".label.yaml"))


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_rules(extra: list[str] | None = None, only: list[str] | None = None, strict: bool = True) -> RuleSet:
    """Load the bundled packs (or only `only`), plus `extra` dirs/files; raise RuleErrors on any problem."""
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
    known = _validated()
    digests: set[str] = set()
    for root in roots:
        if not root.exists():
            errors.append(RuleError(str(root), None, "no such rule file or directory"))
            continue
        phase_file = root / "phases.yaml" if root.is_dir() else None
        if phase_file is not None and phase_file.is_file():
            try:
                phases = load_phases(phase_file, _display(phase_file))
            except RuleErrors as e:
                errors.extend(e.errors)
        for path in pack_files(root):
            display = _display(path)
            sources.append(display)
            try:
                digest = hashlib.sha1(path.read_bytes() + _COMPILER_VERSION).hexdigest()
            except OSError:
                digest = ""
            specs, errs = load_pack(path, display)
            errors.extend(errs)
            if not errs:
                digests.add(digest)
            for spec in specs:
                if spec.id in seen:
                    errors.append(RuleError(display, spec.line, f"duplicate rule id (also in {seen[spec.id]})",
                                            rule=spec.id, field="id"))
                    continue
                seen[spec.id] = display
                try:
                    rules.append(compile_rule(spec, validate=digest not in known))
                except RuleError as e:
                    errors.append(e)
                    digests.discard(digest)
    if phases is None:
        bundled = bundled_rules_dir() / "phases.yaml"
        phases = load_phases(bundled, _display(bundled)) if bundled.is_file() else []
    if errors and strict:
        raise RuleErrors(errors)
    if digests - known:
        _remember(known | digests)
    return RuleSet(rules, phases, sources)
