"""Styled lines to a terminal or a pipe, without rich: the analyze report and tail's view are drawn here.

Every piece of text is cleaned of control, bidi and zero-width characters before it is written;
styles become standard SGR codes, and only on a terminal (or with FORCE_COLOR). Anything else
(a rich Table or Text) is handed to rich, imported only then.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any

from logsense.normalize import clean

if TYPE_CHECKING:
    from rich.console import Console

PIPED_WIDTH = 1000  # piped output is read by programs: rows are never wrapped or cut at 80 columns
TAB_SIZE = 8

ATTRIBUTES = {"bold": 1, "dim": 2, "italic": 3, "underline": 4}
COLOURS = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35, "cyan": 36, "white": 37}
RESET = "\x1b[0m"


class Text:
    """Text in styled pieces: the part of rich.text.Text the analyze report and tail's view use.

    The style given to the constructor is the whole text's; each appended piece's style is laid over it.
    """

    __slots__ = ("style", "_pieces")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.style = style
        self._pieces: list[tuple[str, str]] = [(text, "")] if text else []

    def append(self, text: str, style: str | None = None) -> Text:
        if text:
            self._pieces.append((text, style or ""))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self._pieces)

    def __len__(self) -> int:
        return sum(len(text) for text, _ in self._pieces)

    def __str__(self) -> str:
        return self.plain

    def truncate(self, max_width: int) -> None:
        """Keep the first `max_width` terminal cells (a wide character cut in half becomes a space)."""
        kept: list[tuple[str, str]] = []
        room = max_width
        for text, style in self._pieces:
            width = cell_len(text)
            if width <= room:
                kept.append((text, style))
                room -= width
                continue
            cut = []
            for ch in text:
                w = char_width(ch)
                if w > room:
                    break
                cut.append(ch)
                room -= w
            kept.append(("".join(cut) + " " * room, style))
            break
        self._pieces = [(text, style) for text, style in kept if text]

    def pieces(self) -> list[tuple[str, str]]:
        """(text, style) pairs, each style the text's own with the piece's laid over it."""
        if not self.style:
            return list(self._pieces)
        return [(text, f"{self.style} {style}" if style else self.style) for text, style in self._pieces]


def char_width(ch: str) -> int:
    """The cells a character takes on a terminal: 2 for East Asian wide ones, 0 for combining and format ones."""
    if ch.isascii():
        return 1
    import unicodedata  # only for text that is not ASCII

    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 2
    return 0 if unicodedata.category(ch) in ("Mn", "Me", "Cf") else 1


def cell_len(text: str) -> int:
    return len(text) if text.isascii() else sum(char_width(ch) for ch in text)


class Terminal:
    """The console every command writes with: analyze's and tail's lines are written here, other renderables
    (rich tables and text) by a rich console over the same file, with the same colour decisions and width."""

    def __init__(self, file: IO[str], width: int = PIPED_WIDTH, colour: bool = False, styles: bool | None = None,
                 is_terminal: bool | None = None) -> None:
        """`colour`: foreground colours; `styles`: bold, dim and italic (by default with colour); `is_terminal`:
        the file is a terminal or FORCE_COLOR treats it as one (by default: when styles are shown)."""
        self.file = file
        self._width = width
        self._follows_terminal = False  # the width is the terminal's, read at each use: its window may be resized
        self.colour = colour
        self.styles = colour if styles is None else styles
        self.is_terminal = self.styles if is_terminal is None else is_terminal
        self._sgr: dict[str, str] = {}
        self._rich: Console | None = None

    @classmethod
    def for_file(cls, file: IO[str]) -> Terminal:
        """Styles on a terminal (or with FORCE_COLOR) unless TERM is dumb, colour unless NO_COLOR, the terminal's
        width or, piped, PIPED_WIDTH: the decisions rich makes, so every command's output looks alike."""
        is_terminal = _is_terminal(file)
        styles = is_terminal and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")
        colour = styles and not os.environ.get("NO_COLOR")
        width = _terminal_width(file) if _isatty(file) else PIPED_WIDTH  # FORCE_COLOR into a pipe: still unwrapped
        terminal = cls(file, width, colour=colour, styles=styles, is_terminal=is_terminal)
        terminal._follows_terminal = _isatty(file)
        return terminal

    @property
    def width(self) -> int:
        return _terminal_width(self.file) if self._follows_terminal else self._width

    @width.setter
    def width(self, value: int) -> None:
        self._width = value
        self._follows_terminal = False

    def print(self, *items: object, end: str = "\n", **rich_options: Any) -> None:
        """Write the items on one line, separated by a space. The options are rich's, for rich renderables:
        lines drawn here are never wrapped or cut, which is all no_wrap, soft_wrap and overflow could ask."""
        if all(isinstance(item, (str, Text)) for item in items):
            self._write(self._render(items, end))
        else:
            self._rich_console().print(*(_to_rich(i) for i in items), end=end, **rich_options)

    def _render(self, items: tuple[object, ...], end: str) -> str:
        pieces: list[tuple[str, str]] = []
        for i, item in enumerate(items):
            if i:
                pieces.append((" ", ""))
            pieces.extend(item.pieces() if isinstance(item, Text) else [(str(item), "")])
        pieces = [(_printable(text), style) for text, style in pieces]
        if any("\t" in text for text, _ in pieces):
            pieces = _expand_tabs(pieces)
        if not self.styles:
            return "".join(text for text, _ in pieces) + end
        out = []
        for text, sgr in _merged([(text, self._sgr_for(style)) for text, style in pieces]):
            if not sgr:
                out.append(text)
            else:  # each line styled on its own, so a pager showing one line shows it right
                out.append("\n".join(f"{sgr}{line}{RESET}" if line else "" for line in text.split("\n")))
        out.append(end)
        return "".join(out)

    def _sgr_for(self, style: str) -> str:
        sgr = self._sgr.get(style)
        if sgr is None:
            sgr = self._sgr[style] = sgr_codes(style, self.colour)
        return sgr

    def _write(self, text: str) -> None:
        # A closed pipe raises BrokenPipeError here: the CLI's error boundary ends the run with exit 0.
        self.file.write(text)
        self.file.flush()  # each print as it is made: tail's lines show at once, and stay in order with stderr

    def _rich_console(self) -> Console:
        if self._rich is None:
            from logsense.report.rich_console import SafeConsole

            self._rich = SafeConsole(file=self.file, width=self.width, no_color=not self.colour,
                                     force_terminal=self.is_terminal, color_system="auto" if self.styles else None,
                                     markup=False, emoji=False, highlight=False, soft_wrap=False)
        self._rich.width = self.width  # a command may widen its console before it prints a table
        return self._rich


