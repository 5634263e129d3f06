"""`logsense stats PATHS`: one row per log, as a table, csv, json or parquet (pandas)."""

from __future__ import annotations

import sys

from logsense.commands.common import PIPED_WIDTH, SafeConsole, console
from logsense.errors import ExitCode, UsageError

FORMATS = ("table", "csv", "json", "parquet")


def main(paths: list[str], fmt: str = "table", output: str | None = None, jobs: int = 0) -> int:
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose from {', '.join(FORMATS)}")
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
        raise UsageError("logsense stats needs pandas: pip install 'logsense[stats]'") from None
    from logsense.learn.batch import frame

    df = frame(paths, jobs)
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
            raise UsageError("--format parquet needs pyarrow: pip install 'logsense[stats]'") from None
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
    from rich.table import Table
    from rich.text import Text

    from logsense.normalize import clean
    from logsense.report.text import duration

    fit = output is None and sys.stdout.isatty()  # a terminal: fit its width; a file or pipe: every cell whole
    t = Table(show_edge=False, header_style="bold", pad_edge=False)
    t.add_column("source", no_wrap=True, overflow="ellipsis", min_width=12, max_width=48 if fit else None)
    t.add_column("status", no_wrap=True, min_width=10)
    t.add_column("cause", no_wrap=True, overflow="ellipsis", min_width=14, max_width=30 if fit else None)
    t.add_column("phase", no_wrap=True, overflow="ellipsis", min_width=8, max_width=18 if fit else None)
    t.add_column("time", justify="right", no_wrap=True, min_width=9)
    t.add_column("sure", justify="right", no_wrap=True, min_width=10)
    for r in df.to_dict("records"):
        fail, ready = r["time_to_failure"], r["time_to_ready"]
        secs = fail if _num(fail) else (ready if _num(ready) else None)
        when = "" if secs is None else ("✗ " if _num(fail) else "✓ ") + duration(secs)
        sure = f"{r['confidence']:.2f} " + {"classifier": "model"}.get(_s(r["origin"]), _s(r["origin"])) \
            if _num(r["confidence"]) else ""
        t.add_row(Text(_short(clean(_s(r["source"])))), Text(_s(r["status"])), Text(clean(_s(r["cause"]))),
                  Text(_s(r["phase"])), Text(when), Text(sure))
    counts = df["cause"].fillna(df["status"]).value_counts()
    summary = Text(f"{len(df)} logs: " + ", ".join(f"{k} {v}" for k, v in counts.items()), style="bold")
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            con = SafeConsole(file=fh, width=PIPED_WIDTH, no_color=True, markup=False, emoji=False, highlight=False)
            con.print(t)
            con.print(summary)
    else:
        con = console()
        con.print(t)
        con.print(summary)


def _s(v) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and v == v


def _short(source: str, keep: int = 2) -> str:
    """The last path parts: the table is for reading, the csv keeps the full name."""
    head, sep, member = source.rpartition("!")
    parts = (member if sep else source).split("/")
    tail = "/".join(parts[-keep:])
    return (head.rsplit("/", 1)[-1] + "!" + tail) if sep else tail
