"""What several commands share: rules from the options, the source a target names, a pipeline per startup, the
clock (the console is logsense.report.console)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from logsense.errors import UsageError
from logsense.rules import RuleSet, load_rules

if TYPE_CHECKING:
    from logsense.pipeline import Pipeline

_FILE_SUFFIXES = (".log", ".txt", ".out", ".err", ".gz")


def rules_from_options(rules: list[str] | None, only_rules: list[str] | None, no_rules: bool = False) -> RuleSet:
    rs = load_rules(rules or [], only_rules or None)
    if no_rules:
        from logsense.analysis import verdict_only

        rs = verdict_only(rs)  # the fatal signals still decide whether the startup failed
    return rs


class WallClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()


def analysis_factory(rules: RuleSet, classifier: bool = True, baseline: str | None = None) -> Callable[[], Pipeline]:
    """A new analysis pipeline per startup, built as `analyze` builds it (rules, classifier, --baseline)."""
    # imported here: the commands that only list or check rules never build a pipeline
    from logsense.analysis import analysis_pipeline

    def new() -> Pipeline:
        return analysis_pipeline(rules, classifier=classifier, baseline=baseline)

    new()  # a broken model or baseline is an error now, before anything is shown
    return new


def source_kind(target: str | None, unit: str | None, files: list[str], directory: str | None,
                journal_options: object, command: str) -> str:
    """'journal' or 'file': what `logsense tail|history TARGET` reads, or a UsageError saying why neither."""
    kind = "journal" if unit or files or directory or not _looks_like_path(target) else "file"
    if target is None and kind == "journal" and not (files or directory):
        raise UsageError(f"give a systemd unit or a log file: logsense {command} UNIT | FILE")
    if kind == "file" and journal_options:
        raise UsageError("--since, --until and --boot read the journal; for a file use --from-start")
    if kind == "file" and target is not None and _is_stream(target):
        raise UsageError(f"{target}: a pipe or a device, not a file: `logsense {command}` reads files and journals "
                         "from a place it can return to; for piped lines use `logsense analyze -`")
    return kind


def _is_stream(path: str) -> bool:
    """A pipe, FIFO, socket or device: something read once, with no place to seek back to."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # missing: the source says so in its own words
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _looks_like_path(target: str | None) -> bool:
    if target is None:
        return False
    return "/" in target or os.path.exists(target) or target.endswith(_FILE_SUFFIXES)
