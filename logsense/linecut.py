"""An overlong line, bounded: its start and its end are kept, and the cut between them is said.

A 50 MB line must not cost 50 MB, and an error at its end must still be read: every reader keeps
the first and the last KEEP bytes of a line longer than MAX_LINE_BYTES, joined by a note that
names how much was cut (`cut_note`), so the evidence shows the line was cut.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_LINE_BYTES = 1 << 20  # a longer line is cut to its start and its end
KEEP = MAX_LINE_BYTES // 2 - 64  # bytes kept of each end: the two and the note fit in MAX_LINE_BYTES


def cut_note(cut: int, unit: str = "bytes") -> str:
    """What stands where the middle of an overlong line was left out."""
    return f" …[{cut} {unit} of this line cut by logsense]… "


def cut_text(text: str, limit: int) -> str:
    """`text` within about `limit` characters: its start and its end, with the note between."""
    if len(text) <= limit:
        return text
    keep = max(limit // 2 - 64, 1)
    return text[:keep] + cut_note(len(text) - 2 * keep, "characters") + text[-keep:]


class LongLine:
    """The bytes of one line as they come, held within MAX_LINE_BYTES."""

    __slots__ = ("head", "tail", "cut", "size")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = -1  # bytes left out of the middle; -1 while the line is short enough to keep whole
        self.size = 0  # bytes of the line so far, kept or not

    def __bool__(self) -> bool:
        return self.size > 0

    def add(self, data: bytes | bytearray | memoryview) -> None:
        self.size += len(data)
        if self.cut < 0:
            if len(self.head) + len(data) <= MAX_LINE_BYTES:
                self.head += data
                return
            self.tail = self.head[KEEP:]
            del self.head[KEEP:]
            self.cut = 0
        self.tail += data
        if len(self.tail) > KEEP:
            self.cut += len(self.tail) - KEEP
            del self.tail[:-KEEP]

    def take(self) -> tuple[bytes, int, bytes]:
        """(start, bytes cut, end) of the line, and the holder is empty again; end is b'' when nothing was cut."""
        out = (bytes(self.head), self.cut, bytes(self.tail))
        self.head.clear()
        self.tail.clear()
        self.cut, self.size = -1, 0
        return out

    def take_bytes(self) -> bytes:
        """The line as UTF-8 bytes, the note in place of its cut middle."""
        head, cut, tail = self.take()
        return head if cut < 0 else b"".join((head, cut_note(cut).encode(), tail))

    def take_text(self, decode: Callable[[bytes, bool], str], first: bool = False) -> str:
        """The line decoded by `decode(bytes, first)` (`first`: the file's first line), the note in place of its
        cut middle."""
        head, cut, tail = self.take()
        return decode(head, first) if cut < 0 else decode(head, first) + cut_note(cut) + decode(tail, False)
