"""Recorded logs: a file (plain or gzip, detected by its magic bytes) or stdin, as numbered lines."""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from logsense.errors import SourceError

BLOCK = 1 << 20
MAX_LINE_BYTES = 1 << 20  # a longer line is cut here: a 50 MB line must not cost 50 MB


def read_lines(fp: BinaryIO, name: str = "<input>") -> Iterator[tuple[int, str]]:
    """Yield (line number, text) from a binary stream; invalid UTF-8 is replaced, huge lines are cut."""
    line_no = 0
    pending = bytearray()
    overflow = False
    while True:
        try:
            block = fp.read(BLOCK)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise SourceError(f"{name}: compressed data is truncated or corrupt ({e})") from None
        except OSError as e:
            raise SourceError(f"{name}: cannot read: {e.strerror or e}") from None
        if not block:
            break
        start = 0
        while True:
            nl = block.find(b"\n", start)
            if nl < 0:
                room = MAX_LINE_BYTES - len(pending)
                if room > 0:
                    pending += block[start : start + room]
                if len(block) - start > room:
                    overflow = True
                break
            if not overflow:
                room = MAX_LINE_BYTES - len(pending)
                pending += block[start : min(nl, start + room)]
            line_no += 1
            yield line_no, bytes(pending).decode("utf-8", "replace")
            pending.clear()
            overflow = False
            start = nl + 1
    if pending:
        line_no += 1
        yield line_no, bytes(pending).decode("utf-8", "replace")


def source_error(path: str, e: OSError) -> SourceError:
    """The one-line message for a file that cannot be opened."""
    if isinstance(e, FileNotFoundError):
        return SourceError(f"{path}: no such file")
    if isinstance(e, PermissionError):
        return SourceError(f"{path}: permission denied")
    return SourceError(f"{path}: cannot open: {e.strerror or e}")


def open_recorded(path: str) -> tuple[BinaryIO, str]:
    """Open a recorded log for reading ('-' is stdin); gzip is detected, not guessed from the name."""
    if path == "-":
        raw: BinaryIO = sys.stdin.buffer
        name = "<stdin>"
    else:
        name = path
        try:
            st = os.stat(path)
        except OSError as e:
            raise source_error(path, e) from None
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{path}: is a directory (give a log file, or use `logsense check` for a corpus)")
        try:
            raw = open(path, "rb")  # noqa: SIM115 - the caller closes it
        except OSError as e:
            raise source_error(path, e) from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    try:
        magic = buffered.peek(2)[:2]
    except OSError as e:
        raise SourceError(f"{name}: cannot read: {e.strerror or e}") from None
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=buffered), name  # type: ignore[return-value]
    return buffered, name
