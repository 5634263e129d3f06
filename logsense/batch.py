"""Many logs into one table: one row per log (cause, phase, time to failure or ready, rule, fix...).

`row_from_path` / `row_from_bytes` are the per-log function: plain Python, no pandas, no
shared state but the rules (loaded once per process), so the same function runs in a local
process pool (`frame(paths, jobs=4)`), a Dask bag, or Spark's mapPartitions (`rows(items)`
loads the rules once per partition). Only `frame` imports pandas.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import io
import itertools
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from logsense.logtime import TimesSeen
from logsense.model import Record, Update, UpdateKind
from logsense.pipeline import Pipeline

# Each column of a row and its type, in order: the pandas frame and the Spark schema both follow it.
COLUMN_TYPES = {
    "source": "string", "host": "string", "status": "string", "cause": "string", "origin": "string",
    "rule": "string", "confidence": "double", "phase": "string", "time_to_failure": "double",
    "time_to_ready": "double", "fix": "string", "nearest": "string", "lines": "bigint", "server": "string",
    "server_version": "string", "gpu_name": "string", "model_arch": "string", "error": "string",
}
COLUMNS = list(COLUMN_TYPES)
# Spark cannot infer a type for a column that is None in every row it samples: `.toDF(SPARK_SCHEMA)`
SPARK_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in COLUMN_TYPES.items())
LOG_PATTERNS = ("*.log", "*.log.gz", "*.txt", "*.txt.gz", "*.out", "*.journal.txt", "*.jsonl")
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


@dataclass(frozen=True)
class LogSource:
    """One log to read: a file, or a member of a zip (read by the worker), or bytes already read."""

    name: str
    path: str
    member: str | None = None
    kind: str = "file"  # file | zip | spooled (a tar member copied to a temp file, removed once read) | error
    error: str | None = None  # kind error: why this archive or member could not be read


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVES)


def looks_like_log(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(base, pat) for pat in LOG_PATTERNS) and not base.endswith(".label.yaml")


def expand(paths: Iterable[str]) -> Iterator[str]:
    """Files named, dirs walked (log-looking files and archives), globs matched; sorted within each."""
    for p in paths:
        if any(ch in p for ch in "*?["):
            yield from sorted(x for x in glob.glob(p, recursive=True) if os.path.isfile(x))
        elif os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in files:
                    full = os.path.join(root, f)
                    if (looks_like_log(f) or is_archive(f)) and _regular(full):
                        found.append(full)
            yield from sorted(found)
        else:
            yield p


def _regular(path: str) -> bool:
    """A FIFO, socket or device in a walked dir is skipped: opening a FIFO would wait forever."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # unreadable: its row says why


# --- the per-log function ---

_RULES = None
_CLASSIFIER: Any = False  # False: not looked up yet


def _rules():
    global _RULES
    if _RULES is None:
        from logsense.rules import load_rules

        _RULES = load_rules([], None)
    return _RULES


def _classifier():
    global _CLASSIFIER
    if _CLASSIFIER is False:
        from logsense.analysis import fallback_for

        _CLASSIFIER = fallback_for()
    return _CLASSIFIER


DATED_WALK = 1000  # lines walked to find the dated line a time is read from


class _RowPipeline(Pipeline):
    """The analysis pipeline, noting what a row needs of the records it is fed: the first time, the host and
    when each cause first failed.

    Those are read from dated lines the block scanner would leave out, so `pick` has it feed them:
    the log's first dated line, and the dated line before each line it feeds that has no time of
    its own (a traceback's lines take the time of the line before them).
    """

    def __init__(self, rules, fallback) -> None:
        super().__init__(rules, fallback)
        self.times: TimesSeen[str] = TimesSeen()  # where the log's time changes
        self.first_time: str | None = None
        self.failed_at: dict[str, str | None] = {}
        self.host: str | None = None

    def pick(self, block: bytes, lines_before: int, starts: list[int]) -> list[int]:
        """A `scan.Pick`: the dated lines the row's times come from, beside the scanner's `starts`."""
        out = []
        if lines_before == 0:
            pos = 0
            for _ in range(DATED_WALK):
                if pos >= len(block):
                    break
                if _dated(block, pos):
                    out.append(pos)
                    break
                pos = block.find(b"\n", pos) + 1
        fed = set(starts)
        for start in starts:
            before = _line_before(block, start)
            if before is None or before in fed or _dated(block, start):
                continue  # a run of fed lines takes its time from the line before the run
            for _ in range(DATED_WALK):
                if _dated(block, before):
                    out.append(before)
                    break
                before = _line_before(block, before)
                if before is None or before in fed:
                    break  # a fed line: the line before its run is walked from there
        return out

    def feed(self, rec: Record) -> list[Update]:
        if rec.time:
            self.first_time = self.first_time or rec.time
            self.times.note(rec.line, rec.time)
        if self.host is None and rec.host:
            self.host = rec.host
        updates = super().feed(rec)
        for u in updates:
            if (u.kind is UpdateKind.DIAGNOSIS and u.diagnosis is not None and u.diagnosis.root
                    and u.diagnosis.cause not in self.failed_at):
                self.failed_at[u.diagnosis.cause] = self.times.at(u.line)
        return updates


