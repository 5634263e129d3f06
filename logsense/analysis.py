"""One way to analyze: the Pipeline with its fallbacks, as analyze, check, stats and tail build it.

`analysis_pipeline(rules, classifier=..., baseline=..., no_rules=...)` is the pipeline a live
reader feeds (tail); `analyze_path(path, rules, ...)` reads a recorded log through it. Both
give the verdict of `Pipeline.finish`: ready, failed (a named or an unknown cause), incomplete.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import BinaryIO

from logsense.model import Report, Role, RuleProblem
from logsense.pipeline import Fallback, Pipeline
from logsense.rules import RuleSet
from logsense.scan import Pick, feed_stream
from logsense.sources.recorded import open_recorded, read_lines


def verdict_only(rules: RuleSet) -> RuleSet:
    """The rules that decide the verdict and nothing else (fatal signals and phases): --no-rules."""
    return RuleSet([r for r in rules.rules if r.spec.role is Role.FATAL], rules.phases, rules.sources)


def fallback_for(*, classifier: bool = True, baseline: str | None = None, required: bool = False) -> Fallback | None:
    """What runs when no rule knows the cause: the shipped classifier (if any) and the --baseline check.

    `required` (--no-rules: the classifier is the only judge) turns a missing model into an error.
    Made once per process and set of options (the model loads once, the baselines are mined once).
    """
    from logsense.learn.hook import model_path

    return _fallback(classifier, baseline, required, str(model_path()) if classifier else "")


@lru_cache(maxsize=8)
def _fallback(classifier: bool, baseline: str | None, required: bool, _model: str) -> Fallback | None:
    fb: Fallback | None = None
    if classifier:
        from logsense.learn.hook import default_classifier

        fb = default_classifier(required=required)
    if baseline:
        from logsense.novelty import Baseline

        fb = Baseline.from_dir(baseline).fallback(fb)
    return fb


def analysis_pipeline(rules: RuleSet, *, classifier: bool = True, baseline: str | None = None,
                      no_rules: bool = False) -> Pipeline:
    """The pipeline analyze runs: `rules` (only the verdict's with `no_rules`) and its fallbacks."""
    if no_rules:
        rules = verdict_only(rules)
    return Pipeline(rules, fallback_for(classifier=classifier, baseline=baseline, required=no_rules))


def read_into(p: Pipeline, path: str, latest: bool = False) -> tuple[Report, list[RuleProblem]]:
    """Feed one recorded log ('-' is stdin) through `p`; the report and any rule problems.

    A fallback whose `Reading` says `pick` has its watcher name more lines for the block scanner
    to feed (see `feed_stream`). `latest`: only the report matters, not what the pipeline saw of
    earlier startups (see `read_stream`).
    """
    fp, name = open_recorded(path)
    try:
        read_stream(p, fp, name, latest=latest)
        return p.finish(name), p.matcher.problems
    finally:
        if fp is not sys.stdin.buffer:
            fp.close()


def read_stream(p: Pipeline, fp: BinaryIO, name: str, pick: Pick | None = None, latest: bool = False) -> None:
    """Feed a log's text (`fp`: UTF-8 bytes, as `open_recorded` gives them) through `p`, the block scanner's way.

    `pick`: more lines for the scanner to feed, for a reader that needs more of the log than the
    pipeline does (beside those the fallback's watcher picks). `latest`: a big file is read from
    its latest startup on (`latest.latest_start`): the same report, but the pipeline's other
    state (its timeline's restart count) knows nothing of the earlier ones.
    """
    every_line = p.reading.every_line or os.environ.get("LOGSENSE_SCAN") == "off"
    lines_before = 0
    if latest and pick is None and not every_line:
        from logsense.latest import latest_start

        start = latest_start(fp, p, name)
        if start is not None:
            fp.seek(start.offset)
            p.begin_at(start.line, start.server, start.year)
            lines_before = start.line - 1
    # The block scanner feeds only the lines some stage can use (the fallback names what it
    # reads); a fallback that watches every record needs every line.
    if every_line:
        for line_no, text in read_lines(fp, name):
            p.feed_line(line_no, text)
        return
    picks = [f for f in (pick, getattr(p.watcher, "pick", None) if p.reading.pick else None) if f is not None]
    if len(picks) > 1:
        feed_stream(fp, p, name, tail=p.reading.tail, lines_before=lines_before,
                    pick=lambda block, before, starts: [o for f in picks for o in f(block, before, starts)])
    else:
        feed_stream(fp, p, name, tail=p.reading.tail, pick=picks[0] if picks else None, lines_before=lines_before)


def analyze_path(path: str, rules: RuleSet, *, classifier: bool = True, baseline: str | None = None,
                 no_rules: bool = False) -> tuple[Report, list[RuleProblem]]:
    """Analyze one recorded log ('-' is stdin) as `logsense analyze` does."""
    p = analysis_pipeline(rules, classifier=classifier, baseline=baseline, no_rules=no_rules)
    return read_into(p, path, latest=True)
