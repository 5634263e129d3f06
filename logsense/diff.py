"""Differential debugging: what did the bad startup do that the good one never did?

Both logs go through the same Pipeline as `analyze` (normalization, framing, rules, phases,
facts); an observer on the pipeline masks every message and mines it into line templates
(`logsense.templates`). Each line of the bad run is matched against the good run's
templates; the ones that fit none are the bad run's own, and are mined again among
themselves so eight ranks printing the same traceback count as one template, eight times.
The good run's own templates are the ones whose first line fits nothing in the bad run.

From that, `compare()` says where the runs part ways (the first phase, in startup order,
where a template or a phase is in one run and not the other, with the first such line of
each), the first error only the bad run printed, the code paths (traceback frames) only
the bad run went through, the facts and flags that differ, the phase durations side by
side and each run's root diagnosis.

The same matching against healthy logs gives `Baseline`: when no rule knows why a startup
failed, the lines of the log whose templates never occur in the healthy baselines are the
evidence (`logsense analyze --baseline DIR`).

A log with several starts (a restart loop) is compared by its last start, as `analyze`
reports it. Memory is bounded by the miners' caps, not by the length of the logs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from logsense.model import Diagnosis, Event, Evidence, Origin, Record, Report
from logsense.normalize import Normalizer
from logsense.pipeline import Fallback, Pipeline, Reading, Watcher
from logsense.rules import RuleSet
from logsense.sources.recorded import open_recorded, read_lines
from logsense.templates import TemplateMiner, mask
from logsense.timeline import Timeline

SCHEMA_VERSION = 1
MAX_TEXT = 500  # characters of a line kept as evidence
MAX_ITEMS = 500  # lines listed per side in the JSON (the counts are always complete)
NOVEL_EVIDENCE = 6
# evidence order for novel lines: exception lines, other errors, traceback heads, warnings, frames, the rest
_EVIDENCE_RANK = {"exception": 0, "error": 1, "traceback": 2, "warning": 3, "frame": 4}
_BARE_TRACEBACK = "Traceback (most recent call last):"
ERRORISH = ("exception", "error", "traceback")

# The server_args dump is compared flag by flag in the facts, not as one huge template.
_SKIP_PREFIXES = ("server_args=", "ServerArgs(", "Namespace(")
_FRAME = re.compile(r'\s*File "(?P<path>[^"]+)", line \d+, in (?P<func>\S+)')
_EXCEPTION = re.compile(
    r"\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout|Abort)\b:?(?:\s|$)"
)
_ERROR = re.compile(
    r"\b(?:ERROR|CRITICAL|FATAL|[Ee]rror|[Ff]ailed|FAILED|[Ff]ailure|[Ff]atal|[Ee]xception|[Kk]illed|"
    r"Abort(?:ed)?|[Ss]egmentation fault|core dumped|sigquit|SIGQUIT|is dead|[Tt]imed out)\b"
)
_WARNING = re.compile(r"\b(?:WARNING|WARN|[Ww]arning|[Dd]eprecated|[Dd]eprecation)\b|Warning:")
_TRACEBACK = "Traceback (most recent call last)"
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception"
_CHAIN_HANDLING = "During handling of the above exception, another exception occurred"

# Facts compared first and in this order; then every other fact, then the flags.
SETUP_FACTS = ("sglang_version", "torch_version", "cuda_version", "driver_version", "python_version", "gpu_name",
               "gpu_count", "model_path", "model_arch", "model_is_multimodal")
NOISY_FACTS = {"arg_random_seed", "python_minor"}  # chosen anew at every start / a copy of python_version


@dataclass
class Line:
    """The first line of a template in one run, and how often the template came back."""

    line: int
    text: str
    phase: str
    kind: str  # exception | error | traceback | warning | frame | source | chain | benign | line
    template: str
    masked: str
    chain: int | None = None  # the traceback chain this line is part of (see Kinds)
    count: int = 1
    ranks: set[str] = field(default_factory=set)

    @property
    def errorish(self) -> bool:
        return self.kind in ERRORISH

    @property
    def frame(self) -> str | None:
        """`vision.py:forward` for a traceback frame, else None."""
        if self.kind != "frame":
            return None
        m = _FRAME.match(self.text)
        return f"{m['path'].rsplit('/', 1)[-1]}:{m['func']}" if m else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line, "phase": self.phase, "kind": self.kind, "count": self.count,
                               "text": self.text, "template": self.template}
        if self.ranks:
            out["ranks"] = sorted(self.ranks, key=_rank_key)
        return out


def _rank_key(r: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", r))


class Kinds:
    """Says what a record is (a frame, an exception line, an error, a warning ...), per stream.

    It also follows Python tracebacks: the tracebacks of one chain ("The above exception was
    the direct cause of ...") share a `chain` id, so the exception a chain ends with can be
    told from its causes.
    """

    def __init__(self) -> None:
        self._in_frames: dict[str | None, bool] = {}
        self._chain: dict[str | None, int | None] = {}
        self._linked: dict[str | None, bool] = {}
        self._next = 0
        self.chain: int | None = None  # the chain of the record just classified
        self.handled: set[int] = set()  # chains linked by "During handling of the above exception"

    def __call__(self, rec: Record) -> str:
        msg = rec.message
        pid = rec.pid
        s = msg.lstrip()
        self.chain = self._chain.get(pid)
        if s.startswith('File "') and _FRAME.match(s):
            self._in_frames[pid] = True
            return "frame"
        if self._in_frames.get(pid):
            if msg[:1] in (" ", "\t") or not s.strip("^~ "):
                return "source"  # the code line under a frame, or its ^^^^ marker
            self._in_frames[pid] = False
        if not s:
            return "line"
        if _TRACEBACK in msg:
            if not self._linked.get(pid) or self.chain is None:
                self._next += 1
                self.chain = self._chain[pid] = self._next
            self._linked[pid] = False
            return "traceback"
        if self.chain is not None:
            if s.startswith(_CHAIN_CAUSE) or s.startswith(_CHAIN_HANDLING):
                self._linked[pid] = True
                if s.startswith(_CHAIN_HANDLING):
                    self.handled.add(self.chain)
                return "chain"
            if _EXCEPTION.match(s):
                return "exception"
            self.chain = self._chain[pid] = None
        if _EXCEPTION.match(s):
            return "exception"
        if _ERROR.search(msg):
            return "error"
        if _WARNING.search(msg):
            return "warning"
        return "line"


def _skip(msg: str) -> bool:
    s = msg.strip()
    return not s or s.startswith(_SKIP_PREFIXES)


class _Templates:
    """Templates of one stream of records, each with its first line (bounded by the miner's cap)."""

    def __init__(self, **miner_options) -> None:
        self.miner = TemplateMiner(**miner_options)
        self.first: dict[int, Line] = {}
        self.lines = 0

    def add(self, rec: Record, masked: str, phase: str, kind: str, chain: int | None) -> Line:
        c = self.miner.add_masked(masked)
        self.lines += 1
        info = self.first.get(c.id)
        if info is None:
            info = self.first[c.id] = Line(rec.line, rec.message.strip()[:MAX_TEXT], phase, kind, "", masked, chain)
            if len(self.first) > 2 * self.miner.max_clusters:
                self.first = {k: v for k, v in self.first.items() if self.miner.get(k) is not None}
        else:
            info.count += 1
        if rec.rank:
            info.ranks.add(rec.rank)
        return info

    def items(self) -> list[Line]:
        out = []
        for cid, info in self.first.items():
            c = self.miner.get(cid)
            if c is not None:
                info.template = c.template
                out.append(info)
        out.sort(key=lambda x: x.line)
        return out


class RunObserver:
    """A pipeline watcher: mines every record of one run; with a reference, keeps what is new to it."""

    def __init__(self, timeline: Timeline, reference: TemplateMiner | None = None, keep_all: bool = True) -> None:
        self.timeline = timeline
        self.reference = reference
        self.keep_all = keep_all  # False: only the lines new to the reference are mined (--baseline)
        self.kinds = Kinds()
        self.restarts = timeline.restarts
        self._reset()

    def _reset(self) -> None:
        self.all = _Templates()
        self.new = _Templates(max_clusters=5_000)

    def event(self, event: Event) -> None:
        pass

    def revise(self, diagnoses: list[Diagnosis], facts: dict[str, Any]) -> list[Diagnosis]:
        return diagnoses

    def record(self, rec: Record, phase: str) -> None:
        if self.timeline.restarts != self.restarts:
            self.restarts = self.timeline.restarts
            self._reset()  # a new start: compare the last one, as the report does
        kind = self.kinds(rec)
        msg = rec.message
        if _skip(msg):
            return
        masked = mask(msg)
        chain = self.kinds.chain
        if self.keep_all:
            self.all.add(rec, masked, phase, kind, chain)
        if self.reference is not None and self.reference.match_masked(masked) is None:
            self.new.add(rec, masked, phase, kind, chain)


class Observing:
    """The fallback that only watches: a `RunObserver` mines every line of the run."""

    reading = Reading(every_line=True)

    def __init__(self, reference: TemplateMiner | None = None, keep_all: bool = True) -> None:
        self.reference = reference
        self.keep_all = keep_all

    def watch(self, timeline: Timeline) -> RunObserver:
        return RunObserver(timeline, self.reference, self.keep_all)


@dataclass
class Run:
    """One startup as the diff sees it."""

    report: Report
    observer: RunObserver
    restarts: int

    @property
    def source(self) -> str:
        return self.report.source


def read_run(path: str, rules: RuleSet, reference: TemplateMiner | None = None) -> Run:
    """Stream one recorded log ('-' is stdin, /dev/fd/N and .gz work) through a pipeline with an observer."""
    fp, name = open_recorded(path)
    try:
        p = Pipeline(rules, Observing(reference))
        obs = p.watcher
        assert isinstance(obs, RunObserver)
        for line_no, text in read_lines(fp, name):
            p.feed_line(line_no, text)
        report = p.finish(name)
    finally:
        if fp is not sys.stdin.buffer:
            fp.close()
    return Run(report, obs, p.timeline.restarts)


# -- the comparison ----------------------------------------------------------------------
@dataclass
class Divergence:
    phase: str
    bad: Line | None  # the first line of this phase only the bad run has
    good: Line | None  # the first line of this phase only the good run has
    entered_by: str | None = None  # "good" / "bad" when only one run entered the phase

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "bad": self.bad.to_json() if self.bad else None,
                "good": self.good.to_json() if self.good else None, "entered_by": self.entered_by}


@dataclass
class FactDiff:
    name: str
    good: Any
    bad: Any
    only_in: str | None = None  # "good" / "bad" when the other run does not say

    @property
    def label(self) -> str:
        return "--" + self.name[4:].replace("_", "-") if self.name.startswith("arg_") else self.name

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "good": self.good, "bad": self.bad}
        if self.only_in:
            out["only_in"] = self.only_in
        return out


