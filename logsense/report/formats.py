"""Every output format, by the kind of report it draws: a command accepts exactly its kind's names."""

from __future__ import annotations

from typing import NamedTuple


class Formats(NamedTuple):
    """The formats of one kind of report, the first the default."""

    kind: str
    names: tuple[str, ...]

    def help(self) -> str:
        """'text, json or csv.': how a command's --format help lists them."""
        *rest, last = self.names
        return f"{', '.join(rest)} or {last}." if rest else f"{last}."

    def check(self, fmt: str) -> None:
        """Refuse a name this kind does not draw, with the one message every command gives."""
        if fmt not in self.names:
            from logsense.errors import UsageError

            raise UsageError(f"--format {fmt!r}: choose from {', '.join(self.names)}")


DIAGNOSIS = Formats("a diagnosis (analyze)", ("text", "json"))
DIFF = Formats("a diff of two startups", ("text", "json"))
LIVE = Formats("a live session (tail)", ("text", "jsonl"))
HISTORY = Formats("the attempts of a unit", ("table", "json", "csv"))
STATS = Formats("a table of logs (stats)", ("table", "csv", "json", "parquet"))
EVALUATION = Formats("the classifier's evaluation", ("text", "json", "markdown"))
RULES = Formats("rules (rules list, rules show)", ("text", "json"))
COVERAGE = Formats("a package's coverage", ("text", "json", "csv"))
