"""Bad input gives a result or a one-line error with exit 2: never a traceback, memory bounded."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading

import pytest

from conftest import run_cli

LOGSENSE = [sys.executable, "-m", "logsense"]


def run(*args, input_bytes=None):
    return run_cli(*args, input=input_bytes)


def assert_clean(p, codes=(0, 1)):
    err = p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert p.returncode in codes, (p.returncode, err)


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\xfd invalid utf-8 \xc3\x28\n" * 10,
        b"NUL\x00in\x00line\nTraceback (most recent call last):\x00\n",
        b"CRLF line\r\nanother\r\n[2025-01-01 00:00:00] The server is fired up and ready to roll!\r\n",
        b"Loading 10%\rLoading 50%\rLoading 100%\r",
        b"",
        b"\n\n\n",
        b"\x1b]0;pwned\x07\x1b[2J\x1b[H[red]markup[/red] [link=http://x]y[/link]\n",
    ],
    ids=["invalid-utf8", "nul", "crlf", "lone-cr", "empty", "blank", "escapes"],
)
def test_odd_content(tmp_path, content):
    f = tmp_path / "x.log"
    f.write_bytes(content)
    nothing = not content.strip()  # no line of log: bad input, said as such
    for fmt in ("text", "json"):
        assert_clean(run("analyze", "-f", fmt, str(f)), codes=(2,) if nothing else (0, 1))


def test_huge_line_without_newline(tmp_path):
    f = tmp_path / "huge.log"
    with open(f, "wb") as fh:
        fh.write(b"start\n")
        chunk = b"A" * (1 << 20)
        for _ in range(50):
            fh.write(chunk)
    p = run("analyze", "-f", "json", str(f))
    assert_clean(p)
    assert b'"lines": 2' in p.stdout


def test_truncated_gzip(tmp_path):
    f = tmp_path / "cut.log.gz"
    data = gzip.compress(b"[2025-01-01 00:00:00] hello\n" * 10000)
    f.write_bytes(data[: len(data) // 2])
    p = run("analyze", str(f))
    assert_clean(p, codes=(2,))
    assert b"truncated or corrupt" in p.stderr or b"cannot read" in p.stderr


def test_gzip_ok(tmp_path):
    f = tmp_path / "ok.log.gz"
    f.write_bytes(gzip.compress(b"[2025-01-01 00:00:00] The server is fired up and ready to roll!\n"))
    p = run("analyze", "-f", "json", str(f))
    assert_clean(p)
    assert b'"status": "ready"' in p.stdout


@pytest.mark.parametrize("kind", ["missing", "directory", "unreadable"])
def test_unreadable(tmp_path, kind):
    target = tmp_path / "nope.log"
    if kind == "directory":
        target.mkdir()
    elif kind == "unreadable":
        target.write_text("x\n")
        target.chmod(0)
        if os.access(target, os.R_OK):
            pytest.skip("running as root: permissions do not stop reads")
    p = run("analyze", str(target))
    assert_clean(p, codes=(2,))
    assert p.stderr.decode().count("\n") == 1  # one line


def test_fifo(tmp_path):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(b"[2025-01-01 00:00:00] The server is fired up and ready to roll!\n")

    t = threading.Thread(target=writer)
    t.start()
    p = run("analyze", "-f", "json", str(fifo))
    t.join()
    assert_clean(p)
    assert b'"status": "ready"' in p.stdout


def test_stdin_binary():
    p = run("analyze", "-", input_bytes=b"\xff\x00garbage\nTraceback (most recent call last):\n  File x\nValueError: y\n")
    assert_clean(p)


def test_bad_usage():
    p = run("analyze", "-f", "yaml", "x.log")
    assert_clean(p, codes=(2,))
    p = run("rules", "show", "no-such-rule")
    assert_clean(p, codes=(2,))
    assert b"no such rule" in p.stderr


def test_closed_stdout():
    big = b"[2025-01-01 00:00:00] x\n" * 10
    r, w = os.pipe()
    os.close(r)  # nobody reads: writing raises EPIPE
    p = subprocess.run([*LOGSENSE, "rules", "list"], input=big, stdout=w, stderr=subprocess.PIPE, timeout=60)
    os.close(w)
    assert b"Traceback" not in p.stderr
