"""Prove the knowledge holds: incidents diagnosed as labelled, rules valid with passing examples.

`check(paths, rules, corpus, only_rules)` returns a `Result` holding `Problem`s, each
`path:line: message`; `logsense check`, the pre-commit hooks and the tests all use it.

What is checked:

- each incident log against its label file (`X.log` / `X.log.gz` beside `X.label.yaml`,
  read by logsense.corpus), analyzed as `analyze` does by default (rules and classifier):
  the verdict, the principal root cause, the fix it must suggest (`fix_any`) and, with
  `check_phase: true`, the phase;
- each rule file: schema (the loader's file:line errors), every example, at least two
  examples of each kind;
- across the pack: no root rule of a checked file fires on a healthy log of the corpus
  (false alarms), and no match example of a checked root rule is also claimed by a root
  rule of another cause with the same or a higher priority (conflicts).

`logsense rules test` runs the same rule checks (`check_rule_examples`, `check_phase_examples`)
and `rules lint` runs `lint` (which `check` leaves out: a pattern the prefilter cannot narrow
is slow, not wrong): one place says what a sound rule is.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logsense.corpus import (
    LABEL_SUFFIX,
    CorpusEntry,
    Label,
    compare,
    corpus_entries,
    is_corpus_dir,
    is_label,
    label_for,
    logs_for,
)
from logsense.errors import ExitCode, RuleError, RuleErrors, SourceError
from logsense.examples import (
    ExampleResult,
    all_matches,
    example_lines,
    first_phase,
    run_examples,
    run_phase_examples,
)
from logsense.model import HEALTHY, UNKNOWN, Report, Role
from logsense.paths import display
from logsense.rules import RuleSet, bundled_rules_dir, load_rules, pack_files
from logsense.rules.compile import CompiledRule
from logsense.rules.phases import PhaseSpec

PHASE_FILE = "phases.yaml"
MIN_EXAMPLES = 2
_READ_ERRORS = (EOFError, OSError, zlib.error, gzip.BadGzipFile)


@dataclass(frozen=True)
class Problem:
    """One thing that does not hold, where it is: rendered `path:line: message`."""

    path: str
    line: int | None
    message: str
    kind: str = "problem"  # incident | label | rule | example | false-alarm | conflict | lint | unreadable
    rule: str | None = None  # the rule at fault, when there is one

    def render(self) -> str:
        return f"{self.path}:{self.line or 1}: {self.message}"


@dataclass
class Plan:
    """What the given paths ask to check."""

    incidents: list[CorpusEntry] = field(default_factory=list)
    rule_files: list[Path] = field(default_factory=list)  # rule packs whose rules are checked
    phase_files: list[Path] = field(default_factory=list)
    rule_roots: list[Path] = field(default_factory=list)  # dirs / files to load beside the bundled packs
    problems: list[Problem] = field(default_factory=list)


# a rule named as a root cause must be right this often on the labelled incidents
PRECISION_BAR = 0.95


@dataclass
class RuleRecord:
    """How a rule did on the labelled incidents: root diagnoses it gave, and how many named the labelled cause."""

    fired: int = 0
    right: int = 0

    @property
    def precision(self) -> float:
        return self.right / self.fired if self.fired else 1.0


@dataclass
class Result:
    problems: list[Problem]
    incidents: int
    rules: int
    record: dict[str, RuleRecord] = field(default_factory=dict)  # rule id -> its record on the incidents

    @property
    def unreadable(self) -> bool:
        return any(p.kind == "unreadable" for p in self.problems)

    @property
    def exit_code(self) -> int:
        if self.unreadable:
            return ExitCode.BAD_INPUT
        return ExitCode.FAILURE if self.problems else ExitCode.OK

    def summary(self) -> str:
        return (f"{_n(self.incidents, 'incident')}, {_n(self.rules, 'rule')} checked: "
                f"{_n(len(self.problems), 'problem')}")

    def precision_table(self) -> list[str]:
        """One line a rule that gave a root diagnosis: how often, how often right; least precise first."""
        rows = sorted(self.record.items(), key=lambda kv: (kv[1].precision, -kv[1].fired, kv[0]))
        out = [f"{'rule':<48} {'fired':>5} {'right':>5} {'precision':>9}"]
        out += [f"{rid:<48} {r.fired:>5} {r.right:>5} {r.precision:>9.2f}" for rid, r in rows]
        under = sum(1 for r in self.record.values() if r.precision < PRECISION_BAR)
        out.append(f"{_n(len(rows), 'rule')} fired on the incidents; {under} under {PRECISION_BAR:.2f} precision")
        return out



def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------- what the paths are


def read_label(path: Path) -> tuple[Label | None, list[Problem]]:
    """Parse and validate a label file (see logsense.corpus); problems carry the line of the field at fault."""
    from logsense.corpus import read_label as parse

    shown = display(path)
    label, problems = parse(path, shown)
    return label, [Problem(shown, p.line, p.message, "unreadable" if p.unreadable else "label") for p in problems]


def is_rule_yaml(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml") and not is_label(path)


def plan(paths: Iterable[str] = (), rules: Iterable[str] = (), corpus: Iterable[str] = ()) -> Plan:
    """Sort the given paths into incidents and rule files.

    A dir holding label files or logs is a corpus, a dir of YAML is a rule pack; a `.yaml`
    file is a rule pack (`phases.yaml` the phase file), a `X.label.yaml` a label (its log is
    checked with it), anything else an incident log (checked with its label). `rules` are
    always rule packs, `corpus` always corpora.
    """
    pl = Plan()
    incidents: dict[tuple[str, str], CorpusEntry] = {}

    def add_incident(inc: CorpusEntry) -> None:
        key = (str(inc.log.resolve()) if inc.log else "", str(inc.label.resolve()) if inc.label else "")
        incidents.setdefault(key, inc)

    def add_rules(p: Path) -> None:
        files = [p] if p.is_file() else pack_files(p)
        if p.is_file() and p.name == PHASE_FILE:
            pl.phase_files.append(p)
            return
        if p.is_dir():  # the phase file and each server's markers file
            pl.phase_files.extend(sorted(p.rglob(PHASE_FILE)))
        pl.rule_files.extend(files)
        pl.rule_roots.append(p)

    def add_corpus(p: Path) -> None:
        for inc in corpus_entries(p):
            add_incident(inc)

    def add_file(p: Path) -> None:
        if is_label(p):
            found = logs_for(p)
            if not found:
                add_incident(CorpusEntry(None, p))
            for log in found:
                add_incident(CorpusEntry(log, p))
        elif is_rule_yaml(p):
            add_rules(p)
        else:
            lab = label_for(p)
            add_incident(CorpusEntry(p, lab if lab.is_file() else None))

    def missing(raw: str) -> bool:
        if Path(raw).exists():
            return False
        pl.problems.append(Problem(raw, None, "no such file or directory", "unreadable"))
        return True

    for raw in rules:
        if not missing(raw):
            add_rules(Path(raw))
    for raw in corpus:
        if missing(raw):
            continue
        p = Path(raw)
        if p.is_dir():
            add_corpus(p)
        else:
            add_file(p)
    for raw in paths:
        if missing(raw):
            continue
        p = Path(raw)
        if p.is_file():
            add_file(p)
        elif is_corpus_dir(p):
            add_corpus(p)
        elif pack_files(p) or (p / PHASE_FILE).is_file():
            add_rules(p)
    pl.incidents = list(incidents.values())
    pl.rule_files = _unique(pl.rule_files)
    pl.phase_files = _unique(pl.phase_files)
    return pl


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for p in paths:
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            out.append(p)
    return out


def _inside(path: Path, roots: list[Path]) -> bool:
    r = path.resolve()
    return any(r == root.resolve() or root.resolve() in r.parents for root in roots)


# ---------------------------------------------------------------- rules


def _rule_problem(e: RuleError) -> Problem:
    parts = []
    if e.rule:
        parts.append(f"rule '{e.rule}'")
    if e.field:
        parts.append(e.field)
    parts.append(e.reason)
    return Problem(e.path, e.line, ": ".join(parts), "rule", e.rule)


def load_ruleset(rule_roots: list[Path], only_rules: list[str] | None = None) -> tuple[RuleSet, list[Problem]]:
    """The rules analysis runs with: the bundled packs (or `only_rules`) plus the checked packs not among them."""
    base = [Path(p) for p in only_rules] if only_rules else [bundled_rules_dir()]
    extra = [str(p) for p in rule_roots if not _inside(p, base)]
    problems: list[Problem] = []
    try:
        return load_rules(extra, only_rules or None, strict=True), problems
    except RuleErrors as e:
        problems.extend(_rule_problem(x) for x in e.errors)
    try:
        return load_rules(extra, only_rules or None, strict=False), problems
    except RuleErrors:  # the bundled phase file itself is broken: nothing can be analyzed
        return RuleSet([], [], []), problems


def _rules_in(rs: RuleSet, files: list[Path]) -> list[CompiledRule]:
    wanted = {p.resolve() for p in files}
    return [r for r in rs.rules if Path(r.spec.path).resolve() in wanted]


def check_rule_examples(rs: RuleSet, rules: list[CompiledRule],
                        results: list[ExampleResult] | None = None) -> list[Problem]:
    """Every example of the given rules passes (`results`: already run), and each rule has enough of them."""
    ids = {r.id for r in rules}
    if not ids:
        return []
    if results is None:
        results = run_examples(rs) if len(ids) > 1 else run_examples(rs, next(iter(ids)))
    out = [Problem(r.path, r.line, f"rule '{r.rule}': examples.{r.label}: {r.message}", "example", r.rule)
           for r in results if r.rule in ids and not r.ok]
    for rule in rules:
        for kind in ("match", "no_match"):
            n = sum(1 for e in rule.spec.examples if e.kind == kind)
            if n < MIN_EXAMPLES:
                out.append(Problem(rule.spec.path, rule.spec.line, f"rule '{rule.id}': examples.{kind}: has {n} "
                                   f"{kind} example(s); at least {MIN_EXAMPLES} are required", "example", rule.id))
    return out


def check_phase_examples(phases: list[PhaseSpec], shown: str) -> list[Problem]:
    """Each example of a phase file (`shown` as the user names it) hits a marker of its phase."""
    return [Problem(shown, r.line, f"{r.rule}: examples[{r.index}]: {r.message}", "example")
            for r in run_phase_examples(phases, shown) if not r.ok]


def check_phase_files(files: list[Path]) -> list[Problem]:
    """A phase file loads, and each of its examples hits a marker of its phase."""
    from logsense.rules.phases import load_phases

    out: list[Problem] = []
    for f in files:
        shown = display(f)
        try:
            phases = load_phases(f, shown)
        except RuleErrors as e:
            out.extend(_rule_problem(x) for x in e.errors)
            continue
        except RuleError as e:
            out.append(_rule_problem(e))
            continue
        out += check_phase_examples(phases, shown)
    return out


def check_conflicts(rs: RuleSet, rules: list[CompiledRule]) -> list[Problem]:
    """A match example of a root rule that a root rule of another cause, priority >= its own, also fires on."""
    out = []
    for rule in rules:
        spec = rule.spec
        if spec.role is not Role.ROOT:
            continue
        phase = first_phase(rs, spec)
        for ex in spec.examples:
            if ex.kind != "match":
                continue
            matches, _ = all_matches(rs, example_lines(ex.log), phase)
            seen = set()
            for m in matches:
                other = rs.get(m.rule_id)
                if (other is None or m.rule_id == rule.id or m.rule_id in seen or m.role is not Role.ROOT
                        or m.cause == spec.cause or m.priority < spec.priority):
                    continue
                seen.add(m.rule_id)
                out.append(Problem(spec.path, ex.line,
                                   f"rule '{rule.id}': examples.{ex.label} is also claimed by rule "
                                   f"'{m.rule_id}' ({m.cause}, priority {m.priority} >= {spec.priority}) at "
                                   f"{other.spec.path}:{other.spec.line}", "conflict"))
    return out


def check_false_alarms(rs: RuleSet, rules: list[CompiledRule], healthy_logs: list[Path]) -> list[Problem]:
    """No root rule among `rules` fires in a healthy startup log, but before a ready line it survived."""
    from logsense.sources.recorded import open_recorded, read_lines

    ids = {r.id for r in rules if r.spec.role is Role.ROOT}
    if not ids:
        return []
    out = []
    for log in healthy_logs:
        try:
            fp, name = open_recorded(str(log))
            try:
                matches, report = all_matches(rs, read_lines(fp, name))
            finally:
                fp.close()
        except (SourceError, *_READ_ERRORS):
            continue  # the incident check reports it
        # a line the server went on past to become ready did not stop it (the verdict agrees)
        ready_at = next((ph.start_line for ph in report.phases if ph.ready), 0)
        seen = set()
        for m in matches:
            if m.rule_id not in ids or m.role is not Role.ROOT or m.rule_id in seen or m.event.last_line < ready_at:
                continue
            seen.add(m.rule_id)
            spec = rs.get(m.rule_id).spec  # type: ignore[union-attr]
            line = m.evidence[0].line if m.evidence else m.event.first_line
            out.append(Problem(spec.path, spec.line,
                               f"rule '{m.rule_id}' ({m.cause}) fires on a healthy startup: {display(log)}:{line}",
                               "false-alarm"))
    return out


def lint(rs: RuleSet) -> list[Problem]:
    """What no single rule's validation sees: a pattern the prefilter cannot narrow, a root rule with no fix."""
    out = []
    for r in rs.rules:
        where = f"rule '{r.id}'"
        for p in r.any + r.all:
            if not p.literals:
                out.append(Problem(r.spec.path, r.spec.line, f"{where}: {p.spec.field}: the prefilter cannot narrow "
                                   "this pattern (no literal of 3+ characters every match must contain); it runs "
                                   "on every line", "lint", r.id))
        if r.spec.role is Role.ROOT and not r.spec.fixes and r.spec.cause != UNKNOWN:
            out.append(Problem(r.spec.path, r.spec.line, f"{where}: a root rule with no fix", "lint", r.id))
    return out + _lint_not_patterns(rs)


