"""Differential debugging: what did the bad startup do that the good one never did?

Both logs go through the same Pipeline as `analyze` (normalization, framing, rules, phases,
facts), read by the block scanner; a `RunTemplates` watcher masks the messages and mines
them into line templates (`logsense.run_templates`: it has the scanner feed the first line
of each shape and counts the rest). Each line of the bad run is matched against the good
run's templates; the ones that fit none are the bad run's own, and are mined again among
themselves so eight ranks printing the same traceback count as one template, eight times.
The good run's own templates are the ones whose first line fits nothing in the bad run.

From that, `diff_logs()` says where the runs part ways (the first phase, in startup order,
where a template or a phase is in one run and not the other, with the first such line of
each), the first error only the bad run printed, the code paths (traceback frames) only
the bad run went through, the facts and flags that differ, the phase durations side by
side and each run's root diagnosis.

A log with several starts (a restart loop) is compared by its last start, as `analyze`
reports it. Memory is bounded by the miners' caps, not by the length of the logs. Two big
files on a machine with two cores are read at the same time: the good one in a forked child
process, the bad one here, which tests its lines against the good run's templates once the
child hands them over (`RunTemplates` keeps them meanwhile), so the report is the same.
`LOGSENSE_SCAN=off` feeds every line (the reference the scanner-fed diff is tested against).
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from logsense.analysis import read_into
from logsense.model import Report, Role
from logsense.pipeline import Pipeline
from logsense.rules import RuleSet
from logsense.rules.loader import REQUEST_FIELD
from logsense.run_templates import Observing, RunTemplates, TemplateLine, Templates
from logsense.scan import may_fork
from logsense.servers import SERVERS
from logsense.templates import TemplateMiner

SCHEMA_VERSION = 1
MAX_ITEMS = 500  # lines listed per side in the JSON (the counts are always complete)

# Facts compared first and in this order; then every other fact, then the flags.
SETUP_FACTS = (*(f"{s.name}_version" for s in SERVERS), "torch_version", "cuda_version", "driver_version", "python_version", "gpu_name",
               "gpu_count", "model_path", "model_arch", "model_is_multimodal")
# chosen anew at every start / a copy of python_version / read from model_path
NOISY_FACTS = {"arg_random_seed", "python_minor", "model_is_local"}
PARALLEL_BYTES = 4 << 20  # both logs at least this big: the good one is read in a child process meanwhile


@dataclass
class Run:
    """One startup as the diff sees it."""

    report: Report
    templates: Templates  # every line template of its (last) start, each with its first line and count
    restarts: int
    observer: RunTemplates | None = None  # the watcher that read it; None when read in a child process

    @property
    def source(self) -> str:
        return self.report.source


def read_run(path: str, rules: RuleSet, reference: TemplateMiner | Callable[[], TemplateMiner] | None = None) -> Run:
    """Stream one recorded log ('-' is stdin, /dev/fd/N and .gz work) through a pipeline with a template watcher.

    `reference`: the good run's templates (or a function that waits for them), to tell the new lines by.
    """
    p = Pipeline(rules, Observing(reference))
    obs = p.watcher
    assert isinstance(obs, RunTemplates)
    report, _ = read_into(p, path)
    obs.settle()
    return Run(report, obs.all, p.timeline.restarts, obs)


@dataclass
class Divergence:
    phase: str
    bad: TemplateLine | None  # the first line of this phase only the bad run has
    good: TemplateLine | None  # the first line of this phase only the good run has
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
    ready: bool = False  # the ready phase: it lasts as long as the server, so it has no duration

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "good_seconds": self.good, "bad_seconds": self.bad, "in_good": self.in_good,
                "in_bad": self.in_bad}


@dataclass
class DiffResult:
    good: Run
    bad: Run
    bad_only: list[TemplateLine]
    good_only: list[TemplateLine]
    divergence: Divergence | None
    first_error: TemplateLine | None
    first_error_chain: list[TemplateLine]  # the other exceptions of its traceback chain (its causes)
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
            "restarts": run.restarts, "templates": len(run.templates.miner),
            "root": root.to_json() if root else None}


def diff_logs(good_path: str, bad_path: str, rules: RuleSet, parallel: bool | None = None) -> DiffResult:
    """Read both logs (each once, streaming) and compare them.

    `parallel`: read the good log in a child process while this one reads the bad log (None:
    when both are files of PARALLEL_BYTES or more and two cores are there to run them).
    """
    if parallel is None:
        parallel = _worth_a_child(good_path, bad_path)
    if not parallel:
        good = read_run(good_path, rules)
        bad = read_run(bad_path, rules, reference=good.templates.miner)
        return compare_runs(good, bad, benign_patterns(rules))
    with _GoodRun(good_path, rules) as child:
        try:
            bad = read_run(bad_path, rules, reference=lambda: child.run().templates.miner)
        except Exception:
            child.run()  # the good log's error first, as when it is read first
            raise
        return compare_runs(child.run(), bad, benign_patterns(rules))


def _worth_a_child(*paths: str) -> bool:
    """A fork may be made here (`scan.may_fork`), and two files big enough that reading them side by side pays for it."""
    if not may_fork():
        return False
    try:
        return all(os.path.isfile(p) and os.path.getsize(p) >= PARALLEL_BYTES for p in paths)
    except OSError:
        return False


class _GoodRun:
    """The good log read in a forked child process; `run()` waits for it (or reads it here if the child failed)."""

    def __init__(self, path: str, rules: RuleSet) -> None:
        self.path, self.rules = path, rules
        self._run: Run | None = None
        read, write = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the child: read, hand over what the comparison needs, and leave without cleanup
            code = 1
            try:
                os.close(read)
                run = read_run(path, rules)
                with os.fdopen(write, "wb") as out:
                    pickle.dump((run.report, run.templates, run.restarts), out, protocol=pickle.HIGHEST_PROTOCOL)
                code = 0
            finally:
                os._exit(code)  # (any error is raised again when the parent reads the log itself)
        os.close(write)
        self._fd = read

    def run(self) -> Run:
        if self._run is None:
            if self._pid:
                with os.fdopen(self._fd, "rb") as fh:
                    data = fh.read()
                self._fd = -1
                _, status = os.waitpid(self._pid, 0)
                self._pid = 0
                if status == 0 and data:
                    self._run = Run(*pickle.loads(data))  # our own child's data
                    return self._run
            self._run = read_run(self.path, self.rules)  # the child failed: what it raised is raised here
        return self._run

    def __enter__(self) -> _GoodRun:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pid:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
        if self._fd >= 0:
            os.close(self._fd)


def benign_patterns(rules: RuleSet) -> list:
    """Lines the fatal rules name as no failure (their `not:`), e.g. "Ignore import error when loading ...":
    an error-looking line of that kind is not an error the bad run printed."""
    return [p for r in rules.rules if r.spec.role is Role.FATAL for p in r.not_
            if not p.spec.field.startswith(REQUEST_FIELD)]


def _mark_benign(lines: list[TemplateLine], benign: list) -> None:
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
    assert bad.observer is not None  # (the bad run is read here)
    bad_only = bad.observer.new.items()
    _mark_benign(bad_only, benign or [])
    bad_templates = bad.templates.miner
    good_only = [x for x in good.templates.items() if bad_templates.match_masked(x.masked) is None]
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


def first_error(lines: list[TemplateLine], handled: set[int] | frozenset = frozenset()) -> tuple[TemplateLine | None, list[TemplateLine]]:
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


def code_paths(lines: list[TemplateLine]) -> list[list[str]]:
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
    return [list(p) for p in dict.fromkeys(tuple(p) for p in out)]  # each path once, in order


def _divergence(good: Report, bad: Report, bad_only: list[TemplateLine], good_only: list[TemplateLine],
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
                                 b[name].seconds if name in b else None, name in g, name in b,
                                 ready=(g.get(name) or b[name]).ready))
    return rows
