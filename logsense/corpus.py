"""Incident labels, read and validated in one place: the checker, the tests, training and --baseline use them.

An incident is a log (`X.log`, `X.log.gz`, or a bare `X` its label names) with `X.label.yaml`
beside it. What a label says analyze must give:

- `cause: <id>`: that root cause (status failed);
- `cause: healthy`: no root cause (status ready or incomplete); with `outcome: ready` it
  must reach ready;
- `cause: unknown`: the excerpt shows a failure but not its cause (failed, cause unknown);
- `outcome: incomplete`: the excerpt ends before anything fatal (status incomplete), whatever
  `cause` says (usually `unknown`, with `reported_cause` naming what the thread reports).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logsense.errors import RuleError
from logsense.model import HEALTHY, UNKNOWN, Origin, Report, Status
from logsense.servers import NAMES

LABEL_SUFFIX = ".label.yaml"
LOG_SUFFIXES = (".log", ".log.gz")
ORIGINS = ("recorded", "constructed")
# What the excerpt itself shows: `ready` (it reaches ready), `incomplete` (it stops before
# anything fatal: a hang, or a paste cut before the error), or unset (the cause decides).
OUTCOMES = ("ready", "incomplete")
LABEL_FIELDS = ("cause", "fix_any", "phase", "check_phase", "outcome", "reported_cause", "server", "origin",
                "group", "source", "source_url", "date", "notes")


@dataclass(frozen=True)
class LabelProblem:
    """What is wrong with a label file, at which line; `unreadable` when the file cannot be read at all."""

    line: int | None
    message: str
    unreadable: bool = False


@dataclass(frozen=True)
class Label:
    cause: str
    fix_any: tuple[str, ...] = ()
    phase: str | None = None
    check_phase: bool = False  # compare `phase` too (an excerpt may lack the markers that place it)
    outcome: str | None = None
    reported_cause: str | None = None  # the cause the thread reports when the excerpt does not show it
    server: str | None = None
    origin: str = "recorded"
    fields: dict[str, Any] = field(default_factory=dict, compare=False)  # every field as written
    lines: dict[str, int] = field(default_factory=dict, compare=False)  # field -> line in the label file

    @property
    def failure(self) -> bool:
        """The excerpt shows a failure (named or not): analyze must say `failed`."""
        return self.cause != HEALTHY and self.outcome != "incomplete"

    def expected_status(self) -> tuple[Status, ...]:
        """The statuses analyze may give this log."""
        if self.failure:
            return (Status.FAILED,)
        if self.outcome == "incomplete":
            return (Status.INCOMPLETE,)
        if self.outcome == "ready":
            return (Status.READY,)
        return (Status.READY, Status.INCOMPLETE)


def label_for(log: Path) -> Path:
    """`X.log`, `X.log.gz` (or a bare `X`) -> `X.label.yaml`."""
    name = log.name
    for suffix in (".gz", ".log"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return log.with_name(name + LABEL_SUFFIX)


def logs_for(label: Path) -> list[Path]:
    """The log files beside a label: `X.log`, `X.log.gz`, or a bare `X`."""
    stem = label.name[: -len(LABEL_SUFFIX)]
    candidates = [label.with_name(stem + s) for s in LOG_SUFFIXES] + [label.with_name(stem)]
    return [p for p in candidates if p.is_file()]


def is_label(path: Path) -> bool:
    return path.name.endswith(LABEL_SUFFIX)


def _visible(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def label_paths(root: Path) -> list[Path]:
    """Every label file under a dir (hidden dirs left out), or the file itself."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*" + LABEL_SUFFIX) if p.is_file() and _visible(p, root))


@dataclass(frozen=True)
class CorpusEntry:
    """A log and its label file, as found in a corpus; either may be missing (a problem of its own)."""

    log: Path | None
    label: Path | None


def corpus_entries(root: Path) -> list[CorpusEntry]:
    """Every entry under a corpus dir (hidden dirs left out): each log with its label, and labels without a log."""
    logs = sorted(p for p in root.rglob("*") if p.is_file() and _visible(p, root) and p.name.endswith(LOG_SUFFIXES))
    out = [CorpusEntry(log, label_for(log) if label_for(log).is_file() else None) for log in logs]
    for label in label_paths(root):
        found = logs_for(label)
        if not found:
            out.append(CorpusEntry(None, label))
        # a bare `X` is only a log when its label says so
        out.extend(CorpusEntry(p, label) for p in found if not p.name.endswith(LOG_SUFFIXES))
    return out


def is_corpus_dir(root: Path) -> bool:
    """A dir holding labels or logs (hidden dirs left out)."""
    return any(p.is_file() and _visible(p, root) and (is_label(p) or p.name.endswith(LOG_SUFFIXES))
               for p in root.rglob("*"))


