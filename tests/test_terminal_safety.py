"""Log text is printed inert: no escape sequence or rich markup from a log reaches the terminal."""

from __future__ import annotations

import io
import re

from rich.console import Console

from logsense.model import Diagnosis, Evidence, Fix, Origin, Report, Status
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
    console = Console(file=buf, force_terminal=True, color_system="truecolor", markup=False, width=200)
    render(report, console)
    out = buf.getvalue()
    assert "\x1b" not in SGR.sub("", out), repr(SGR.sub("", out))  # only rich's own colours remain
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
