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

from logsense import re_cache
from logsense.errors import SourceError
from logsense.linecut import MAX_LINE_BYTES, LongLine
from logsense.model import Value, _set
from logsense.servers import NAMES

BLOCK = 1 << 20


def read_lines(fp: BinaryIO, name: str = "<input>") -> Iterator[tuple[int, str]]:
    """Yield (line number, text) from a binary stream; invalid UTF-8 is replaced, huge lines keep both ends."""
    line_no = 0
    line = LongLine()
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
                line.add(memoryview(block)[start:])
                break
            line_no += 1
            if line or nl - start > MAX_LINE_BYTES:
                line.add(memoryview(block)[start:nl])
                yield line_no, line.take_bytes().decode("utf-8", "replace")
            else:
                yield line_no, block[start:nl].decode("utf-8", "replace")
            start = nl + 1
    if line:
        line_no += 1
        yield line_no, line.take_bytes().decode("utf-8", "replace")


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
            raw = open(path, "rb")  # the caller closes it
        except OSError as e:
            raise source_error(path, e) from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[type-var]
    return as_text_bytes(buffered, name, require_lines=True), name


# Compressed formats, told by their magic bytes (never by the file name).
_ZSTD, _XZ, _BZ2 = b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\x00", b"BZh"
_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


class TextCodec(Value):
    """How a log file stores its text: UTF-8 (`encoding` None), or UTF-16 told by its byte-order mark.

    Recorded logs (`as_text_bytes`) and followed files (`tail FILE`) decode through it, so both
    read a Windows-saved log the same way.
    """

    __slots__ = ("encoding",)
    encoding: str | None

    def __init__(self, encoding: str | None = None) -> None:
        _set(self, "encoding", encoding)

    @property
    def newline(self) -> bytes:
        return "\n".encode(self.encoding) if self.encoding else b"\n"

    @property
    def unit(self) -> int:
        """Bytes per code unit: a line ends on a multiple of it."""
        return 2 if self.encoding else 1

    def find_newline(self, data: bytes, start: int, at: int = 0) -> int:
        """Where the next line end is in `data` from `start` (-1: none); `at`: the file offset of data[0]."""
        nl = self.newline
        i = data.find(nl, start)
        while i >= 0 and (at + i) % self.unit:
            i = data.find(nl, i + 1)  # the newline's bytes across two characters
        return i

    def rfind_newline(self, data: bytes, end: int, at: int = 0) -> int:
        """Where the last line end that lies wholly before `end` is in `data` (-1: none)."""
        nl = self.newline
        i = data.rfind(nl, 0, end)
        while i >= 0 and (at + i) % self.unit:
            i = data.rfind(nl, 0, i + len(nl) - 1)
        return i

    def decode(self, chunk: bytes, first: bool = False) -> str:
        """One line's bytes as text (`first`: the file's first line, whose byte-order mark is dropped)."""
        if self.encoding is None:
            return chunk.decode("utf-8", "replace")
        text = chunk.decode(self.encoding, "replace")
        return text[1:] if first and text.startswith("\ufeff") else text

    def incremental(self):
        """A decoder for a stream of the file's bytes, in pieces cut anywhere."""
        import codecs

        return codecs.getincrementaldecoder(self.encoding or "utf-8")("replace")


def codec_of(head: bytes) -> TextCodec:
    """The codec of a file that starts with `head` (its first two bytes or more)."""
    return TextCodec(_BOMS.get(head[:2]))


