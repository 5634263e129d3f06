"""Errors a user can act on, and the exit codes they map to."""

from __future__ import annotations

import os
from enum import IntEnum

_MAX_SOURCE_BYTES = 16 << 20  # a rule file bigger than this is shown without its line


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    BAD_INPUT = 2
    TIMEOUT = 3
    NOT_ANSWERING = 4  # tail --probe: the log says ready, the endpoint does not answer
    INTERNAL = 70
    INTERRUPTED = 130


# The name on PyPI (`logsense` there is another project); the command and the import are logsense.
DISTRIBUTION = "logsense-llm"


def install_hint(extra: str) -> str:
    """The pip command that adds an optional extra: to the checkout this runs from, else from PyPI."""
    from pathlib import Path

    from logsense.paths import display

    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "rules").is_dir():
        return f"pip install -e '{display(root)}[{extra}]'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


_verdict = [0]


def set_verdict(code: int) -> None:
    """Record the exit code the output being written stands for: a reader that closes the pipe early keeps it."""
    _verdict[0] = max(_verdict[0], int(code))


def verdict() -> int:
    """The exit code recorded by `set_verdict` (0 when none was)."""
    return _verdict[0]


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
        source: str | None = None,
    ) -> None:
        self.path, self.line, self.column = path, line, column
        self.rule, self.field, self.reason = rule, field, reason
        # the text of line `line`, shown with a caret under `column`; read here because errors are rare and
        # every place that finds one knows the file and line, not the text
        self.source = source if source is not None else _line_of(path, line)
        super().__init__(self.render_with_source())

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

    def excerpt(self) -> str:
        """The offending line and a ^ under the column, as a compiler shows them ("" when unknown)."""
        if self.source is None or self.line is None:
            return ""
        # the line comes from a file that may be hostile: nothing in it may reach a terminal as a control
        text = "".join(c if c.isprintable() else " " if c == "\t" else "?" for c in self.source.rstrip("\r\n"))
        gutter = f"{self.line:>5} | "
        out = gutter + text
        if self.column is not None and 1 <= self.column <= len(text) + 1:
            out += "\n" + " " * (len(gutter) - 2) + "| " + " " * (self.column - 1) + "^"
        return out

    def render_with_source(self) -> str:
        """render(), then the excerpt when the line is known."""
        excerpt = self.excerpt()
        return f"{self.render()}\n{excerpt}" if excerpt else self.render()


def _line_of(path: str, line: int | None) -> str | None:
    """Line `line` of the file at `path`, or None when it cannot be read (not a file, too big, not text)."""
    if line is None or line < 1:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            if os.fstat(f.fileno()).st_size > _MAX_SOURCE_BYTES:
                return None
            for n, text in enumerate(f, 1):
                if n == line:
                    return text
    except (OSError, UnicodeDecodeError, ValueError):
        pass
    return None


class RuleErrors(LogsenseError):
    """Several rule problems found in one load, reported together."""

    def __init__(self, errors: list[RuleError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.render_with_source() for e in errors))
