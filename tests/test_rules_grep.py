"""`rules export`: rule patterns as POSIX ERE for the benchmark's grep reference (logsense/rules/grep.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from logsense.rules.grep import to_ere


@pytest.mark.parametrize(("pattern", "ere"), [
    (r"\d+ GiB \S+ \w", "[0-9]+ GiB [^[:space:]]+ [[:alnum:]_]"),
    (r"(?P<repo>[\w.-]+)", "([[:alnum:]_.-]+)"),  # a shorthand inside a bracket is a class name there
    (r"for (?P<path>[^\s{}]+)", "for ([^[:space:]{}]+)"),
    (r"remote=\[?([^\]\s]+)\]?:", r"remote=\[?([^][:space:]]+)\]?:"),  # ']' first: ERE has no escapes in brackets
    (r"[a\-z]", "[az-]"),  # '-' last: a member, not a range
    (r"CUDA error: (?P<cuda>[^\n]{1,120})", "CUDA error: (.{1,120})"),  # a line holds no newline
    (r"(?i)error: \s*x", "[eE][rR][rR][oO][rR]: [[:space:]]*[xX]"),  # the class name keeps its case
    (r"(?:a|b)\b", "(a|b)"),
])
def test_translation(pattern, ere):
    assert to_ere(pattern) == ere


@pytest.mark.parametrize("pattern", [r"[\S,]", r"(?i)a[bc]", r"(?<=x)y", r"(a)\1", "[ab", r"(?P<n>x)?(?(n)a|b)"])
def test_what_ere_cannot_say_is_left_out(pattern):
    assert to_ere(pattern) is None


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep here")
def test_grep_reads_every_exported_pattern(rules, tmp_path):
    patterns = {p.spec.text for r in rules.rules for p in r.any + r.all}
    patterns |= {p.spec.text for ph in rules.phases for p in ph.markers}
    ere = [x for x in map(to_ere, sorted(patterns)) if x is not None]
    assert len(ere) > 0.9 * len(patterns)
    (tmp_path / "patterns").write_text("\n".join(ere) + "\n")
    (tmp_path / "log").write_text("nothing to see\n")
    p = subprocess.run(["grep", "-E", "-c", "-f", str(tmp_path / "patterns"), str(tmp_path / "log")],
                       capture_output=True, text=True, env={"LC_ALL": "C"})
    assert p.returncode in (0, 1), p.stderr  # 2: grep rejected a pattern, and the benchmark's reference is void
    assert not p.stderr  # a warning ("? at start of expression") means a pattern was read as something else