def as_text_bytes(fp: BinaryIO, name: str, *, require_lines: bool = False) -> BinaryIO:
    """The log's lines as UTF-8 bytes ending in \\n, whatever the file holds.

    gzip, bzip2 and xz are decompressed (zstd is refused: no reader in the standard library),
    UTF-16 with a byte-order mark is decoded, and a log whose lines end in a lone \\r (no \\n in
    its first 64 KiB) has them turned into \\n: the rules and the block scanner then see the same
    text, line by line. `require_lines`: a log with no line of log in it is a SourceError.
    """
    buffered = fp if hasattr(fp, "peek") else io.BufferedReader(fp)  # type: ignore[type-var]
    head = _peek(buffered, 8, name)
    if head[:2] == b"\x1f\x8b":
        # mode given: else GzipFile takes `buffered`'s, an int (a GzipFile's own) when it reads a .gz inside a .gz
        return as_text_bytes(io.BufferedReader(gzip.GzipFile(fileobj=buffered, mode="rb")), name, require_lines=require_lines)
    if head[:3] == _BZ2 and head[3:4].isdigit():
        import bz2

        return as_text_bytes(io.BufferedReader(bz2.BZ2File(buffered)), name, require_lines=require_lines)
    if head[:6] == _XZ:
        import lzma

        return as_text_bytes(io.BufferedReader(lzma.LZMAFile(buffered)), name, require_lines=require_lines)
    if head[:4] == _ZSTD:
        raise SourceError(f"{name}: zstd-compressed; decompress it first (zstd -dc {name} | logsense analyze -)")
    codec = codec_of(head)
    if codec.encoding is not None:
        return as_text_bytes(io.BufferedReader(_Recoded(buffered, codec, name), BLOCK), name,
                             require_lines=require_lines)
    start, buffered = _head(buffered, 1 << 16, name)
    if require_lines and len(start) < 1 << 16 and not has_log_lines(start):
        raise SourceError(_no_lines(name, start))
    if b"\r" in start and b"\n" not in start:
        return io.BufferedReader(_Recoded(buffered, None, name), BLOCK)
    width = wrap_width(start)
    if width is not None:
        return io.BufferedReader(_Unwrapped(buffered, width, name), BLOCK)
    return buffered


def has_log_lines(text: bytes) -> bool:
    """Whether `text` holds a line of log: not only blank lines and journalctl's own ("-- No entries --")."""
    from logsense.normalize import is_journal_meta

    lines = (line.strip().decode("utf-8", "replace") for line in text.splitlines())
    return any(line and not is_journal_meta(line) for line in lines)


def _no_lines(name: str, text: bytes) -> str:
    if b"No entries" in text or name == "<stdin>":
        return (f"{name}: no log lines (from `journalctl -u UNIT`? is the unit name right: "
                f"`systemctl list-units --all {' '.join(repr(n + '*') for n in NAMES)}`)")
    return f"{name}: no log lines (the file is empty or blank)"


def wrap_width(sample: bytes) -> int | None:
    """The terminal width a pasted log was wrapped at (tmux `capture-pane` without -J), if it was.

    A wrapped log has several different lines of exactly the longest length, each followed by the
    rest of its text; a log as written has its longest lines unlike each other and each followed by
    a line that starts as they do (a prefix, a timestamp).
    """
    lines = [line.rstrip(b"\r").decode("utf-8", "replace") for line in sample.split(b"\n")[:-1]]
    if len(lines) < 4:
        return None
    width = max(map(len, lines))  # in characters, as a terminal counts (nearly: wide characters aside)
    if width < 60:
        return None
    # a traceback's frame lines are alike in length and followed by unlike lines (their indented code): not
    # a wrap; a piece of a wrapped frame can look whole ("..., in init_cuda_"), but its rest is not indented
    at = [i for i, line in enumerate(lines[:-1])
          if len(line) == width and not (_WHOLE_FRAME.match(line) and lines[i + 1][:1].isspace())]
    if len({lines[i] for i in at}) < 3:
        return None
    alike = sum(1 for i in at if lines[i + 1][:4] == lines[i][:4])
    return width if alike * 5 <= len(at) else None


_WHOLE_FRAME = re_cache.compile(r'\s*File ".+", line \d+, in [\w<>.]+$')