def _line_before(block: bytes, pos: int) -> int | None:
    """Where the line before the one at `pos` starts (None: that is the block's first line)."""
    return block.rfind(b"\n", 0, pos - 1) + 1 if pos > 0 else None


def _dated(block: bytes, pos: int) -> bool:
    """Whether the line of `block` that starts at `pos` carries a time."""
    from logsense.linecut import MAX_LINE_BYTES
    from logsense.normalize import Normalizer

    end = block.find(b"\n", pos)
    raw = block[pos : min(end if end >= 0 else len(block), pos + MAX_LINE_BYTES)].decode("utf-8", "replace")
    return any(rec.time for rec in Normalizer().feed(0, raw))


def row_from_stream(name: str, fp: BinaryIO, rules=None, classifier: Any = False) -> dict:
    """Analyze one log's text (UTF-8 bytes, as `as_text_bytes` gives them) as `analyze` reads it; its row."""
    from logsense.analysis import read_stream
    from logsense.model import HEALTHY

    p = _RowPipeline(rules if rules is not None else _rules(), _classifier() if classifier is False else classifier)
    read_stream(p, fp, name, pick=p.pick)
    times, first_time, failed_at, host = p.times, p.first_time, p.failed_at, p.host
    report = p.finish(name)
    root = report.root
    tl = p.timeline
    ready_time = next((ph.start for ph in report.phases if ph.ready), None) if tl.ready else None
    fail_time = None
    if root is not None:
        # one clock for every command (tail and history too): the time of the root cause's first evidence line
        fail_time = times.at(root.evidence[0].line) if root.evidence else failed_at.get(root.cause)
        fail_time = fail_time or tl.last_time
    f = report.facts
    return {
        "source": name,
        "host": host,
        "status": report.status.value,
        "cause": root.cause if root else (HEALTHY if tl.ready else None),
        "origin": root.origin.value if root else None,
        "rule": root.rule if root else None,
        "confidence": float(root.confidence) if root else None,
        "phase": report.phase,
        "time_to_failure": _elapsed(first_time, fail_time) if root else None,
        "time_to_ready": _elapsed(first_time, ready_time) if ready_time and not root else None,
        "fix": root.fixes[0].value if root and root.fixes else None,
        "nearest": root.nearest if root else None,
        "lines": report.lines,
        "server": f.get("server"),
        "server_version": f.get("server_version"),
        "gpu_name": f.get("gpu_name"),
        "model_arch": f.get("model_arch"),
        "error": None,
    }


def _elapsed(first: str | None, then: str | None) -> float | None:
    """Seconds from the log's first stamp to `then`. journalctl's short stamps carry no year (the normalizer
    gives them a placeholder one) while the server's own carry it: a pair of one of each is read in the
    year the log does print."""
    from logsense.logtime import PLACEHOLDER_YEAR, seconds_from, time_to
    from logsense.normalize import in_year

    if first and then and first.startswith(PLACEHOLDER_YEAR) != then.startswith(PLACEHOLDER_YEAR):
        year = (then if first.startswith(PLACEHOLDER_YEAR) else first)[:4]
        first, then = in_year(first, year), in_year(then, year)
    return time_to(0.0, seconds_from(first, then))  # on the clock that starts at the first stamp


def _text(fp: BinaryIO, name: str) -> BinaryIO:
    from logsense.sources.recorded import as_text_bytes

    buffered = fp if isinstance(fp, io.BufferedReader) else io.BufferedReader(fp)  # type: ignore[type-var]
    return as_text_bytes(buffered, name)


def row_from_bytes(name: str, data: bytes, rules=None) -> dict:
    """The row of a log given as bytes (plain or gzip): what a Dask bag or Spark partition holds."""
    try:
        return row_from_stream(name, _text(io.BytesIO(data), name), rules)
    except Exception as e:  # noqa: BLE001 - one bad log is a row that says so, not a failed run
        return _error_row(name, e)


