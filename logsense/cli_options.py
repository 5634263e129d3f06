"""The options several commands share, as typer types: logsense.cli names them in its annotations."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from logsense.report import formats

__all__ = ["OnlyOpt", "RulesFormatOpt", "RulesOpt"]

RulesOpt = Annotated[Optional[list[str]], typer.Option("--rules", help="Also load the rule packs in this dir/file (repeatable).")]
OnlyOpt = Annotated[
    Optional[list[str]], typer.Option("--only-rules", help="Load only these rule packs, not the bundled ones (repeatable).")
]
RulesFormatOpt = Annotated[str, typer.Option("--format", "-f", help=formats.RULES.help())]