@dataclass
class PhaseRow:
    name: str
    good: float | None
    bad: float | None
    in_good: bool
    in_bad: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "good_seconds": self.good, "bad_seconds": self.bad, "in_good": self.in_good,
                "in_bad": self.in_bad}


@dataclass
class DiffResult:
    good: Run
    bad: Run
    bad_only: list[Line]
    good_only: list[Line]
    divergence: Divergence | None
    first_error: Line | None
    first_error_chain: list[Line]  # the other exceptions of its traceback chain (its causes)
    code_paths: list[list[str]]
    facts: list[FactDiff]
    phases: list[PhaseRow]

    @property
    def matters(self) -> bool:
        """The bad run failed, or printed errors the good run never did (the exit code is 1)."""
        return self.bad.report.root is not None or any(x.errorish for x in self.bad_only)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "good": _run_json(self.good),
            "bad": _run_json(self.bad),
            "differs": bool(self.bad_only or self.good_only or self.facts or self.divergence),
            "matters": self.matters,
            "divergence": self.divergence.to_json() if self.divergence else None,
            "first_bad_error": ({**self.first_error.to_json(), "chain": [x.to_json() for x in self.first_error_chain]}
                                if self.first_error else None),
            "bad_only": [x.to_json() for x in self.bad_only[:MAX_ITEMS]],
            "bad_only_count": len(self.bad_only),
            "good_only": [x.to_json() for x in self.good_only[:MAX_ITEMS]],
            "good_only_count": len(self.good_only),
            "code_paths": self.code_paths,
            "facts": [f.to_json() for f in self.facts],
            "phases": [p.to_json() for p in self.phases],
        }