PASTED = 3  # a `not:` pattern in this many rules of one pack belongs in the pack's `defaults:`


def _lint_not_patterns(rs: RuleSet) -> list[Problem]:
    """`not:` patterns pasted into rule after rule instead of written once in the pack's `defaults:`."""
    out = []
    pasted: dict[tuple[str, str], list[CompiledRule]] = {}
    for r in rs.rules:
        defaults = {p.spec.text for p in r.not_ if p.spec.field.startswith("defaults.")}
        for p in r.not_:
            if p.spec.field.startswith("defaults."):
                continue
            if p.spec.text in defaults:
                out.append(Problem(r.spec.path, p.spec.line, f"rule '{r.id}': {p.spec.field}: already in the pack's "
                                   "defaults.not; remove it here", "lint", r.id))
            else:
                pasted.setdefault((r.spec.path, p.spec.text), []).append(r)
    for (path, text), rules in pasted.items():
        if len(rules) >= PASTED:
            first = rules[0]
            out.append(Problem(path, first.spec.line, f"rule '{first.id}': match.not pattern {text!r} is pasted into "
                               f"{len(rules)} rules of this pack: write it once in the pack's `defaults: not:`",
                               "lint", first.id))
    return out


# ---------------------------------------------------------------- incidents


@dataclass(frozen=True)
class Checked:
    """One incident checked: what does not hold, its label (when valid) and analyze's report (when read)."""

    problems: list[Problem]
    label: Label | None = None
    report: Report | None = None


