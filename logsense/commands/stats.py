"""`logsense stats PATHS`: one row per log, as a table, csv, json or parquet (pandas)."""

from __future__ import annotations

import sys

from logsense.errors import ExitCode, UsageError, install_hint
from logsense.report import formats
from logsense.report.console import console
from logsense.report.rich_console import SafeConsole
from logsense.report.term import PIPED_WIDTH


def main(paths: list[str], fmt: str = "table", output: str | None = None, jobs: int = 0) -> int:
    formats.STATS.check(fmt)
    if jobs < 0:
        raise UsageError("--jobs: 0 (one per core) or more")
    if fmt == "parquet" and output is None and sys.stdout.isatty():
        raise UsageError("--format parquet is binary: give --output FILE or redirect stdout")
    import os

    missing = [p for p in paths if not any(ch in p for ch in "*?[") and not os.path.exists(p)]
    if missing:
        raise UsageError(f"{missing[0]}: no such file or directory")
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise UsageError(f"logsense stats needs pandas: {install_hint('stats')}") from None
    from logsense.batch import frame
    from logsense.progress import Progress

    with Progress("logs read:") as progress:
        df = frame(paths, jobs, on_row=lambda row: progress.step(row["source"]))
    if df.empty:
        raise UsageError(f"{', '.join(paths)}: no logs found (*.log, *.log.gz, *.txt, archives)")
    if fmt == "table":
        _table(df, output)
    elif fmt == "csv":
        _write_text(_cleaned(df).to_csv(index=False), output)
    elif fmt == "json":
        _write_text(df.to_json(orient="records", indent=2) + "\n", output)
    else:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError(f"--format parquet needs pyarrow: {install_hint('stats')}") from None
        df.to_parquet(output if output else sys.stdout.buffer, index=False)
    return int(ExitCode.FAILURE if (df["status"] == "error").all() else ExitCode.OK)


def _cleaned(df):
    """Text cells without control characters: a csv is often just `cat`-ed to a terminal."""
    from logsense.normalize import clean

    out = df.copy()
    for col in out.columns:
        if out[col].dtype.kind not in "biufM":  # text columns, whatever pandas calls their dtype
            out[col] = out[col].map(lambda v: clean(v) if isinstance(v, str) else v)
    return out


def _write_text(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _table(df, output: str | None) -> None:
    rows = df.to_dict("records")
    if output:  # a file: every cell whole
        with open(output, "w", encoding="utf-8") as fh:
            _print_table(SafeConsole(file=fh, width=PIPED_WIDTH, no_color=True, markup=False, emoji=False,
                                     highlight=False), rows, fit=False)
    else:  # a terminal fits its width; a pipe gets every cell whole
        _print_table(console(), rows, fit=sys.stdout.isatty())


def _print_table(con, rows: list[dict], fit: bool) -> None:
    from logsense.report.tables import stats_summary, stats_table

    con.print(stats_table(rows, fit))
    con.print(stats_summary(rows))