def _run_json(run: Run) -> dict[str, Any]:
    r = run.report
    root = r.root
    return {"source": r.source, "status": r.status.value, "phase": r.phase, "lines": r.lines,
            "restarts": run.restarts, "templates": len(run.observer.all.miner),
            "root": root.to_json() if root else None}


def compare(good_path: str, bad_path: str, rules: RuleSet) -> DiffResult:
    """Read the good log, then the bad one (each once, streaming), and compare them."""
    good = read_run(good_path, rules)
    bad = read_run(bad_path, rules, reference=good.observer.all.miner)
    return compare_runs(good, bad, benign_patterns(rules))


def benign_patterns(rules: RuleSet) -> list:
    """Lines the fatal rules name as no failure (their `not:`), e.g. "Ignore import error when loading ...":
    an error-looking line of that kind is not an error the bad run printed."""
    return [p for r in rules.rules if r.spec.role == "fatal" for p in r.not_]


def _mark_benign(lines: list[Line], benign: list) -> None:
    from logsense.rules.compile import MATCH_TIMEOUT

    for x in lines:
        if x.errorish:
            for p in benign:
                try:
                    if p.regex.search(x.text, timeout=MATCH_TIMEOUT):
                        x.kind = "benign"
                        break
                except TimeoutError:
                    continue