def check_incident(inc: CorpusEntry, rs: RuleSet) -> Checked:
    """One incident: its label is valid and the log is still diagnosed as labelled, by analyze's own decision."""
    from logsense.analysis import analyze_path

    if inc.log is None:
        assert inc.label is not None
        base = display(inc.label)[: -len(LABEL_SUFFIX)]
        return Checked([Problem(display(inc.label), 1, f"no log beside the label (expected {base}.log or "
                                f"{base}.log.gz)", "incident")])
    shown = display(inc.log)
    if inc.label is None:
        return Checked([Problem(shown, 1, f"no label: run `logsense label {shown} --cause X`", "incident")])
    label, problems = read_label(inc.label)
    if label is None:
        return Checked(problems)
    try:
        report, slow = analyze_path(str(inc.log), rs)
    except SourceError as e:
        return Checked([Problem(shown, None, str(e).removeprefix(f"{inc.log}: "), "unreadable")], label)
    except _READ_ERRORS as e:  # a corrupt gzip stream can fail before the reader's own checks
        return Checked([Problem(shown, None, f"cannot read: {e}", "unreadable")], label)
    problems = [Problem(shown, rp.line, f"rule '{rp.rule}': {rp.reason}", "rule", rp.rule) for rp in slow]
    problems += [Problem(shown, line, f"{msg} ({display(inc.label)})", "incident") for line, msg in compare(label, report)]
    return Checked(problems, label, report)