def read_label(path: Path, shown: str | None = None) -> tuple[Label | None, list[LabelProblem]]:
    """Parse and validate a label file; None and the problems (with the line at fault) when it is not valid."""
    from logsense.rules.loader import Marked, plain, read_yaml
    from logsense.taxonomy import causes

    shown = shown or str(path)
    try:
        doc = read_yaml(path, shown)
    except RuleError as e:
        return None, [LabelProblem(e.line, e.reason, e.reason.startswith(("cannot read", "not UTF-8")))]
    if doc is None or not isinstance(doc.value, dict):
        return None, [LabelProblem(doc.line if doc else 1, "a label is a mapping with at least 'cause:'")]
    marked: dict[str, Marked] = doc.value
    fields = {k: plain(v) for k, v in marked.items()}
    lines = {k: v.line for k, v in marked.items()}
    problems: list[LabelProblem] = []

    def bad(key: str, message: str) -> None:
        problems.append(LabelProblem(lines.get(key, doc.line), f"{key}: {message}"))

    def one_of(key: str, allowed: Iterable[str]) -> str | None:
        value = fields.get(key)
        if value is not None and value not in allowed:
            bad(key, f"must be one of: {', '.join(allowed)}")
            return None
        return value

    for key in fields:
        if key not in LABEL_FIELDS:
            close = difflib.get_close_matches(key, LABEL_FIELDS, n=1, cutoff=0.7)
            bad(key, f"unknown field (did you mean '{close[0]}'?)" if close
                else f"unknown field (known: {', '.join(LABEL_FIELDS)})")
    cause = fields.get("cause")
    if cause is None:
        return None, problems + [LabelProblem(doc.line, "missing 'cause:' (a taxonomy id, healthy or unknown)")]
    if not isinstance(cause, str) or cause not in causes():
        bad("cause", f"unknown cause {cause!r}{close_causes(str(cause))}")
    reported = fields.get("reported_cause")
    if reported is not None and (not isinstance(reported, str) or reported not in causes()
                                 or reported in (HEALTHY, UNKNOWN)):
        bad("reported_cause", f"unknown cause {reported!r}{close_causes(str(reported))}")
    fix_any = fields.get("fix_any", [])
    if isinstance(fix_any, str) or not isinstance(fix_any, list) or not all(isinstance(t, str) for t in fix_any):
        bad("fix_any", "must be a list of strings (a suggested fix must contain one of them)")
        fix_any = []
    phase = fields.get("phase")
    if phase is not None:
        from logsense.rules import bundled_phase_names

        phases = bundled_phase_names()
        if phase not in phases:
            bad("phase", f"unknown phase {phase!r} (phases: {', '.join(phases)})")
    check_phase = fields.get("check_phase", False)
    if not isinstance(check_phase, bool):
        bad("check_phase", "must be true or false")
    outcome = one_of("outcome", OUTCOMES)
    server = one_of("server", NAMES)
    origin = one_of("origin", ORIGINS)
    if outcome == "ready" and cause != HEALTHY:
        bad("outcome", "`ready` goes with `cause: healthy` (a failure after ready is labelled with its cause)")
    if problems:
        return None, problems
    return Label(cause, tuple(fix_any), phase, check_phase, outcome, reported, server, origin or "recorded",
                 fields, lines), []


def close_causes(cause: str) -> str:
    """' (close: a, b)' for an unknown cause id, else a pointer to the taxonomy."""
    from logsense.taxonomy import causes

    ids = list(causes())
    close = difflib.get_close_matches(cause, ids, n=5, cutoff=0.5)
    words = [w for w in cause.lower().replace("-", "_").split("_") if len(w) > 2]
    close += [i for i in ids if any(w in i for w in words) and i not in close]
    if close:
        return f" (close: {', '.join(close[:8])})"
    return " (see logsense/taxonomy.yaml for the ids)"


def describe(report: Report) -> str:
    """What analyze says, in one line: the verdict, the principal cause, its rule, phase and line."""
    root = report.root
    if root is None:
        return f"no failure (status {report.status.value}, phase {report.phase or '-'})"
    where = f"line {root.evidence[0].line}" if root.evidence else "no evidence line"
    if root.rule:
        how = f"rule {root.rule}"
    elif root.origin is Origin.RULE:
        how = f"a fatal {root.kind} no rule names" if root.kind else "no rule matched"
    else:
        how = root.origin.value
    return f"{root.cause} ({how}, phase {root.phase or '-'}, {where})"


def compare(label: Label, report: Report) -> list[tuple[int | None, str]]:
    """How the report differs from the label: (log line, message) pairs; empty when it agrees."""
    root = report.root
    at = root.evidence[0].line if root is not None and root.evidence else None
    status = report.status
    if label.outcome == "incomplete":
        if status is Status.FAILED:
            return [(at, f"the excerpt ends before any failure shows, but analyze says {describe(report)}")]
        if status is not Status.INCOMPLETE:
            return [(None, f"labelled incomplete, but the startup reached {status.value}")]
        return []
    if label.cause == HEALTHY:
        if root is not None or status is Status.FAILED:
            return [(at, f"false alarm on a healthy startup: diagnosed {describe(report)}")]
        if label.outcome == "ready" and status is not Status.READY:
            return [(None, f"labelled healthy, but the startup never reached ready (status "
                           f"{status.value}, last phase {report.phase or '-'})")]
        return []
    got = root.cause if root is not None else "no failure"
    if status is not Status.FAILED or got != label.cause:
        what = "a failure no rule names (unknown)" if label.cause == UNKNOWN else label.cause
        return [(at, f"diagnosed {describe(report) if root else got + f' (status {status.value})'}, labelled {what}")]
    out: list[tuple[int | None, str]] = []
    if label.fix_any:
        values = [f.value for f in root.fixes] if root is not None else []
        if not any(t in v for t in label.fix_any for v in values):
            shown = "; ".join(values) or "no fix"
            out.append((at, f"no suggested fix contains any of {list(label.fix_any)} (fixes: {shown})"))
    if label.phase and label.check_phase:
        phase = root.phase if root is not None else report.phase
        if phase != label.phase:
            out.append((at, f"failed in phase {phase or '-'}, labelled phase {label.phase}"))
    return out
