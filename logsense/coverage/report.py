"""The coverage report as text, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

from logsense.coverage import CoverageReport
from logsense.coverage.classify import Status, Verdict

# what an operator should look at first
ORDER = (Status.UNCOVERED, Status.GENERIC, Status.COVERED, Status.TRIAGED, Status.NO_TEXT)
COUNTED = (Status.COVERED, Status.TRIAGED, Status.GENERIC, Status.UNCOVERED)


def summary(report: CoverageReport) -> str:
    """One sentence: N of M startup raise-sites covered by a rule, K triaged, F generic, U uncovered."""
    c = report.counts()
    m = sum(c[s] for s in COUNTED)
    text = (f"{report.title}: {c[Status.COVERED]} of {m} startup raise-sites with message text covered by a rule, "
            f"{c[Status.TRIAGED]} triaged as not startup failures, {c[Status.GENERIC]} caught only as a failure "
            f"of unknown cause, {c[Status.UNCOVERED]} uncovered ({c[Status.NO_TEXT]} more sites print no fixed "
            f"text; in {report.files} files)")
    return text + (f"; UNFINISHED: {report.unfinished}" if report.unfinished else "")


def _areas_table(report: CoverageReport) -> list[str]:
    rows: list[tuple[str, ...]] = [("area", "sites", "covered", "triaged", "generic", "uncovered", "no text")]
    for area in report.areas + ["total"]:
        c = report.counts(None if area == "total" else area)
        rows.append((area, str(sum(c[s] for s in COUNTED)), *(str(c[s]) for s in COUNTED), str(c[Status.NO_TEXT])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
            for row in rows]


def site_line(v: Verdict) -> str:
    s = v.site
    what = {Status.COVERED: f"covered by {v.rule} ({v.cause})", Status.TRIAGED: f"triaged: {v.reason}",
            Status.GENERIC: "generic failure, cause unknown", Status.UNCOVERED: "UNCOVERED",
            Status.NO_TEXT: "no fixed text"}[v.status]
    text = s.template.text if s.template is not None else ""
    message = f"{s.exc}: {text}" if s.kind in ("raise", "assert") else f"logger.{s.exc}: {text}" \
        if s.kind == "log" else f"sys.exit: {text}"
    return f"{s.where}  {s.scope}  [{what}]\n    {message.replace(chr(10), chr(10) + '    ')}"


def selected(report: CoverageReport, uncovered_only: bool) -> list[Verdict]:
    """Sites in report order (uncovered first, then by file and line); only the unknown ones if asked."""
    keep = (Status.UNCOVERED, Status.GENERIC) if uncovered_only else ORDER
    rank = {s: i for i, s in enumerate(ORDER)}
    return sorted((v for v in report.verdicts if v.status in keep),
                  key=lambda v: (rank[v.status], v.site.file, v.site.line))


def render_text(report: CoverageReport, uncovered_only: bool = False, sites: bool = True) -> str:
    out = [summary(report), ""] + _areas_table(report)
    by_rule = Counter(v.rule for v in report.verdicts if v.status is Status.COVERED)
    if by_rule:
        # a rule that covers hundreds of sites is a fallback: worth a look before trusting the figure
        out += ["", "rules covering the most sites:"] + [f"  {n:5d}  {rule}" for rule, n in by_rule.most_common(10)]
    if report.problems:
        out += ["", f"{len(report.problems)} file(s) skipped:"] + [f"  {p}" for p in report.problems]
    if sites:
        out.append("")
        out += [site_line(v) for v in selected(report, uncovered_only)]
    return "\n".join(out) + "\n"


def _row(v: Verdict) -> dict:
    s = v.site
    return {"file": s.file, "line": s.line, "scope": s.scope, "kind": s.kind, "exc": s.exc, "area": v.area,
            "status": v.status.value, "rule": v.rule, "cause": v.cause, "reason": v.reason,
            "template": s.template.text if s.template is not None else None,
            "regex": s.template.regex if s.template is not None else None}


def render_json(report: CoverageReport, uncovered_only: bool = False) -> str:
    c = report.counts()
    return json.dumps({
        "package": report.package, "version": report.version, "source": report.source, "config": report.config,
        "files": report.files, "problems": report.problems, "unfinished": report.unfinished,
        "counts": {s.value: c[s] for s in ORDER},
        "areas": {a: {s.value: n for s, n in report.counts(a).items()} for a in report.areas},
        "sites": [_row(v) for v in selected(report, uncovered_only)],
    }, indent=2) + "\n"


def render_csv(report: CoverageReport, uncovered_only: bool = False) -> str:
    buf = io.StringIO()
    fields = ["file", "line", "scope", "kind", "exc", "area", "status", "rule", "cause", "reason", "template", "regex"]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for v in selected(report, uncovered_only):
        w.writerow(_row(v))
    return buf.getvalue()
