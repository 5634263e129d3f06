"""Following a log file like `tail -F`: rename rotation, copytruncate, a file that appears later.

`FileFollower.read(timeout)` returns the complete lines written since the last call, as
(line number, text). A partial last line is held until its newline arrives, or handed out
on its own after `partial_timeout` seconds without new bytes. After a rename rotation the
old file stays open for `grace` seconds and is read to its end, so lines that a writer
puts into it before reopening are not lost; a truncated file is read again from its start,
also when it was refilled past the old size between two looks (its head changed).
`position()` is what a restarted follower needs to go on without repeating or missing a line:
the file's identity (device, inode, a fingerprint of its head), the byte offset and the line.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Iterator

try:  # CPython's own SHA-256: `import hashlib` would first initialise OpenSSL, as logsense.cache says
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]  # Python 3.10, 3.11
except ImportError:
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]  # Python 3.12 on
    except ImportError:
        from hashlib import sha256 as _sha256

from logsense.errors import SourceError
from logsense.linecut import MAX_LINE_BYTES, LongLine
from logsense.sources.recorded import TextCodec, codec_of, source_error

POLL = 0.02  # seconds between looks at an idle file: the floor of the delay a new line sees
READ_CAP = 4 << 20  # bytes taken from one file per look, so a huge backlog does not stall the caller
SCAN_BLOCK = 1 << 20
# A file system that keeps whole-second times (2 s on FAT) dates a write up to this much too early.
MTIME_SLACK = 2.0
HEAD = 1024  # bytes of a file's start that identify its content (a truncation changes them)


class _Open:
    """A followed file while it is open: where reading stands in it, and the part line read so far."""

    __slots__ = ("fd", "ident", "offset", "pending", "pending_since", "last_data", "head", "line_start", "codec",
                 "codec_sure", "_print")

    def __init__(self, fd: int, ident: tuple[int, int], offset: int = 0, *, last_data: float = 0.0,
                 head: bytes = b"", line_start: int = 0, codec: TextCodec | None = None,
                 codec_sure: bool = False) -> None:
        self.fd = fd
        self.ident = ident  # (st_dev, st_ino)
        self.offset = offset  # bytes read from this file (pending included)
        self.pending = LongLine()  # the line being read, not yet ended by a newline
        self.pending_since = 0.0
        self.last_data = last_data
        self.head = head  # the file's first bytes as last seen
        self.line_start = line_start  # where the next line (the pending one) begins
        self.codec = codec if codec is not None else TextCodec()  # UTF-8, or UTF-16 told by its BOM
        self.codec_sure = codec_sure  # the codec was read from the file's first two bytes (a BOM is two)
        self._print: tuple[bytes, int, str] = (b"", -1, "")  # (head, length, fingerprint) last taken

    def head_print(self, n: int) -> tuple[int, str]:
        """(length, fingerprint) of the head's first `n` bytes; past the head every line has the same one."""
        head = self.head
        n = min(n, len(head))
        kept, at, digest = self._print
        if kept is not head or at != n:
            digest = fingerprint(head[:n])
            self._print = (head, n, digest)
        return n, digest


class Block:
    """Whole lines of a followed file taken at once: their bytes, where they begin, the first one's number."""

    __slots__ = ("data", "offset", "first_line", "_file")

    def __init__(self, data: bytes, offset: int, first_line: int, file: _Open) -> None:
        self.data = data
        self.offset = offset
        self.first_line = first_line
        self._file = file

    def text(self, start: int, end: int) -> str:
        """The line data[start:end] (without its newline) as `read` gives it: decoded, an overlong one cut."""
        if end - start > MAX_LINE_BYTES:
            long = LongLine()
            long.add(memoryview(self.data)[start:end])
            return long.take_text(self._file.codec.decode, self.offset + start == 0)
        return self._file.codec.decode(self.data[start:end], self.offset + start == 0)

    def where(self, start: int, line: int) -> dict:
        """The position of the line that begins at data[start] (line number `line`), as `read` records it."""
        f = self._file
        head_len, head = f.head_print(self.offset + start)
        return {"dev": f.ident[0], "ino": f.ident[1], "offset": self.offset + start, "line": line - 1,
                "head_len": head_len, "head": head}