# ---------------------------------------------------------------- all of it


def check(
    paths: Iterable[str] = (),
    rules: Iterable[str] = (),
    corpus: Iterable[str] = (),
    only_rules: list[str] | None = None,
) -> Result:
    """Check what the paths name (see `plan`); the problems come sorted by path and line."""
    pl = plan(paths, rules, corpus)
    problems = list(pl.problems)
    rs, load_problems = load_ruleset(pl.rule_roots, only_rules)
    problems += load_problems
    healthy: list[Path] = []
    from logsense.progress import Progress

    record: dict[str, RuleRecord] = {}
    with Progress("checking", len(pl.incidents)) as progress:
        for inc in pl.incidents:
            checked = check_incident(inc, rs)
            problems += checked.problems
            label = checked.label
            if label is not None and checked.report is not None:
                _count_roots(record, checked.report, label.cause)
            if label is not None and label.cause == HEALTHY and inc.log is not None:
                healthy.append(inc.log)
            progress.step(str(inc.log or inc.label or ""))
    in_files = _rules_in(rs, pl.rule_files)
    # a rule with schema errors is reported once, not again through its examples
    broken = {(Path(p.path).resolve(), p.rule) for p in load_problems if p.rule}
    sound = [r for r in in_files if (Path(r.spec.path).resolve(), r.id) not in broken]
    problems += check_rule_examples(rs, sound)
    problems += check_phase_files(pl.phase_files)
    problems += check_false_alarms(rs, sound, healthy)
    problems += check_conflicts(rs, sound)
    problems = _dedupe(problems)
    problems.sort(key=lambda p: (p.path, p.line or 0))
    return Result(problems, len(pl.incidents), len(in_files), record)


def _count_roots(record: dict[str, RuleRecord], report: Report, cause: str) -> None:
    """Each rule that gave a root diagnosis of the report: fired, and right when it names the labelled cause."""
    for d in report.diagnoses:
        if d.root and d.rule:
            r = record.setdefault(d.rule, RuleRecord())
            r.fired += 1
            r.right += d.cause == cause


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for p in problems:
        key = (p.path, p.line, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
