"""`logsense check PATHS`: one `path:line: message` line a problem, then a summary; exit 1 on any."""

from __future__ import annotations

import sys

from logsense.errors import UsageError
from logsense.normalize import clean


def main(paths: list[str], rules: list[str], corpus: list[str], only_rules: list[str] | None = None,
         precision: bool = False) -> int:
    if not (paths or rules or corpus):
        raise UsageError("nothing to check: give incident logs, label files, rule packs or dirs of them "
                         "(e.g. `logsense check corpora/ rules/`)")
    from logsense.check import check

    result = check(paths, rules, corpus, only_rules)
    for p in result.problems:
        print(clean(p.render()))
    print(result.summary())
    if precision:
        for line in result.precision_table():
            print(clean(line))
    sys.stdout.flush()
    return result.exit_code
