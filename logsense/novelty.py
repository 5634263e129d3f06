"""Novelty against healthy startups: `logsense analyze --baseline DIR`.

The healthy logs of DIR are mined into line templates (`logsense.templates`); when no rule
knows why a startup failed, the lines of its log whose templates never occur in the
baselines are the evidence. `NoveltyHook` is the analysis pipeline's fallback for it (see
`logsense.pipeline.Fallback`); it asks the inner fallback (the classifier) first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logsense.model import HEALTHY, UNKNOWN, Diagnosis, Event, Evidence, Origin, Record
from logsense.normalize import Normalizer
from logsense.pipeline import Fallback, Reading, Watcher
from logsense.run_templates import RunTemplates, TemplateLine, skipped
from logsense.sources.recorded import open_recorded, read_lines
from logsense.templates import TemplateMiner, mask
from logsense.timeline import Timeline

NOVEL_EVIDENCE = 6
# evidence order for novel lines: exception lines, other errors, traceback heads, warnings, frames, the rest
_EVIDENCE_RANK = {"exception": 0, "error": 1, "traceback": 2, "warning": 3, "frame": 4}
_BARE_TRACEBACK = "Traceback (most recent call last):"
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
    from logsense.corpus import label_for, read_label

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
    def from_paths(cls, paths: Sequence[Path | str], **miner_options) -> Baseline:
        miner = TemplateMiner(**{"max_clusters": 50_000, **miner_options})
        for path in paths:
            fp, name = open_recorded(str(path))
            try:
                norm = Normalizer()
                for line_no, text in read_lines(fp, name):
                    for rec in norm.feed(line_no, text):
                        if not skipped(rec.message):
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

    def __init__(self, baseline: Baseline, inner: Fallback | None = None) -> None:
        self.baseline = baseline
        self.inner = inner
        # a line new to the baselines can be any line: the observer's `pick` has the scanner feed the
        # first line of each shape of line (and counts the rest), beside what the inner fallback reads
        self.reading = (inner.reading if inner is not None else Reading()).replace(pick=True)

    def watch(self, timeline: Timeline) -> NoveltyWatch:
        observer = RunTemplates(timeline, reference=self.baseline.miner, keep_all=False)
        inner = self.inner.watch(timeline) if self.inner is not None else None
        return NoveltyWatch(observer, inner, len(self.baseline.sources))


@dataclass
class NoveltyWatch:
    """One run under --baseline: the novelty observer beside the inner fallback's watcher."""

    observer: RunTemplates
    inner: Watcher | None
    n_baselines: int

    def record(self, rec: Record, phase: str) -> None:
        self.observer.record(rec, phase)
        if self.inner is not None:
            self.inner.record(rec, phase)

    def event(self, event: Event) -> None:
        if self.inner is not None:
            self.inner.event(event)

    def pick(self, block: bytes, lines_before: int, candidates: list[int]) -> list[int]:
        """The block scanner's hook: the lines the observer must see (see `RunTemplates.pick`)."""
        return self.observer.pick(block, lines_before, candidates)

    def revise(self, diagnoses: list[Diagnosis], facts: dict[str, Any]) -> list[Diagnosis]:
        self.observer.settle()  # the lines `pick` counted without feeding them
        if self.inner is not None:
            diagnoses = self.inner.revise(diagnoses, facts)
            if diagnoses and diagnoses[0].root and diagnoses[0].cause != UNKNOWN:
                return diagnoses
        return novelty_diagnoses(diagnoses, self.observer.new.items(), self.n_baselines,
                                 self.observer.timeline.ready)


def novelty_diagnoses(diagnoses: list[Diagnosis], novel: list[TemplateLine], n_baselines: int, ready: bool) -> list[Diagnosis]:
    """Put the novel lines (error-like first) on the unknown diagnosis; or add them as a note."""
    shown = [x for x in novel if x.kind not in ("source", "chain")]
    ranked = sorted(shown, key=lambda x: (_EVIDENCE_RANK.get(x.kind, 5) + (x.text == _BARE_TRACEBACK), x.line))
    ranked = ranked[:NOVEL_EVIDENCE]
    evidence = tuple(Evidence(x.line, x.text) for x in ranked)
    n_lines = sum(x.count for x in novel)
    n_err = sum(x.count for x in novel if x.errorish)
    where = f"the healthy baselines ({n_baselines} log{'s' if n_baselines != 1 else ''})"
    if diagnoses and diagnoses[0].cause == UNKNOWN:
        d = diagnoses[0]
        if not novel:
            note = f" Every line of this log also occurs in {where}."
            return [d.replace(explanation=d.explanation + note)] + list(diagnoses[1:])
        text = (f"No rule recognises why the startup failed. {n_lines} lines never seen in {where}: "
                f"{len(novel)} templates, {n_err} of the lines error-like. The first are below, errors first.")
        return [d.replace(explanation=text, evidence=evidence)] + list(diagnoses[1:])
    if diagnoses or ready or not novel:
        return diagnoses
    # nothing failed (yet): the novel lines are a note, not a diagnosis of failure
    return [Diagnosis(
        cause=UNKNOWN, rule=None, root=False, origin=Origin.RULE, confidence=0.0,
        title=f"{n_lines} lines never seen in {where}",
        explanation=f"{len(novel)} templates, {n_err} error-like lines.",
        phase=ranked[0].phase if ranked else None, evidence=evidence, fixes=(),
    )]
