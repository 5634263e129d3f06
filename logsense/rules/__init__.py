"""Rule packs: load, validate and compile them; `load_rules(paths)` is the only entry point."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from logsense.errors import RuleError, RuleErrors
from logsense.paths import display
from logsense.prefilter import LiteralIndex
from logsense.rules import cache
from logsense.rules.compile import CompiledRule, compile_rule
from logsense.rules.loader import load_pack
from logsense.rules.phases import PhaseKey, PhaseSpec, load_phases, phase_index, phase_names, unknown_phases
from logsense.servers import NAMES, plugin_rules

RuleKey = tuple[int, str, int]  # (rule index, "any" | "all" | "not", pattern index)


def bundled_rules_dir() -> Path:
    """The rule packs shipped with logsense (rules/ in a checkout, logsense/_rules when installed)."""
    here = Path(__file__).resolve().parent.parent
    checkout = here.parent / "rules"
    if (checkout / "phases.yaml").is_file():
        return checkout
    return here / "_rules"


def verdict_rules_dir() -> Path:
    """The pack every analysis loads (the fatal signals), even with --only-rules."""
    return bundled_rules_dir() / "common" / "fatal.yaml"


class RuleSet:
    """The rules of one analysis, with the phase file's phases and the packs they came from."""

    def __init__(self, rules: Sequence[CompiledRule], phases: list[PhaseSpec], sources: list[str] | None = None) -> None:
        self.rules = rules
        self.phases = phases
        self.sources = sources if sources is not None else []

    def get(self, rule_id: str) -> CompiledRule | None:
        at = self._positions.get(rule_id)
        return self.rules[at] if at is not None else None

    @cached_property
    def _positions(self) -> dict[str, int]:
        """Each rule id's place (the first, should two rules share one), read without decoding a cached rule."""
        ids = self.rules.ids if isinstance(self.rules, cache.LazyRules) else [r.id for r in self.rules]
        out: dict[str, int] = {}
        for i, rule_id in enumerate(ids):
            out.setdefault(rule_id, i)
        return out

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


PhaseSources = tuple[Path | None, list[tuple[Path, str | None]]]


def _phase_sources(roots: list[Path]) -> PhaseSources:
    """The phase file `roots` give (None: the bundled one), and each server's own markers file with the server
    its markers are confined to (a plug-in's to itself; a bundled server's as its file says), in the registry's
    order."""
    plugins = plugin_rules()
    order = {n: i for i, n in enumerate(NAMES)}
    base: Path | None = None
    found: dict[Path, tuple[int, Path, str | None]] = {}  # each file once: (its server's place, path, confined to)

    def add(path: Path, server: str, confined: str | None) -> None:
        if path.is_file():
            found.setdefault(path.resolve(), (order.get(server, len(order)), path, confined))

    for root in roots:
        if not root.is_dir():
            continue
        plugin = plugins.get(root.resolve())
        if plugin is not None:
            add(root / "phases.yaml", plugin, plugin)
        elif root.name in NAMES and (root.parent / "phases.yaml").is_file():
            add(root / "phases.yaml", root.name, None)  # a bundled server's folder given alone
        elif (root / "phases.yaml").is_file():
            base = root / "phases.yaml"
            for name in NAMES:
                add(root / name / "phases.yaml", name, None)
    if base is None:
        for name in NAMES:
            add(bundled_rules_dir() / name / "phases.yaml", name, None)
    return base, [(path, confined) for _, path, confined in sorted(found.values(), key=lambda f: f[0])]


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
    plugins = [] if only else list(plugin_rules())
    roots = [Path(p) for p in only] if only else [bundled_rules_dir(), *plugins]
    # a plug-in's pack given again (`check --rules` on its folder) is the one already loaded
    roots += [Path(p) for p in extra or [] if not any(f == Path(p).resolve() or f in Path(p).resolve().parents
                                                         for f in plugins)]
    verdict = verdict_rules_dir()
    if only and verdict.is_file() and not any(r.resolve() == verdict.resolve() or r.resolve() in verdict.resolve().parents
                                             for r in roots if r.exists()):
        roots.append(verdict)  # whatever the cause rules, the fatal signals decide the verdict
    phase_sources = _phase_sources([r for r in roots if r.exists()])
    files = _rule_files(roots, phase_sources)
    datas = _read_all([*files[0], *files[1]]) if files is not None else None
    kept = _cached_set(files, datas) if files is not None and datas is not None else None
    if kept is not None:
        return kept
    rs, errors = _parse_rules(roots, phase_sources)
    if errors and strict:
        raise RuleErrors(errors)
    if files is not None and datas is not None and not errors:
        _store_set(len(files[0]), datas, rs)
    return rs