def compare_runs(good: Run, bad: Run, benign: list | None = None) -> DiffResult:
    bad_only = bad.observer.new.items()
    _mark_benign(bad_only, benign or [])
    bad_templates = bad.observer.all.miner
    good_only = [x for x in good.observer.all.items() if bad_templates.match_masked(x.masked) is None]
    error, chain = first_error(bad_only, bad.observer.kinds.handled)
    order = bad.observer.timeline.order  # startup order, from the phase file
    return DiffResult(
        good=good,
        bad=bad,
        bad_only=bad_only,
        good_only=good_only,
        divergence=_divergence(good.report, bad.report, bad_only, good_only, order),
        first_error=error,
        first_error_chain=chain,
        code_paths=code_paths(bad_only),
        facts=fact_diffs(good.report.facts, bad.report.facts),
        phases=phase_rows(good.report, bad.report, order),
    )


def first_error(lines: list[Line], handled: set[int] | frozenset = frozenset()) -> tuple[Line | None, list[Line]]:
    """The first error of these lines, and the other exceptions of its traceback chain.

    The first exception line (`ImportError: ...`) wins over other error-like lines. When it
    is the cause of a later one ("The above exception was the direct cause of the following
    exception"), the chain's last exception is what the program died of, and is the error;
    its causes come with it. After "During handling of the above exception" the first one
    stays the error.
    """
    first = next((x for x in lines if x.kind == "exception"), None)
    if first is None:
        return next((x for x in lines if x.kind in ("error", "traceback")), None), []
    if first.chain is None:
        return first, []
    chain = [x for x in lines if x.kind == "exception" and x.chain == first.chain]
    top = chain[0] if first.chain in handled else chain[-1]
    return top, [x for x in chain if x is not top]


