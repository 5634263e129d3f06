"""The JSON contract of `logsense analyze --format json` (see docs: one object per input)."""

from __future__ import annotations

import json
from typing import Any

from logsense.model import Report

SCHEMA_VERSION = 1


def report_dict(report: Report, problems: list | None = None) -> dict[str, Any]:
    out = report.to_json()
    out["schema"] = SCHEMA_VERSION
    if problems:
        out["rule_problems"] = [{"rule": p.rule, "line": p.line, "reason": p.reason} for p in problems]
    return out


def dumps(report: Report, problems: list | None = None) -> str:
    return json.dumps(report_dict(report, problems), ensure_ascii=False, indent=2)
