"""Log text is printed inert: no escape sequence or rich markup from a log reaches the terminal."""

from __future__ import annotations

import io
import re

from logsense.model import Diagnosis, Evidence, Fix, Origin, Report, Status
from logsense.report.term import Terminal
from logsense.report.text import render

HOSTILE = (
    "\x1b]0;owned title\x07\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ \x1b[2J\x1b[H\x1b[31mred"
    " [red]not markup[/red] [link=http://evil.example]x[/link] \x9b2J \x07bell"
)
SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_report_output_is_inert():
    d = Diagnosis("unknown", None, True, Origin.RULE, 0.3, HOSTILE, HOSTILE, "warmup",
                  (Evidence(1, HOSTILE),), (Fix("flag", HOSTILE, HOSTILE),))
    report = Report(HOSTILE, Status.FAILED, "warmup", (), (d,), {}, 1)
    buf = io.StringIO()
    render(report, Terminal(buf, width=200, colour=True))
    out = buf.getvalue()
    assert SGR.search(out) and "\x1b" not in SGR.sub("", out), repr(SGR.sub("", out))  # only our own colours remain
    assert "\x9b" not in out and "\x07" not in out
    assert "[red]not markup[/red]" in out and "[link=http://evil.example]" in out


def test_analyze_strips_escapes_end_to_end(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "x.log"
    log.write_text(f"Traceback (most recent call last):\n  File \"x\", line 1\nValueError: {HOSTILE}\n")
    p = subprocess.run([sys.executable, "-m", "logsense", "analyze", str(log)], capture_output=True,
                       env={"FORCE_COLOR": "1", "TERM": "xterm-256color", "PATH": "/usr/bin:/bin"})
    out = p.stdout.decode("utf-8", "replace")
    assert "\x1b" not in SGR.sub("", out), repr(out)
    assert "[red]not markup[/red]" in out


def test_no_color_and_dumb_terminal(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "x.log"
    log.write_text("[2025-01-01 00:00:00] ImportError: Vendored FlashAttention CUTE is not available\n")
    for env in ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, {"TERM": "dumb", "FORCE_COLOR": "1"}):
        p = subprocess.run([sys.executable, "-m", "logsense", "analyze", str(log)], capture_output=True,
                           env={**env, "PATH": "/usr/bin:/bin"})
        colours = re.findall(rb"\x1b\[([0-9;]*)m", p.stdout)
        # bold and dim may stay (NO_COLOR is about colour); no foreground or background colour
        assert p.returncode == 1 and not [c for c in colours if re.search(rb"(?:^|;)(?:3|4|9|10)\d", c)], colours
        assert b"Traceback" not in p.stderr


SNEAKY = "bidi\u202eevil\u2066iso\u2069 zero\u200bwidth c1\x85\x9d end"


def _visible_only(text: str) -> None:
    for ch in ("\u202e", "\u2066", "\u2069", "\u200b", "\x85", "\x9d", "\x1b]", "\x07"):
        assert ch not in text, (ch, text)


def test_the_terminal_cleans_every_text_view():
    d = Diagnosis("unknown", None, True, Origin.RULE, 0.3, SNEAKY, SNEAKY, "warmup",
                  (Evidence(1, SNEAKY),), (Fix("flag", SNEAKY, SNEAKY),))
    report = Report(SNEAKY, Status.FAILED, "warmup", (), (d,), {}, 1)
    buf = io.StringIO()
    render(report, Terminal(buf, width=200, colour=True))
    out = SGR.sub("", buf.getvalue())
    _visible_only(out)
    assert "bidievil" in out and "zerowidth" in out


def test_what_rich_draws_for_the_terminal_is_cleaned_too():
    from rich.table import Table
    from rich.text import Text as RichText

    table = Table("cause")
    table.add_row(SNEAKY)
    buf = io.StringIO()
    terminal = Terminal(buf, width=200, colour=True)
    terminal.print(table)
    terminal.print(RichText(SNEAKY + " [red]not markup[/red]", style="bold"))
    out = SGR.sub("", buf.getvalue())
    _visible_only(out)
    assert "bidievil" in out and "zerowidth" in out and "[red]not markup[/red]" in out


def test_rules_show_and_pack_errors_print_no_escapes(tmp_path):
    import subprocess
    import sys

    d = tmp_path / "pack\x1b]0;PWNED\x07"
    d.mkdir()
    (d / "x.yaml").write_text('rules:\n  - id: esc\n    cause: unknown\n    role: symptom\n'
                              '    title: "x\\e]0;PWNED\\e\\\\ \\u202e evil \\u200b"\n'
                              '    match:\n      any: [boom]\n'
                              '    examples:\n      match: [boom, boom a]\n      no_match: [a, b]\n')
    p = subprocess.run([sys.executable, "-m", "logsense", "rules", "show", "esc", "--only-rules", str(d)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    _visible_only(p.stdout)
    assert "\x1b" not in p.stdout and "title: x" in p.stdout
    (d / "y.yaml").write_text("rules: 3\n")
    p = subprocess.run([sys.executable, "-m", "logsense", "rules", "list", "--only-rules", str(d)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "y.yaml" in p.stderr
    _visible_only(p.stderr)
    assert "\x1b" not in p.stderr


def test_json_lines_never_break_inside_a_record():
    from logsense.report.json import dumps_line

    line = dumps_line({"text": "a\u2028b\u2029c\x85d\ne"})
    assert line.splitlines() == [line]
    import json

    assert json.loads(line)["text"] == "a\u2028b\u2029c\x85d\ne"
