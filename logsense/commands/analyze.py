"""`logsense analyze FILE|-`: read a recorded log, print the diagnosis; exit 1 when it failed."""

from __future__ import annotations

import json
import os
import sys

from logsense.commands.common import console, rules_from_options
from logsense.errors import ExitCode
from logsense.model import Report
from logsense.pipeline import Pipeline
from logsense.report import json as report_json
from logsense.report import text as report_text
from logsense.rules import RuleSet
from logsense.scan import feed_stream
from logsense.sources.recorded import open_recorded, read_lines


def analyze_path(path: str, rules: RuleSet, classifier=None) -> tuple[Report, list]:
    """Analyze one recorded log ('-' is stdin); returns the report and any rule problems."""
    fp, name = open_recorded(path)
    try:
        p = Pipeline(rules)
        p.classifier = classifier
        attach = getattr(classifier, "attach", None)
        if attach is not None:
            attach(p)  # the hook watches the events as they are fed
        # The model reads error-ish lines and the end of the log; the block scanner picks those
        # too, so one pass serves rules and model. A hook that watches every record
        # (--baseline's template miner) needs every line.
        every_line = attach is not None and getattr(classifier, "needs_every_line", True)
        literals = getattr(classifier, "scan_literals", None)
        if literals:
            p.extra_literals = literals
        if every_line or os.environ.get("LOGSENSE_SCAN") == "off":
            for line_no, text in read_lines(fp, name):
                p.feed_line(line_no, text)
        else:
            feed_stream(fp, p, name, tail=getattr(classifier, "scan_tail", 0))
        return p.finish(name), p.matcher.problems
    finally:
        if fp is not sys.stdin.buffer:
            fp.close()


def main(
    paths: list[str],
    fmt: str = "text",
    rules: list[str] | None = None,
    only_rules: list[str] | None = None,
    no_rules: bool = False,
    classifier: bool = True,
    baseline: str | None = None,
) -> int:
    rs = rules_from_options(rules, only_rules, no_rules)
    clf = None
    if classifier:
        from logsense.learn.hook import default_classifier

        clf = default_classifier(required=no_rules)
    if baseline:
        from logsense.commands.diff import baseline_classifier

        clf = baseline_classifier(baseline, clf)
    code = ExitCode.OK
    out = console()
    for i, path in enumerate(paths):
        report, problems = analyze_path(path, rs, clf)
        if fmt == "json":
            if len(paths) == 1:
                print(report_json.dumps(report, problems))
            else:
                print(json.dumps(report_json.report_dict(report, problems), ensure_ascii=False))
        else:
            if i:
                out.print()
            report_text.render(report, out, problems)
        if report.failed:
            code = ExitCode.FAILURE
    sys.stdout.flush()
    return int(code)