def sgr_codes(style: str, colour: bool) -> str:
    """The SGR escape that turns on `style` ("bold green", "dim", ...); a later colour wins over an earlier."""
    attributes: set[int] = set()
    fg = 0
    for word in style.split():
        if word in ATTRIBUTES:
            attributes.add(ATTRIBUTES[word])
        elif word in COLOURS:
            fg = COLOURS[word]
        else:
            raise ValueError(f"unknown style {word!r} in {style!r}")
    codes = sorted(attributes) + ([fg] if fg and colour else [])
    return f"\x1b[{';'.join(map(str, codes))}m" if codes else ""


def _printable(text: str) -> str:
    text = clean(text)
    return text.replace("\r", "") if "\r" in text else text  # a carriage return would overwrite the line


def _merged(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Neighbours that look alike (the same escape sequence) as one piece: one escape sequence for them."""
    out: list[tuple[str, str]] = []
    for text, sgr in pieces:
        if out and out[-1][1] == sgr:
            out[-1] = (out[-1][0] + text, sgr)
        elif text:
            out.append((text, sgr))
    return out


def _expand_tabs(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Tabs as the spaces to the next multiple of TAB_SIZE, counted in cells from the start of the line."""
    out = []
    column = 0
    for text, style in pieces:
        expanded = []
        for ch in text:
            if ch == "\t":
                spaces = TAB_SIZE - column % TAB_SIZE
                expanded.append(" " * spaces)
                column += spaces
            elif ch == "\n":
                expanded.append(ch)
                column = 0
            else:
                expanded.append(ch)
                column += char_width(ch)
        out.append(("".join(expanded), style))
    return out


def _to_rich(item: object) -> object:
    """Our Text as a rich Text, for a line printed together with a rich renderable."""
    if not isinstance(item, Text):
        return item
    from rich.text import Text as RichText

    rich_text = RichText()
    for text, style in item.pieces():
        rich_text.append(text, style=style or None)
    return rich_text


def _is_terminal(file: IO[str]) -> bool:
    """The environment variables rich honours first, then whether the file is a terminal."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    return _isatty(file)


def _terminal_width(file: IO[str]) -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return int(columns)
    try:
        return os.get_terminal_size(file.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _isatty(file: object) -> bool:
    try:
        return bool(file.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False