def code_paths(lines: list[Line]) -> list[list[str]]:
    """Runs of new traceback frames, in order (`["mm_utils.py:embed_mm_inputs", "vision.py:forward"]`)."""
    out: list[list[str]] = []
    cur: list[str] = []
    for x in lines:
        if x.kind == "frame":
            f = x.frame
            if f and (not cur or cur[-1] != f):
                cur.append(f)
        elif x.kind != "source" and cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    seen: set[tuple[str, ...]] = set()
    return [p for p in out if not (tuple(p) in seen or seen.add(tuple(p)))]


def _divergence(good: Report, bad: Report, bad_only: list[Line], good_only: list[Line],
                order: Iterable[str]) -> Divergence | None:
    in_good = {p.name for p in good.phases}
    in_bad = {p.name for p in bad.phases}
    for phase in order:
        b = next((x for x in bad_only if x.phase == phase), None)
        g = next((x for x in good_only if x.phase == phase), None)
        entered = None if (phase in in_good) == (phase in in_bad) else ("good" if phase in in_good else "bad")
        if b or g or entered:
            return Divergence(phase, b, g, entered)
    return None


def fact_diffs(good: dict[str, Any], bad: dict[str, Any]) -> list[FactDiff]:
    keys = set(good) | set(bad)
    keys = {k for k in keys if k not in NOISY_FACTS and not k.endswith(("_lower", "_higher"))
            and f"arg_{k}" not in keys}
    order = [k for k in SETUP_FACTS if k in keys]
    order += sorted(k for k in keys if k not in SETUP_FACTS and not k.startswith("arg_"))
    order += sorted(k for k in keys if k.startswith("arg_"))
    out = []
    for k in order:
        g, b = good.get(k), bad.get(k)
        if k in good and k in bad and g == b:
            continue
        if g is None and b is None:
            continue
        only = "good" if k not in bad else ("bad" if k not in good else None)
        out.append(FactDiff(k, g, b, only))
    return out


def phase_rows(good: Report, bad: Report, order: Iterable[str]) -> list[PhaseRow]:
    """The phases either run entered, in startup `order`."""
    g = {p.name: p for p in good.phases}
    b = {p.name: p for p in bad.phases}
    rows = []
    for name in order:
        if name in g or name in b:
            rows.append(PhaseRow(name, g[name].seconds if name in g else None,
                                 b[name].seconds if name in b else None, name in g, name in b))
    return rows


# -- novelty against healthy baselines (analyze --baseline DIR) --------------------------
_NOT_LOGS = {".yaml", ".yml", ".md", ".rst", ".py", ".ipynb", ".toml", ".cfg", ".ini", ".json5", ".csv", ".parquet"}


def baseline_files(path: str) -> list[Path]:
    """The healthy logs of a baseline dir (recursively), or the file itself; logs labelled as failures are left out."""
    from logsense.errors import SourceError

    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise SourceError(f"{path}: no such baseline dir or file")
    out = []
    for f in sorted(p.rglob("*")):
        if not f.is_file() or any(part.startswith(".") for part in f.relative_to(p).parts):
            continue
        if f.suffix.lower() in _NOT_LOGS:
            continue
        if not _labelled_healthy(f):
            continue
        out.append(f)
    if not out:
        raise SourceError(f"{path}: no log files in the baseline dir")
    return out


def _labelled_healthy(log: Path) -> bool:
    """A log with no label, or labelled healthy; an invalid label is no proof of health, so it is left out."""
    from logsense.corpus import HEALTHY, label_for, read_label

    label = label_for(log)
    if not label.is_file():
        return True
    parsed, _ = read_label(label)
    return parsed is not None and parsed.cause == HEALTHY


class Baseline:
    """The templates of healthy startups; `fallback()` turns them into analyze's --baseline check."""

    def __init__(self, miner: TemplateMiner, sources: list[str]) -> None:
        self.miner = miner
        self.sources = sources

    @classmethod
    def from_paths(cls, paths: list[Path | str], **miner_options) -> Baseline:
        miner = TemplateMiner(**{"max_clusters": 50_000, **miner_options})
        for path in paths:
            fp, name = open_recorded(str(path))
            try:
                norm = Normalizer()
                for line_no, text in read_lines(fp, name):
                    for rec in norm.feed(line_no, text):
                        if not _skip(rec.message):
                            miner.add_masked(mask(rec.message))
            finally:
                fp.close()
        return cls(miner, [str(p) for p in paths])

    @classmethod
    def from_dir(cls, path: str) -> Baseline:
        return cls.from_paths(baseline_files(path))

    def fallback(self, inner: Fallback | None = None) -> NoveltyHook:
        return NoveltyHook(self, inner)


