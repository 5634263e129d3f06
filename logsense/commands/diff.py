"""`logsense diff GOOD BAD`: where a good and a bad startup part ways; and `analyze --baseline DIR`.

Exit codes: 0 when the bad run has no root diagnosis and printed no error-like line that
the good run did not print too (the differences, if any, are not failures); 1 when the bad
run has a root diagnosis or error-like lines of its own; 2 for bad usage or unreadable input.
"""

from __future__ import annotations

import json
import sys

from logsense.commands.common import rules_from_options
from logsense.errors import ExitCode, UsageError
from logsense.report.console import console


def main(good: str, bad: str, fmt: str = "text", rules: list[str] | None = None,
         only_rules: list[str] | None = None) -> int:
    if good == "-" and bad == "-":
        raise UsageError("only one of the two logs can be '-' (stdin); use a file or <(command) for the other")
    from logsense.diff import diff_logs

    rs = rules_from_options(rules, only_rules)
    result = diff_logs(good, bad, rs)
    if fmt == "json":
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        from logsense.report import diff_text

        diff_text.render(result, console())
    sys.stdout.flush()
    return int(ExitCode.FAILURE if result.matters else ExitCode.OK)
