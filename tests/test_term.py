"""The terminal analyze and tail write with: styles as SGR codes only where colour belongs, text cleaned, rich
imported only for what rich draws."""

from __future__ import annotations

import io

import pytest

from logsense.report.term import PIPED_WIDTH, Terminal, Text, sgr_codes


def _printed(*items: object, **terminal: object) -> str:
    buf = io.StringIO()
    Terminal(buf, **terminal).print(*items)  # type: ignore[arg-type]
    return buf.getvalue()


def test_text_keeps_its_pieces():
    t = Text("phases: ", style="bold")
    assert t.append("a").append(" → ", style="dim") is t
    assert t.plain == str(t) == "phases: a → " and len(t) == 12
    assert t.pieces() == [("phases: ", "bold"), ("a", "bold"), (" → ", "bold dim")]
    assert Text().plain == "" and Text().append("").pieces() == []


def test_truncate_counts_cells():
    t = Text("● ", style="cyan").append("weight_loading", style="bold").append(" 12 s")
    t.truncate(9)
    assert t.plain == "● weight_" and t.pieces()[-1] == ("weight_", "cyan bold")
    wide = Text("ab日本")
    wide.truncate(5)
    assert wide.plain == "ab日 "  # a wide character cut in half leaves its first cell blank
    short = Text("abc")
    short.truncate(10)
    assert short.plain == "abc"


def test_piped_output_is_plain_text():
    t = Text("✗ ", style="bold red").append("title", style="bold").append("  [cause]", style="dim")
    assert _printed(t) == "✗ title  [cause]\n"
    assert _printed("a", Text("b", style="dim")) == "a b\n"
    assert _printed() == "\n"


def test_colour_is_standard_sgr():
    t = Text("x.log", style="bold").append("  3 lines  ", style="dim").append("failed", style="bold red")
    assert _printed(t, colour=True) == "\x1b[1mx.log\x1b[0m\x1b[1;2m  3 lines  \x1b[0m\x1b[1;31mfailed\x1b[0m\n"
    assert _printed(Text("  fix:", style="bold green"), colour=True) == "\x1b[1;32m  fix:\x1b[0m\n"
    assert _printed(Text("ok"), colour=True) == "ok\n"
    assert sgr_codes("italic", True) == "\x1b[3m" and sgr_codes("red cyan", True) == "\x1b[36m"
    with pytest.raises(ValueError, match="blinking"):
        sgr_codes("blinking", True)


def test_without_colour_bold_and_dim_stay():
    t = Text().append("✗ ", style="bold red").append("symptom", style="yellow").append(" 3", style="dim")
    assert _printed(t, styles=True) == "\x1b[1m✗ \x1b[0msymptom\x1b[2m 3\x1b[0m\n"


def test_a_styled_piece_over_two_lines_is_styled_on_each():
    assert _printed(Text("a\nb", style="dim"), colour=True) == "\x1b[2ma\x1b[0m\n\x1b[2mb\x1b[0m\n"


def test_every_piece_is_cleaned():
    hostile = "\x1b]0;title\x07\x1b[31mred\x1b[0m [red]x[/red] bidi\u202eevil zero\u200bwidth\x85 cr\rend"
    out = _printed(Text(hostile, style="bold"), hostile, colour=True)
    assert out == ("\x1b[1mred [red]x[/red] bidievil zerowidth crend\x1b[0m"
                   " red [red]x[/red] bidievil zerowidth crend\n")


def test_tabs_become_spaces_to_the_next_stop():
    t = Text("  12 │ ", style="dim").append("a\tb\t\tc日\td")
    assert _printed(t) == "  12 │ a" + " " * 8 + "b" + " " * 15 + "c日" + " " * 5 + "d\n"  # 日 takes two cells


def test_print_ends_as_asked_and_flushes():
    class Recorder(io.StringIO):
        flushed = 0

        def flush(self) -> None:
            self.flushed += 1

    rec = Recorder()
    Terminal(rec).print(Text("status"), end="")
    assert rec.getvalue() == "status" and rec.flushed == 1


def test_a_closed_pipe_is_a_broken_pipe_error():
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError

    from rich.table import Table

    terminal = Terminal(Closed())
    with pytest.raises(BrokenPipeError):
        terminal.print(Text("x"))
    with pytest.raises(BrokenPipeError):
        terminal.print(Table("x"))


def test_rich_renderables_go_to_rich_with_the_same_settings():
    from rich.table import Table
    from rich.text import Text as RichText

    table = Table("cause", "n")
    table.add_row("port_in_use", "3")
    piped, coloured = io.StringIO(), io.StringIO()
    for buf, colour in ((piped, False), (coloured, True)):
        terminal = Terminal(buf, colour=colour)
        terminal.print(table)
        terminal.print(RichText("done", style="green"), soft_wrap=True)
        terminal.print(Text("ours ", style="dim"), RichText("theirs", style="bold"))
    assert "port_in_use" in piped.getvalue() and "\x1b" not in piped.getvalue()
    assert piped.getvalue().endswith("done\nours  theirs\n")
    assert "\x1b[32mdone\x1b[0m" in coloured.getvalue()


def test_a_wider_terminal_draws_wider_tables():
    from rich.table import Table

    table = Table("x")
    table.add_row("y" * 150)
    buf = io.StringIO()
    terminal = Terminal(buf, width=80)
    terminal.print(table)
    terminal.print("--")
    terminal.width = 200
    terminal.print(table)
    narrow, wide = buf.getvalue().split("--\n")
    assert max(map(len, narrow.splitlines())) == 80
    assert max(map(len, wide.splitlines())) > 150


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("env, tty, styles, colour", [
    ({}, False, False, False),
    ({}, True, True, True),
    ({"NO_COLOR": "1"}, True, True, False),
    ({"NO_COLOR": ""}, True, True, True),
    ({"TERM": "dumb"}, True, False, False),
    ({"TERM": "dumb", "FORCE_COLOR": "1"}, False, False, False),
    ({"FORCE_COLOR": "1"}, False, True, True),
    ({"FORCE_COLOR": ""}, True, False, False),  # set but empty: as rich reads it
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, True, False),
    ({"TTY_COMPATIBLE": "0"}, True, False, False),
])
def test_the_environment_decides_colour(monkeypatch, env, tty, styles, colour):
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    terminal = Terminal.for_file(_Tty() if tty else io.StringIO())
    assert (terminal.styles, terminal.colour) == (styles, colour)


def test_piped_output_is_never_wrapped_and_a_terminal_has_its_width(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert Terminal.for_file(io.StringIO()).width == PIPED_WIDTH  # coloured, but read by a program
    monkeypatch.setenv("COLUMNS", "123")
    assert Terminal.for_file(_Tty()).width == 123
    monkeypatch.delenv("COLUMNS")
    assert Terminal.for_file(_Tty()).width == 80  # no terminal size to ask for


def test_the_console_is_a_terminal_over_stdout(monkeypatch):
    import sys

    from logsense.report.console import console

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    terminal = console()
    assert isinstance(terminal, Terminal) and terminal.file is out


def test_a_terminal_s_width_follows_its_window(monkeypatch):
    """tail's status line is cut to the width of the moment: a window made narrower must not leave wrapped rows."""
    import fcntl
    import os
    import struct
    import termios

    monkeypatch.delenv("COLUMNS", raising=False)
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as tty:
            for columns in (120, 60):
                fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
                if columns == 120:
                    term = Terminal.for_file(tty)
                assert term.width == columns
            term.width = 200  # set by a command: kept
            assert term.width == 200
    finally:
        os.close(leader)
        os.close(follower)