def fingerprint(head: bytes) -> str:
    return _sha256(head).hexdigest()[:32]


def read_head(fd: int, size: int = HEAD) -> bytes:
    try:
        return os.pread(fd, size, 0)
    except OSError:
        return b""


class FileFollower:
    """Follows one path; survives rotation by rename and by copytruncate, and a path that is not there yet."""

    def __init__(
        self,
        path: str,
        offset: int | None = 0,
        line: int = 0,
        ident: tuple[int, int] | None = None,
        follow: bool = True,
        partial_timeout: float = 1.0,
        grace: float = 2.0,
        head: tuple[int, str] | None = None,
    ) -> None:
        """offset None starts at the end of the file; ident (dev, inode) names the file the offset is in,
        head (length, fingerprint) its content: a file with another head was truncated and refilled."""
        self.path = os.path.abspath(path)
        self.follow = follow
        self.partial_timeout = partial_timeout
        self.grace = grace
        self.line = line
        self.notices: list[str] = []  # what happened to the file (rotated, truncated, appeared), for --verbose
        self.starts: dict[int, dict] = {}  # line number -> where it begins, for the lines of the last read
        self._cur: _Open | None = None
        self._old: list[_Open] = []
        self._eof = False
        self.caught_up = False  # the last look read to the end of what the file held then
        self._grew_live = False  # the file grew after a look had caught up: it is being written as we follow
        self._open_first(offset, ident, head)

    # -- opening -----------------------------------------------------------------------------

    def _open_first(self, offset: int | None, ident: tuple[int, int] | None, head: tuple[int, str] | None) -> None:
        st = _stat(self.path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{self.path}: is a directory")
        if ident is not None and (st is None or (st.st_dev, st.st_ino) != ident):
            # the file was rotated since the offset was taken: finish the old one first, if it is still there
            old = _find_ident(os.path.dirname(self.path), ident)
            if old is not None and _same_head(old, head):
                self._cur = self._open(old, offset or 0)
                self.notices.append(f"{old}: reading the rest of the rotated file first")
                return
            self.notices.append(f"{self.path}: the file of the saved position is gone; reading from its start")
            offset = 0
        elif ident is not None and not _same_head(self.path, head):
            self.notices.append(f"{self.path}: truncated and written again since the saved position; "
                                "reading from its start")
            offset = 0
        if st is None:
            if not self.follow:
                raise SourceError(f"{self.path}: no such file")
            self.notices.append(f"{self.path}: does not exist yet; waiting for it")
            return
        if offset is None:
            offset = st.st_size
        elif offset > st.st_size:
            self.notices.append(f"{self.path}: shorter than the saved position (truncated); reading from its start")
            offset = 0
        self._cur = self._open(self.path, offset)

    def _open(self, path: str, offset: int) -> _Open:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise source_error(path, e) from None
        st = os.fstat(fd)
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        now = time.monotonic()
        head = read_head(fd)
        return _Open(fd, (st.st_dev, st.st_ino), offset, last_data=now, head=head, line_start=offset,
                     codec=codec_of(head), codec_sure=len(head) >= 2)

    def _try_open(self) -> _Open | None:
        """The file now at the path, from its start; None while there is none."""
        if _stat(self.path) is None:
            return None
        try:
            return self._open(self.path, 0)
        except SourceError:
            if _stat(self.path) is None:
                return None  # rotated away between the look and the open: try again next time
            raise

    # -- reading -----------------------------------------------------------------------------

    @property
    def at_end(self) -> bool:
        """True when the last look found nothing new and no partial line is held (for --no-follow)."""
        return self._eof and not self._old and (self._cur is None or not self._cur.pending)

    def read(self, timeout: float = 0.0) -> list[tuple[int, str]]:
        """The complete lines that are there now; when there are none, wait up to `timeout` seconds for some."""
        deadline = time.monotonic() + timeout
        self.starts.clear()
        while True:
            out = self._look()
            if out or not self.follow:
                return out
            left = deadline - time.monotonic()
            if left <= 0:
                return out
            time.sleep(min(POLL, left))

    def _look(self) -> list[tuple[int, str]]:
        now = time.monotonic()
        out: list[tuple[int, str]] = []
        for old in list(self._old):
            got = self._drain(old, out, now)
            if not got and (now - old.last_data >= self.grace or not self.follow):
                self._flush_partial(old, out)
                os.close(old.fd)
                self._old.remove(old)
        if self._cur is None:
            self._cur = self._try_open()
            if self._cur is not None:
                self.notices.append(f"{self.path}: appeared")
        got = False
        if self._cur is not None:
            cur = self._cur
            size = os.fstat(cur.fd).st_size
            head = read_head(cur.fd) if cur.offset else cur.head
            if size < cur.offset or (cur.offset and head[: len(cur.head)] != cur.head):
                # copytruncate (or `> file`), perhaps refilled past the old size since the last look:
                # whatever is in it now was written after the truncation
                self.notices.append(f"{self.path}: truncated; reading from its start")
                self._flush_partial(cur, out)
                os.lseek(cur.fd, 0, os.SEEK_SET)
                cur.offset = cur.line_start = 0
                cur.codec, cur.codec_sure = codec_of(head), len(head) >= 2
            if cur.offset:
                cur.head = head
            got = self._drain(cur, out, now)
            if not got:
                st = _stat(self.path)
                if st is not None and (st.st_dev, st.st_ino) != cur.ident:
                    new = self._try_open()
                    if new is not None:
                        # renamed away and a new file is in its place: what the writer put into the old
                        # one before it reopened comes first; the old one is kept open for a while
                        self._drain(cur, out, now)
                        self.notices.append(f"{self.path}: rotated; following the new file")
                        self._old.append(cur)
                        self._cur = new
                        got = self._drain(new, out, now)
                elif cur.pending and now - cur.pending_since >= self.partial_timeout:
                    self._flush_partial(cur, out)
        self._eof = not got
        self._grew_live = self._grew_live or (got and self.caught_up)
        now_open = self._cur
        self.caught_up = now_open is None or os.fstat(now_open.fd).st_size <= now_open.offset
        if not self.follow and self._eof:
            for f in [*self._old, *([self._cur] if self._cur else [])]:
                self._flush_partial(f, out)
        return out

    def idle_for(self) -> float | None:
        """Seconds the file has surely not grown, by its time of last change; None when that is not known.

        Known only while the follower is caught up on one file, holding no partial line, and has not
        seen the file grow as it followed it: a log written long ago needs no quiet time waited out,
        but a file written now is timed by what the follower sees, not by a clock it cannot check.
        """
        cur = self._cur
        if cur is None or self._old or cur.pending or self._grew_live or not self.caught_up:
            return None
        return max(time.time() - os.fstat(cur.fd).st_mtime - MTIME_SLACK, 0.0)

    def _drain(self, f: _Open, out: list[tuple[int, str]], now: float) -> bool:
        """Read what is new in one file; True when there were bytes."""
        try:
            data = os.read(f.fd, READ_CAP)
        except OSError as e:
            raise SourceError(f"{self.path}: cannot read: {e.strerror or e}") from None
        if not data:
            return False
        base = f.offset
        if len(f.head) < HEAD:
            f.head = read_head(f.fd)
        if not f.codec_sure:  # a file opened (nearly) empty: its first bytes say how it is stored
            f.codec, f.codec_sure = codec_of(f.head), len(f.head) >= 2
        codec = f.codec
        if (base + len(data)) % codec.unit:  # half a UTF-16 character (still being written): read it next time
            os.lseek(f.fd, -1, os.SEEK_CUR)
            data = data[:-1]
        if not data:
            return False
        if len(data) == READ_CAP and codec.encoding is None:
            # more is waiting: end this read at a line's end, so that the next look can take whole blocks
            cut = data.rfind(b"\n")
            if 0 <= cut < len(data) - 1:
                os.lseek(f.fd, cut + 1 - len(data), os.SEEK_CUR)
                data = data[: cut + 1]
        f.offset += len(data)
        f.last_data = now
        step = len(codec.newline)
        start = 0
        while True:
            nl = codec.find_newline(data, start, base)
            if nl < 0:
                if start < len(data):
                    f.pending.add(memoryview(data)[start:])
                    f.pending_since = now  # the quiet time of a partial line counts from its last byte
                break
            self.line += 1
            first = f.line_start == 0
            if f.pending or nl - start > MAX_LINE_BYTES:
                f.pending.add(memoryview(data)[start:nl])
                text = f.pending.take_text(codec.decode, first)
            else:
                text = codec.decode(data[start:nl], first)
            self._began(f)
            f.line_start = base + nl + step
            out.append((self.line, text))
            start = nl + step
        return True

    def unread_end(self) -> int | None:
        """The size of the file being read, when it holds bytes not read yet (None: nothing, or no file)."""
        f = self._cur
        if f is None or self._old:
            return None
        try:
            size = os.fstat(f.fd).st_size
        except OSError:
            return None
        return size if size > f.offset else None

    def take_block(self, end: int, size: int) -> Block | None:
        """Up to `size` bytes of whole UTF-8 lines of the file, before byte `end`, as if `read` had handed them out.

        For reading a backlog by blocks (tail's catch-up). None when the next bytes are not for that:
        nothing whole before `end`, another codec, a partial line held, a rotated file still open, a
        line longer than `size`, or a file that changed under the reader.
        """
        f = self._cur
        if f is None or self._old or f.pending or f.codec.encoding is not None or f.offset >= end:
            return None
        try:
            data = os.pread(f.fd, min(size, end - f.offset), f.offset)
        except OSError:
            return None
        cut = data.rfind(b"\n")
        if cut < 0 or (not f.offset and data[:2] in (b"\xff\xfe", b"\xfe\xff")):
            return None
        if f.offset and read_head(f.fd)[: len(f.head)] != f.head:
            return None  # truncated and written again: `read` notices it and starts over
        data = data[: cut + 1]
        if len(f.head) < HEAD:
            f.head = read_head(f.fd)
        block = Block(data, f.offset, self.line + 1, f)
        f.offset += len(data)
        f.line_start = f.offset
        os.lseek(f.fd, f.offset, os.SEEK_SET)
        f.last_data = time.monotonic()
        self.line += data.count(b"\n")
        return block

    def skip_to(self, offset: int, line: int) -> None:
        """Read on from byte `offset` of the open file, where line `line` begins (lines before it are not read)."""
        f = self._cur
        if f is None or self._old or f.pending:
            raise SourceError(f"{self.path}: cannot move the reading position")
        f.offset = f.line_start = offset
        os.lseek(f.fd, offset, os.SEEK_SET)
        self.line = line - 1
        self._eof = False

    def _flush_partial(self, f: _Open, out: list[tuple[int, str]]) -> None:
        if f.pending:
            self.line += 1
            first = f.line_start == 0
            self._began(f)
            f.line_start = f.offset
            out.append((self.line, f.pending.take_text(f.codec.decode, first)))

    def _began(self, f: _Open) -> None:
        head_len, head = f.head_print(f.line_start)
        self.starts[self.line] = {"dev": f.ident[0], "ino": f.ident[1], "offset": f.line_start, "line": self.line - 1,
                                  "head_len": head_len, "head": head}

    # -- position ----------------------------------------------------------------------------

    def position(self) -> dict:
        """Where the lines handed out so far end: file identity, byte offset and line count."""
        f = self._cur
        if f is None:
            return {"path": self.path, "dev": None, "ino": None, "offset": 0, "line": self.line,
                    "head_len": 0, "head": fingerprint(b"")}
        offset = f.offset - f.pending.size
        head = f.head[:offset]
        return {
            "path": self.path,
            "dev": f.ident[0],
            "ino": f.ident[1],
            "offset": offset,
            "line": self.line,
            "head_len": len(head),
            "head": fingerprint(head),
        }

    def close(self) -> None:
        for f in [*self._old, *([self._cur] if self._cur else [])]:
            try:
                os.close(f.fd)
            except OSError:
                pass
        self._old.clear()
        self._cur = None


def last_line_offset(path: str, literals: list[str], accept, limit: int = 256 << 20,
                     before: int | None = None) -> int | None:
    """The byte offset of the last line holding one of `literals` for which accept(text) is true (of those that
    start before byte `before`, when given); None when there is no such line."""
    found = last_line(path, literals, accept, limit, before)
    return found[0] if found is not None else None


def last_line(path: str, literals: list[str], accept, limit: int = 256 << 20,
              before: int | None = None) -> tuple[int, str] | None:
    """The byte offset and the text of the last line holding one of `literals` for which accept(text) is true
    (of those that start before byte `before`, when given).

    Reads the file backwards in blocks (at most `limit` bytes), so the latest startup in a big
    log is found without reading the whole file. None when there is no such line.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        codec = codec_of(read_head(fd, 2))
        encoded = [lit.encode(codec.encoding or "utf-8") for lit in literals]
        step = len(codec.newline)
        end = os.fstat(fd).st_size if before is None else before
        lo_limit = max(0, end - limit)
        lo_limit += lo_limit % codec.unit  # a line starts on a whole character
        pos = end
        carry = b""  # the start of the line that straddles the block boundary above
        # over many blocks, one multi-literal search a block beats a search for each literal
        scanner = None
        if codec.encoding is None and end - lo_limit > SCAN_BLOCK << 2:
            from logsense.scan import search_backend  # the scanner's backends (hyperscan, Aho-Corasick)

            scanner = search_backend(encoded, [])
        while pos > lo_limit:
            start = max(lo_limit, pos - SCAN_BLOCK)
            block = os.pread(fd, pos - start, start) + carry
            # only whole lines: the first (partial) line of the block is carried to the next block
            cut = codec.find_newline(block, 0, start) + step if start > lo_limit else 0
            if cut < step and start > lo_limit:
                carry = block
                pos = start
                continue
            body = block[cut:]
            found = _occurrences(body, encoded) if scanner is None else scanner.offsets(body)
            hit = _last_found(body, found, accept, codec, start + cut)
            if hit is not None:
                return start + cut + hit[0], hit[1]
            carry = block[:cut]
            pos = start
        return None
    finally:
        os.close(fd)


def _occurrences(body: bytes, literals: list[bytes]) -> Iterator[int]:
    """Where each of `literals` occurs in `body`: a search for each (no scanner is loaded for a few blocks)."""
    for lit in literals:
        i = body.find(lit)
        while i >= 0:
            yield i
            i = body.find(lit, i + 1)


def _last_found(body: bytes, found: Iterable[int], accept, codec: TextCodec, at: int) -> tuple[int, str] | None:
    """Where the last line of `body` (whole lines, at file offset `at`) that holds one of the offsets a search
    `found` literals at and is accepted starts, and its text."""
    step = len(codec.newline)
    tried = len(body) + 1  # where the last line tried starts: an offset at or after it is in a line tried
    for i in sorted(found, reverse=True):
        if i >= tried:
            continue
        ls = codec.rfind_newline(body, i, at)
        ls = ls + step if ls >= 0 else 0
        le = codec.find_newline(body, i, at)
        text = codec.decode(body[ls : le if le >= 0 else len(body)], first=at + ls == 0)
        if accept(text):
            return ls, text
        tried = ls
    return None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except OSError as e:
        raise SourceError(f"{path}: cannot stat: {e.strerror or e}") from None


def _same_head(path: str, head: tuple[int, str] | None) -> bool:
    """True when the file starts with the bytes the fingerprint was taken of (or there is none)."""
    if head is None:
        return True
    n, want = head
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        got = read_head(fd, n)
    finally:
        os.close(fd)
    return len(got) == n and fingerprint(got) == want


def count_lines(path: str, offset: int) -> int:
    """The number of lines that end before `offset` (the line number a reader starting there follows)."""
    n = 0
    try:
        with open(path, "rb") as fh:
            codec = codec_of(fh.read(2))
            fh.seek(0)
            left = offset
            at = 0
            while left > 0:
                block = fh.read(min(SCAN_BLOCK, left))
                if not block:
                    break
                if codec.unit == 1:
                    n += block.count(b"\n")
                else:
                    i = codec.find_newline(block, 0, at)
                    while i >= 0:
                        n += 1
                        i = codec.find_newline(block, i + 1, at)
                left -= len(block)
                at += len(block)
    except OSError:
        return 0
    return n


def _find_ident(directory: str, ident: tuple[int, int]) -> str | None:
    try:
        with os.scandir(directory or ".") as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) == ident and stat.S_ISREG(st.st_mode):
                    return e.path
    except OSError:
        return None
    return None
