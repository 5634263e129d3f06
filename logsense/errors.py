"""Errors a user can act on, and the exit codes they map to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    BAD_INPUT = 2
    TIMEOUT = 3
    INTERNAL = 70
    INTERRUPTED = 130


class LogsenseError(Exception):
    """An error with a message meant for the operator; never shown as a traceback."""

    exit_code = ExitCode.BAD_INPUT


class UsageError(LogsenseError):
    """The command line asks for something that cannot be done."""


class SourceError(LogsenseError):
    """An input (file, journal, stdin) cannot be read."""


class ModelError(LogsenseError):
    """A classifier model file is missing, stale or not trusted."""


class RuleError(LogsenseError):
    """A rule pack is malformed: says file, line and the field at fault, like a compiler."""

    def __init__(
        self,
        path: str,
        line: int | None,
        reason: str,
        *,
        rule: str | None = None,
        field: str | None = None,
        column: int | None = None,
    ) -> None:
        self.path, self.line, self.column = path, line, column
        self.rule, self.field, self.reason = rule, field, reason
        super().__init__(self.render())

    def render(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        parts = [where]
        if self.rule:
            parts.append(f"rule '{self.rule}'")
        if self.field:
            parts.append(self.field)
        parts.append(self.reason)
        return ": ".join(parts)


class RuleErrors(LogsenseError):
    """Several rule problems found in one load, reported together."""

    def __init__(self, errors: list[RuleError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.render() for e in errors))