def row_from_path(src: LogSource | str) -> dict:
    """The row of a log file, or of a zip member."""
    if isinstance(src, str):
        src = LogSource(src, src)
    try:
        if src.kind == "error":
            return _error_row(src.name, src.error or "cannot read")
        if src.kind == "zip":
            with zipfile.ZipFile(src.path) as z, z.open(src.member or "") as fp:
                return row_from_stream(src.name, _text(fp, src.name))  # type: ignore[arg-type]
        from logsense.sources.recorded import open_recorded

        fp, _ = open_recorded(src.path)
        try:
            return row_from_stream(src.name, fp)
        finally:
            fp.close()
    except Exception as e:  # noqa: BLE001
        return _error_row(src.name, e)
    finally:
        if src.kind == "spooled":
            with contextlib.suppress(OSError):
                os.unlink(src.path)


def rows(items: Iterable[tuple[str, bytes]]) -> Iterator[dict]:
    """(name, bytes) pairs to rows, the rules loaded once: a Spark mapPartitions function as it is."""
    rules = _rules()
    for name, data in items:
        yield row_from_bytes(name, data, rules)


def _error_row(name: str, e: Exception | str) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update(source=name, status="error", error=(e if isinstance(e, str) else f"{type(e).__name__}: {e}")[:300])
    return row


# --- many logs ---


def _tar_members(path: str, spool: str) -> Iterator[LogSource]:
    """A tar read front to back once (a .tar.gz has no random access): each log member is copied to a
    file in `spool` in blocks (memory stays bounded whatever its size) and read from there by a worker.
    A broken archive or member is an error row; the members before it keep theirs."""
    try:
        with tarfile.open(path, "r:*") as tar:
            for m in tar:
                if not (m.isfile() and looks_like_log(m.name)):
                    continue
                name = f"{path}!{m.name}"
                fd, tmp = tempfile.mkstemp(dir=spool, suffix=".log")
                try:
                    with os.fdopen(fd, "wb") as out:
                        fp = tar.extractfile(m)
                        if fp is not None:
                            shutil.copyfileobj(fp, out, 1 << 20)
                except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as e:
                    os.unlink(tmp)
                    yield LogSource(name, path, m.name, "error", f"archive member unreadable: {_why(e)}")
                    return
                yield LogSource(name, tmp, m.name, "spooled")
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as e:
        yield LogSource(path, path, None, "error", f"not a readable tar archive: {_why(e)}")


def _zip_members(path: str) -> Iterator[LogSource]:
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as e:
        yield LogSource(path, path, None, "error", f"not a readable zip archive: {_why(e)}")
        return
    for info in infos:
        if not info.is_dir() and looks_like_log(info.filename):
            yield LogSource(f"{path}!{info.filename}", path, info.filename, "zip")


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def tasks(paths: Iterable[str], spool: str) -> Iterator[LogSource]:
    """What to read, log by log: files, zip members, and tar members spooled into the dir `spool`."""
    for p in expand(paths):
        low = p.lower()
        if low.endswith(".zip"):
            yield from _zip_members(p)
        elif is_archive(low):
            yield from _tar_members(p, spool)
        else:
            yield LogSource(p, p)


def collect(paths: Iterable[str], jobs: int = 0, on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Every log's row, in input order; `jobs` worker processes (0: one per core, 1: none); `on_row` sees
    each row as it comes (a progress line)."""
    cores = os.cpu_count() or 1
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="logsense-stats-") as spool:
        todo = tasks(paths, spool)
        # Never more workers than cores or logs: `-j 100000` on three logs starts three.
        head = list(itertools.islice(todo, min(jobs or cores, cores)))
        jobs = max(1, len(head))
        todo = itertools.chain(head, todo)

        def done(row: dict) -> None:
            out.append(row)
            if on_row is not None:
                on_row(row)

        if jobs <= 1:
            for t in todo:
                done(row_from_path(t))
            return out
        pending: deque[Future] = deque()
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            for t in todo:
                pending.append(ex.submit(row_from_path, t))
                while len(pending) >= jobs * 4:  # bounded: at most this many spooled members on disk
                    done(pending.popleft().result())
            while pending:
                done(pending.popleft().result())
        return out


def frame(paths: Iterable[str] | str, jobs: int = 0, on_row: Callable[[dict], None] | None = None):
    """A pandas DataFrame, one row per log, columns as in COLUMNS (`jobs`, `on_row`: as for `collect`)."""
    import pandas as pd

    if isinstance(paths, (str, Path)):
        paths = [str(paths)]
    df = pd.DataFrame(collect([str(p) for p in paths], jobs, on_row), columns=COLUMNS)
    for col, kind in COLUMN_TYPES.items():
        if kind == "double":
            df[col] = pd.to_numeric(df[col], errors="coerce")
        elif kind == "bigint":
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    return df
