"""A line past the readers' cut keeps its end: an error at the end of a 3 MB line is still the cause."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from conftest import CORPORA
from logsense.linecut import MAX_LINE_BYTES, LongLine, cut_note, cut_text

PAD = 3 * MAX_LINE_BYTES


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    """The seed's Python.h incident with each 'fatal error' line grown by 3 MB before its message."""
    lines = (CORPORA / "mission" / "python-h-missing.log").read_text().splitlines()
    out = []
    for line in lines:
        if "fatal error: Python.h" in line:
            head, _, msg = line.partition("]: ")
            line = f"{head}]: {'x' * PAD} {msg}"
        out.append(line)
    p = tmp_path_factory.mktemp("long") / "long.log"
    p.write_text("\n".join(out) + "\n")
    return p


def _cause(args: list[str], stdin: bytes | None = None) -> str:
    p = subprocess.run([sys.executable, "-m", "logsense", *args], input=stdin, capture_output=True, timeout=120)
    assert p.returncode == 1, p.stderr
    text = p.stdout.decode()
    if args[0] == "tail":
        return [json.loads(x) for x in text.splitlines() if '"diagnosis"' in x][-1]["diagnosis"]["cause"]
    return json.loads(text)["diagnoses"][0]["cause"]


def test_analyze_a_file_a_pipe_and_gzip_and_tail_read_the_end(long_log):
    assert _cause(["analyze", "-f", "json", str(long_log)]) == "python_headers_missing"
    assert _cause(["analyze", "-f", "json", "-"], long_log.read_bytes()) == "python_headers_missing"
    assert _cause(["analyze", "-f", "json", "-"], gzip.compress(long_log.read_bytes())) == "python_headers_missing"
    assert _cause(["tail", str(long_log), "--no-follow", "--format", "jsonl"]) == "python_headers_missing"


def test_the_cut_is_said_and_bounded():
    line = LongLine()
    for _ in range(50):
        line.add(b"a" * 100_000)
    line.add(b" the end")
    text = line.take_bytes()
    assert len(text) <= MAX_LINE_BYTES and text.endswith(b" the end") and text.startswith(b"a")
    head, _, rest = text.partition(" …[".encode())
    cut = int(rest.split(b" ")[0])
    note = cut_note(cut).encode()
    assert note in text and len(text) - len(note) + cut == 5_000_008  # what was kept and what was cut: all of it
    assert not line and line.take_bytes() == b""
    assert cut_text("short", 10) == "short"
    cut = cut_text("s" + "m" * 1000 + "e", 200)
    assert cut.startswith("s") and cut.endswith("e") and "characters of this line cut" in cut