class NoveltyHook:
    """The `--baseline` fallback: when no rule knows the cause, the lines new to the baselines are the evidence.

    Its watcher mines the lines new to the baselines as they are fed; `inner` (the classifier)
    is asked first, and the novel lines are used only when it leaves the cause unknown.
    """

    reading = Reading(every_line=True)  # a line new to the baselines can be any line

    def __init__(self, baseline: Baseline, inner: Fallback | None = None) -> None:
        self.baseline = baseline
        self.inner = inner

    def watch(self, timeline: Timeline) -> NoveltyWatch:
        observer = RunObserver(timeline, reference=self.baseline.miner, keep_all=False)
        inner = self.inner.watch(timeline) if self.inner is not None else None
        return NoveltyWatch(observer, inner, len(self.baseline.sources))


@dataclass
class NoveltyWatch:
    """One run under --baseline: the novelty observer beside the inner fallback's watcher."""

    observer: RunObserver
    inner: Watcher | None
    n_baselines: int

    def record(self, rec: Record, phase: str) -> None:
        self.observer.record(rec, phase)
        if self.inner is not None:
            self.inner.record(rec, phase)

    def event(self, event: Event) -> None:
        if self.inner is not None:
            self.inner.event(event)

    def revise(self, diagnoses: list[Diagnosis], facts: dict[str, Any]) -> list[Diagnosis]:
        if self.inner is not None:
            diagnoses = self.inner.revise(diagnoses, facts)
            if diagnoses and diagnoses[0].root and diagnoses[0].cause != "unknown":
                return diagnoses
        return novelty_diagnoses(diagnoses, self.observer.new.items(), self.n_baselines,
                                 self.observer.timeline.ready)


def novelty_diagnoses(diagnoses: list[Diagnosis], novel: list[Line], n_baselines: int, ready: bool) -> list[Diagnosis]:
    """Put the novel lines (error-like first) on the unknown diagnosis; or add them as a note."""
    shown = [x for x in novel if x.kind not in ("source", "chain")]
    ranked = sorted(shown, key=lambda x: (_EVIDENCE_RANK.get(x.kind, 5) + (x.text == _BARE_TRACEBACK), x.line))
    ranked = ranked[:NOVEL_EVIDENCE]
    evidence = tuple(Evidence(x.line, x.text) for x in ranked)
    n_lines = sum(x.count for x in novel)
    n_err = sum(x.count for x in novel if x.errorish)
    where = f"the healthy baselines ({n_baselines} log{'s' if n_baselines != 1 else ''})"
    if diagnoses and diagnoses[0].cause == "unknown":
        d = diagnoses[0]
        if not novel:
            note = f" Every line of this log also occurs in {where}."
            return [replace(d, explanation=d.explanation + note)] + list(diagnoses[1:])
        text = (f"No rule recognises why the startup failed. {n_lines} lines never seen in {where}: "
                f"{len(novel)} templates, {n_err} of the lines error-like. The first are below, errors first.")
        return [replace(d, explanation=text, evidence=evidence)] + list(diagnoses[1:])
    if diagnoses or ready or not novel:
        return diagnoses
    # nothing failed (yet): the novel lines are a note, not a diagnosis of failure
    return [Diagnosis(
        cause="unknown", rule=None, root=False, origin=Origin.RULE, confidence=0.0,
        title=f"{n_lines} lines never seen in {where}",
        explanation=f"{len(novel)} templates, {n_err} error-like lines.",
        phase=ranked[0].phase if ranked else None, evidence=evidence, fixes=(),
    )]