def _rule_files(roots: list[Path], phase_sources: PhaseSources) -> tuple[list[Path], list[Path]] | None:
    """The phase files (the phase file, then each server's markers), and every pack file, that `_parse_rules`
    reads for `roots` (None: a root is missing, or a plug-in's markers join them: that set is read anew each
    time)."""
    if not all(root.exists() for root in roots):
        return None
    base, markers = phase_sources
    if any(server is not None for _, server in markers):
        return None
    base = base or bundled_rules_dir() / "phases.yaml"
    if not base.is_file():
        return None
    return [base, *(m for m, _ in markers)], [p for root in roots for p in pack_files(root)]


def _read_all(files: list[Path]) -> list[bytes] | None:
    """The bytes of each file, or None when one cannot be read (the parse then says why)."""
    try:
        return [p.read_bytes() for p in files]
    except OSError:
        return None


def _set_name(phase_files: int, datas: list[bytes]) -> str:
    """The entry name of a whole rule set: how many phase files, their bytes, then each pack's, in load order."""
    return cache.key("set", phase_files.to_bytes(8, "little")
                     + b"".join(len(d).to_bytes(8, "little") + d for d in datas))


def _cached_set(files: tuple[list[Path], list[Path]], datas: list[bytes]) -> RuleSet | None:
    """The rule set these phase files and packs (holding `datas`) gave before, its rules decoded when first
    used; None when it is not kept."""
    name = _set_name(len(files[0]), datas)
    entry = cache.load_set(name)
    if entry is None:
        return None
    phases, owners, ids, rules, tables, always = entry
    packs, kept = files[1], datas[len(files[0]):]
    sources = [display(p) for p in packs]
    if any(type(i) is not int or not 0 <= i < len(sources) for i in owners):
        return None

    def reread(i: int) -> CompiledRule:
        """A kept rule that cannot be decoded: the entry is dropped (the next start keeps a new one), the rule read
        from its pack as it was loaded."""
        cache.drop_set(name)
        return _rule_from_pack(packs[owners[i]], sources[owners[i]], ids[i], kept[owners[i]])

    rs = RuleSet(cache.LazyRules(rules, ids, [sources[i] for i in owners], reread), phases, sources)
    rs.index = LiteralIndex((), always, tables=tables)
    return rs


def _rule_from_pack(path: Path, shown: str, rule_id: str, loaded: bytes) -> CompiledRule:
    """Rule `rule_id` of the pack at `path`, which held `loaded` when the rule set was loaded."""
    try:
        now = path.read_bytes()
    except OSError:
        now = None
    if now != loaded:  # the rule set's other rules, and its literal index, are the pack's as it was
        raise RuleErrors([RuleError(shown, None, "the pack changed since the rules were loaded: load them again")])
    rules, errors = _cached_pack(path, shown)
    found = next((r for r in rules if r.id == rule_id), None)
    if found is None or errors:
        raise RuleErrors(errors or [RuleError(shown, None, f"rule {rule_id!r} is no longer in this pack")])
    return found


def _store_set(phase_files: int, datas: list[bytes], rs: RuleSet) -> None:
    """Keep a rule set read without a problem, under its files' bytes."""
    owner = {shown: i for i, shown in enumerate(rs.sources)}
    if any(r.spec.path not in owner for r in rs.rules):
        return
    cs, ci = rs.index.tables
    cache.store_set(_set_name(phase_files, datas), rs.phases, [owner[r.spec.path] for r in rs.rules],
                    [_placed(r, "") for r in rs.rules], (cs, ci), rs.index.always)


def _parse_rules(roots: list[Path], phase_sources: PhaseSources) -> tuple[RuleSet, list[RuleError]]:
    errors: list[RuleError] = []
    rules: list[CompiledRule] = []
    seen: dict[str, str] = {}
    sources = []
    for root in roots:
        if not root.exists():
            errors.append(RuleError(str(root), None, "no such rule file or directory"))
            continue
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
    base, markers = phase_sources
    base = base or bundled_rules_dir() / "phases.yaml"
    phases: list[PhaseSpec] = []
    for path, server in [(base, None)] * base.is_file() + markers:
        try:
            phases += [p if p.server or server is None else p.replace(server=server)
                       for p in _cached_phases(path, display(path))]
        except RuleErrors as e:
            errors.extend(e.errors)
    errors.extend(unknown_phases(rules, phase_names(phases)))
    return RuleSet(rules, phases, sources), errors
