"""`logsense analyze FILE|-`: read a recorded log, print the diagnosis; exit 1 when it failed."""

from __future__ import annotations

import sys

from logsense.analysis import analyze_path
from logsense.commands.common import rules_from_options
from logsense.errors import ExitCode, SourceError, UsageError, set_verdict
from logsense.progress import Waiting


def main(
    paths: list[str],
    fmt: str = "text",
    rules: list[str] | None = None,
    only_rules: list[str] | None = None,
    no_rules: bool = False,
    classifier: bool = True,
    baseline: str | None = None,
) -> int:
    if paths.count("-") > 1:
        raise UsageError("'-' (stdin) can be read once: give it once")
    with Waiting("logsense: loading the rules"):
        rs = rules_from_options(rules, only_rules, no_rules)
    code = ExitCode.OK
    out = None  # the terminal report's console: rich is imported only to draw it
    reports = []  # --format json with several inputs: one JSON array, in the order given
    unreadable: list[SourceError] = []  # with several inputs, one that cannot be read does not lose the others
    for i, path in enumerate(paths):
        try:
            with Waiting(f"logsense: analyzing {'<stdin>' if path == '-' else path}"):
                report, problems = analyze_path(path, rs, classifier=classifier, baseline=baseline, no_rules=no_rules)
        except SourceError as e:
            if len(paths) == 1:
                raise
            unreadable.append(e)
            continue
        if report.failed:
            code = ExitCode.FAILURE
            set_verdict(code)  # before the output: a reader that stops early (`| head -1`) still sees the failure
        if fmt == "json":
            from logsense.report import json as report_json

            if len(paths) == 1:
                print(report_json.dumps(report, problems))
            else:
                reports.append(report_json.report_dict(report, problems))
        else:
            from logsense.report import text as report_text
            from logsense.report.console import console

            if out is None:
                out = console()
            elif i:
                out.print()
            report_text.render(report, out)
            for line in report_text.problem_lines(problems):
                sys.stderr.write(line + "\n")
    if reports:
        import json

        print(json.dumps(reports, ensure_ascii=False, indent=2))
    sys.stdout.flush()
    for problem in unreadable:
        sys.stderr.write(f"logsense: {problem}\n")
    return max(int(code), int(ExitCode.BAD_INPUT)) if unreadable else int(code)
