"""FileFollower: follows a file like `tail -F`, without losing or repeating a line."""

from __future__ import annotations

import os
import random
import shutil
import threading
import time

import pytest

from logsense.errors import SourceError
from logsense.sources import follow as follow_mod
from logsense.sources.follow import FileFollower, last_line, last_line_offset


def read_until(f: FileFollower, n: int, timeout: float = 10.0) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        out.extend(f.read(0.05))
    return out


def texts(lines):
    return [t for _, t in lines]


def test_complete_lines_and_a_partial_one_held_until_its_newline(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("one\ntwo\nthr")
    f = FileFollower(str(p), offset=0, partial_timeout=5)
    assert f.read(0.05) == [(1, "one"), (2, "two")]
    with open(p, "a") as fh:
        fh.write("ee\nfour\n")
    assert read_until(f, 2) == [(3, "three"), (4, "four")]
    assert f.position()["offset"] == p.stat().st_size
    f.close()


def test_a_partial_line_is_handed_out_after_a_quiet_time(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("no newline yet")
    f = FileFollower(str(p), offset=0, partial_timeout=0.2)
    assert f.read(0.05) == []
    assert texts(read_until(f, 1, timeout=2)) == ["no newline yet"]
    f.close()


def test_idle_for_a_file_written_long_ago_but_not_for_one_that_grows_as_it_is_followed(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("one\ntwo\n")
    old = time.time() - 60
    os.utime(p, (old, old))
    f = FileFollower(str(p), offset=0)
    assert f.idle_for() is None  # not caught up yet
    assert texts(f.read(0.05)) == ["one", "two"]
    idle = f.idle_for()
    assert idle is not None and 50 < idle <= time.time() - old - follow_mod.MTIME_SLACK
    with open(p, "a") as fh:
        fh.write("three\n")
    os.utime(p, (old, old))  # a file's time can be wrong (another host's clock): what was seen counts
    assert texts(read_until(f, 1)) == ["three"]
    f.read(0.05)
    assert f.caught_up and f.idle_for() is None
    f.close()


def test_no_idle_time_while_a_partial_line_is_held(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("one\ntw")
    old = time.time() - 60
    os.utime(p, (old, old))
    f = FileFollower(str(p), offset=0, partial_timeout=5)
    assert texts(f.read(0.05)) == ["one"]
    assert f.idle_for() is None
    f.close()


def test_offset_none_starts_at_the_end(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("old\n")
    f = FileFollower(str(p), offset=None)
    with open(p, "a") as fh:
        fh.write("new\n")
    assert texts(read_until(f, 1)) == ["new"]
    f.close()


def test_a_file_that_does_not_exist_yet(tmp_path):
    p = tmp_path / "later.log"
    f = FileFollower(str(p), offset=0)
    assert f.read(0.05) == []
    p.write_text("hello\n")
    assert texts(read_until(f, 1)) == ["hello"]
    assert any("appeared" in n for n in f.notices)
    f.close()


def test_no_follow_on_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        FileFollower(str(tmp_path / "nope.log"), follow=False)


def test_no_follow_reads_to_the_end_including_a_last_partial_line(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("a\nb\nc")
    f = FileFollower(str(p), offset=0, follow=False)
    out = []
    while True:
        out.extend(f.read())
        if f.at_end:
            break
    assert texts(out) == ["a", "b", "c"]


def test_copytruncate(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("".join(f"before {i}\n" for i in range(50)))
    f = FileFollower(str(p), offset=0)
    assert len(read_until(f, 50)) == 50
    shutil.copy(p, tmp_path / "a.log.1")
    with open(p, "r+") as fh:
        fh.truncate(0)
    time.sleep(0.05)
    f.read(0.05)  # sees the truncation
    with open(p, "a") as fh:
        fh.write("".join(f"after {i}\n" for i in range(10)))
    got = texts(read_until(f, 10))
    assert got == [f"after {i}" for i in range(10)]
    assert any("truncated" in n for n in f.notices)
    f.close()


def test_rename_rotation_while_another_thread_writes_loses_and_repeats_nothing(tmp_path):
    """A writer thread reopens its file when the inode changes (as logging's WatchedFileHandler
    does); a rotator thread renames the file away every 100 ms. Every line arrives once, in order."""
    p = tmp_path / "server.log"
    n = 3000
    p.write_text("")
    stop = threading.Event()

    def writer():
        fh = open(p, "a")
        ino = os.fstat(fh.fileno()).st_ino
        for i in range(n):
            try:
                if os.stat(p).st_ino != ino:
                    raise FileNotFoundError
            except FileNotFoundError:
                fh.close()
                fh = open(p, "a")
                ino = os.fstat(fh.fileno()).st_ino
            fh.write(f"line {i}\n")
            fh.flush()
            if i % 50 == 0:
                time.sleep(0.005)
        fh.close()
        stop.set()

    def rotator():
        k = 0
        while not stop.is_set():
            time.sleep(0.1)
            k += 1
            try:
                os.rename(p, tmp_path / f"server.log.{k}")
            except FileNotFoundError:
                pass

    f = FileFollower(str(p), offset=0, grace=2.0)
    threads = [threading.Thread(target=writer), threading.Thread(target=rotator)]
    for t in threads:
        t.start()
    got = read_until(f, n, timeout=20)
    for t in threads:
        t.join()
    got += f.read(0.3)
    assert texts(got) == [f"line {i}" for i in range(n)]
    assert [ln for ln, _ in got] == list(range(1, n + 1))
    assert sum("rotated" in x for x in f.notices) >= 2
    f.close()


def test_position_resumes_without_repeat_even_after_a_rotation(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("a\nb\n")
    f = FileFollower(str(p), offset=0)
    assert texts(read_until(f, 2)) == ["a", "b"]
    pos = f.position()
    f.close()
    with open(p, "a") as fh:
        fh.write("c\n")
    os.rename(p, tmp_path / "a.log.1")
    p.write_text("d\n")
    g = FileFollower(str(p), offset=pos["offset"], ident=(pos["dev"], pos["ino"]), line=pos["line"])
    got = read_until(g, 2)
    assert got == [(3, "c"), (4, "d")]
    g.close()


def test_last_line_offset_finds_the_latest_marker_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(follow_mod, "SCAN_BLOCK", 64)
    p = tmp_path / "a.log"
    lines = [f"noise line {i:03d}" for i in range(30)]
    lines[3] = "[2026-01-01 00:00:00] server_args=ServerArgs(first)"
    lines[17] = "[2026-01-01 01:00:00] server_args=ServerArgs(second)"
    lines[20] = "a line that only mentions server_args= in passing"
    p.write_text("\n".join(lines) + "\n")
    off = last_line_offset(str(p), ["server_args="], lambda t: "ServerArgs(" in t)
    data = p.read_bytes()
    assert data[off:].startswith(b"[2026-01-01 01:00:00] server_args=ServerArgs(second)")
    assert last_line_offset(str(p), ["nothing like it"], lambda t: True) is None


@pytest.mark.parametrize("block", [64, 1 << 20])  # many blocks (one multi-literal search each), or one
def test_last_line_is_the_last_accepted_line_holding_a_literal(tmp_path, monkeypatch, block):
    monkeypatch.setattr(follow_mod, "SCAN_BLOCK", block)
    rng = random.Random(7)
    pool = ["noise {i}", "[t] server_args=ServerArgs({i})", "mentions server_args= only {i}",
            "INFO non-default args: {{'m': {i}}}", "non-default args: none {i}", "x" * 90 + " {i}"]
    lines = [rng.choice(pool).format(i=i) for i in range(400)]
    p = tmp_path / "a.log"
    p.write_text("\n".join(lines) + "\n")
    data = p.read_bytes()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def accept(text: str) -> bool:
        return "(" in text or "{" in text

    literals = ["server_args=", "non-default args:"]
    for before in (None, len(data) // 2, starts[150], 40):
        # the lines that start before `before`, read up to it
        seen = [(starts[i], t if before is None else t[: before - starts[i]]) for i, t in enumerate(lines)
                if before is None or starts[i] < before]
        want = next(((at, t) for at, t in reversed(seen) if any(x in t for x in literals) and accept(t)), None)
        assert last_line(str(p), literals, accept, before=before) == want


def test_truncate_then_refill_past_the_old_size_between_two_looks(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("".join(f"before {i}\n" for i in range(5)))
    f = FileFollower(str(p), offset=0)
    assert len(read_until(f, 5)) == 5
    with open(p, "w") as fh:  # truncated and written again, longer, before the follower looks
        fh.write("".join(f"after-the-truncation {i}\n" for i in range(10)))
    got = texts(read_until(f, 10))
    assert got == [f"after-the-truncation {i}" for i in range(10)]
    assert any("truncated" in n for n in f.notices)
    f.close()


def test_position_names_the_file_by_identity_and_head(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("one\ntwo\n")
    f = FileFollower(str(p), offset=0, follow=False)
    f.read()
    pos = f.position()
    st = os.stat(p)
    assert (pos["dev"], pos["ino"], pos["offset"], pos["line"]) == (st.st_dev, st.st_ino, 8, 2)
    assert pos["head_len"] == 8 and len(pos["head"]) == 32
    assert f.starts == {} or all(v["line"] == k - 1 for k, v in f.starts.items())
    f.close()
    # the same path with other content is not the saved file: read from its start
    p.write_text("other\ncontent\nhere\n")
    g = FileFollower(str(p), offset=8, line=2, ident=(pos["dev"], pos["ino"]), head=(pos["head_len"], pos["head"]),
                     follow=False)
    assert texts(g.read()) == ["other", "content", "here"]
    g.close()