def _peek(fp: BinaryIO, n: int, name: str) -> bytes:
    try:
        return fp.peek(n)[:n]  # type: ignore[attr-defined]
    except (EOFError, zlib.error, gzip.BadGzipFile, lzma_errors()) as e:
        raise SourceError(f"{name}: compressed data is truncated or corrupt ({e})") from None
    except OSError as e:
        raise SourceError(f"{name}: cannot read: {e.strerror or e}") from None


def _head(fp: BinaryIO, n: int, name: str) -> tuple[bytes, BinaryIO]:
    """The first `n` bytes of `fp` (fewer only when it is shorter), and the stream to read it from now on.

    A peek gives what the reader has buffered, one read's worth (4 or 8 KiB, or what a pipe held): a
    decision on the first 64 KiB made on it would depend on how the log was opened. A file that can
    seek is read and sought back (it stays a plain file, which the block scanner reads again by place);
    any other stream gets a buffer that holds the whole head.
    """
    head = _peek(fp, n, name)
    if len(head) >= n:
        return head, fp
    try:
        if isinstance(getattr(fp, "raw", None), io.FileIO) and fp.seekable():
            at = fp.tell()
            head = fp.read(n)
            fp.seek(at)
            return head, fp
    except OSError as e:
        raise SourceError(f"{name}: cannot read: {e.strerror or e}") from None
    wide = io.BufferedReader(fp, n)  # type: ignore[type-var]
    return _peek(wide, n, name), wide


def lzma_errors() -> type[Exception]:
    import lzma

    return lzma.LZMAError


class _Rewritten(io.RawIOBase):
    """A byte stream made from another one block at a time; a subclass says how a block is rewritten."""

    def __init__(self, inner: BinaryIO, name: str) -> None:
        self.inner, self.name = inner, name
        self.pending = b""

    def readable(self) -> bool:
        return True

    def rewrite(self, chunk: bytes) -> bytes | None:
        """What `chunk` (b"" once the input has ended) gives, or None when nothing is left."""
        raise NotImplementedError

    def readinto(self, b) -> int:
        while not self.pending:
            try:
                chunk = self.inner.read(BLOCK)
            except (EOFError, zlib.error, lzma_errors()) as e:
                raise SourceError(f"{self.name}: compressed data is truncated or corrupt ({e})") from None
            data = self.rewrite(chunk)
            if data is None:
                return 0
            self.pending = data
        n = min(len(b), len(self.pending))
        b[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


class _Unwrapped(_Rewritten):
    """A byte stream whose lines of exactly `width` bytes (a terminal's wrap) are joined to the next line."""

    def __init__(self, inner: BinaryIO, width: int, name: str) -> None:
        super().__init__(inner, name)
        self.width = width
        self.partial = b""  # the last line read, not yet ended

    def rewrite(self, chunk: bytes) -> bytes | None:
        if not chunk:
            rest, self.partial = self.partial, b""
            return rest or None
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        out = []
        for line in lines:
            bare = line.rstrip(b"\r")
            wrapped = len(bare) >= self.width and len(bare.decode("utf-8", "replace")) == self.width
            out.append(bare if wrapped else line + b"\n")
        return b"".join(out)


class _Recoded(_Rewritten):
    """A byte stream decoded by `codec` (None: UTF-8 kept) to UTF-8, with lone \\r line ends made \\n."""

    def __init__(self, inner: BinaryIO, codec: TextCodec | None, name: str) -> None:
        super().__init__(inner, name)
        self.decoder = codec.incremental() if codec is not None else None
        self.first = True

    def rewrite(self, chunk: bytes) -> bytes | None:
        if self.decoder is not None:
            text = self.decoder.decode(chunk, final=not chunk)
            if self.first and text.startswith("\ufeff"):
                text = text[1:]
            self.first = False
            data = text.encode("utf-8", "replace")
        else:
            data = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return None if not chunk and not data else data
