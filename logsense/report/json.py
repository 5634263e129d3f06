"""The JSON contract of `logsense analyze --format json` (one object per input; several inputs: one array)."""

from __future__ import annotations

import json
from typing import Any

from logsense.model import Report, RuleProblem
from logsense.normalize import shown_time

SCHEMA_VERSION = 1


def report_dict(report: Report, problems: list[RuleProblem] | None = None) -> dict[str, Any]:
    """The report as the JSON contract has it: log times shown as the log gave them, the schema, rule problems."""
    out = times_shown(report.to_json())
    out["schema"] = SCHEMA_VERSION
    if problems:
        out["rule_problems"] = [{"rule": p.rule, "line": p.line, "reason": p.reason} for p in problems]
    return out


def times_shown(value: Any) -> Any:
    """Times the log gave without a year keep none (never "2000-11-20 ...")."""
    if isinstance(value, dict):
        return {k: times_shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [times_shown(v) for v in value]
    return shown_time(value) if isinstance(value, str) else value


def dumps(report: Report, problems: list[RuleProblem] | None = None) -> str:
    return json.dumps(report_dict(report, problems), ensure_ascii=False, indent=2)


# Line separators that JSON leaves raw but `str.splitlines()` (and some terminals) break lines at.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def dumps_line(obj: Any) -> str:
    """One JSON value on exactly one line, whatever the text inside holds (JSON Lines)."""
    return json.dumps(obj, ensure_ascii=False).translate(_LINE_BREAKS)
