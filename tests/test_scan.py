"""The block scanner gives exactly what feeding every line gives: serial or searching ahead in a forked
child, with every search backend, from a file or a pipe."""

from __future__ import annotations

import io
import itertools
import json
import os
import threading
from typing import BinaryIO

import pytest

import logsense.scan as scan_module
from conftest import CORPORA
from logsense.analysis import analysis_pipeline
from logsense.errors import SourceError
from logsense.pipeline import Pipeline
from logsense.scan import BACKENDS, feed_stream, keep_for, search_backend
from logsense.sources.recorded import as_text_bytes, open_recorded, read_lines

SMALL_BLOCK = 8192  # so that many corpus logs span several blocks and the forked search runs on them


def _report(rules, data: bytes, scan: bool, parallel: bool | None = None) -> dict:
    p = Pipeline(rules)
    fp = io.BufferedReader(io.BytesIO(data))
    if scan:
        feed_stream(fp, p, "x", parallel=parallel)
    else:
        for n, text in read_lines(fp, "x"):
            p.feed_line(n, text)
    return p.finish("x").to_json()


def _analyze(rules, fp, parallel: bool | None) -> dict:
    """What `logsense analyze` reports (classifier included); `parallel` None: every line fed."""
    p = analysis_pipeline(rules)
    if parallel is None:
        for n, text in read_lines(fp, "x"):
            p.feed_line(n, text)
    else:
        feed_stream(fp, p, "x", tail=p.reading.tail, parallel=parallel)
    return p.finish("x").to_json()


def test_the_first_small_log_is_fed_whole_and_the_next_searched(rules, monkeypatch):
    """A process's first small log is fed without a search (building one costs more than it saves), the
    next ones through the search: both give the report of feeding every line."""
    monkeypatch.setattr(scan_module, "_whole_fed", False)
    scan_module._quick_backend.cache_clear()
    logs = sorted(CORPORA.rglob("*.log"))[:3]
    for i, path in enumerate(logs):
        data = path.read_bytes()
        assert len(data) < scan_module.WHOLE
        assert _report(rules, data, scan=True) == _report(rules, data, scan=False)
        assert scan_module._whole_fed and scan_module._quick_backend.cache_info().currsize == (0 if i == 0 else 1)


def _installed(backend: str) -> bool:
    try:
        return search_backend([b"x"], [], None).name == backend
    except ImportError:
        return False


def _logs():
    logs = sorted(CORPORA.rglob("*.log"))
    return [pytest.param(p, id=str(p.relative_to(CORPORA))) for p in logs] or [pytest.param(None, id="none")]


@pytest.mark.parametrize("path", _logs())
def test_scan_equals_full_feed(rules, monkeypatch, path):
    """Serial, and searched in a child over small blocks (the search backend, and which side searches
    and counts each block, taking turns by log)."""
    if path is None:
        pytest.skip("no corpus yet")
    data = path.read_bytes()
    every = _analyze(rules, io.BufferedReader(io.BytesIO(data)), None)
    assert _analyze(rules, io.BufferedReader(io.BytesIO(data)), False) == every
    backend = BACKENDS[sum(data[:4096]) % len(BACKENDS)]
    monkeypatch.setenv("LOGSENSE_SCAN_BACKEND", backend)
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    # which side searches and counts: the child, the pipeline (waiting for every block), or by turns
    turns = ([False], [True], [True, False, False, True])[len(data) % 3]
    monkeypatch.setattr(scan_module, "_parent_idle", lambda _idle, it=itertools.cycle(turns): next(it))
    assert _analyze(rules, io.BufferedReader(io.BytesIO(data)), True) == every


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_on_every_log(rules, monkeypatch, backend):
    monkeypatch.setenv("LOGSENSE_SCAN_BACKEND", backend)
    if not _installed(backend):
        pytest.skip(f"{backend} is not installed")
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    for path in sorted(CORPORA.rglob("*.log")):
        data = path.read_bytes()
        every = _analyze(rules, io.BufferedReader(io.BytesIO(data)), None)
        for parallel in (False, True):
            assert _analyze(rules, io.BufferedReader(io.BytesIO(data)), parallel) == every, (path, parallel)


def test_forked_scan_reads_a_pipe(rules, monkeypatch):
    """A pipe gives short reads and no size: the child reads it as it comes (and holds no copy of
    the pipe's write end, which would keep it from ever ending)."""
    data = b"".join(p.read_bytes() for p in sorted(CORPORA.rglob("*.log"))[:40])
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as out:
            for i in range(0, len(data), 1000):
                out.write(data[i : i + 1000])

    writer = threading.Thread(target=write)
    writer.start()
    with os.fdopen(r, "rb") as fp:
        piped = _analyze(rules, fp, True)
    writer.join()
    assert piped == _analyze(rules, io.BufferedReader(io.BytesIO(data)), None)


def test_a_read_error_in_the_child_is_raised_in_the_caller(rules, monkeypatch):
    import gzip

    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    text = b"".join(b"[2026-01-01 00:00:00] line %d\n" % i for i in range(20000))
    broken = gzip.compress(text)[:-5000]
    with pytest.raises(SourceError, match="truncated or corrupt"):
        _analyze(rules, gzip.GzipFile(fileobj=io.BytesIO(broken)), True)


def _children() -> set[int]:
    with open(f"/proc/self/task/{os.getpid()}/children") as fh:
        return {int(x) for x in fh.read().split()}


def test_a_failing_pipeline_stops_the_child(rules, monkeypatch):
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    p = Pipeline(rules)

    def boom(*_a):
        raise RuntimeError("boom")

    p.feed_line = boom
    data = b"Traceback (most recent call last):\n" * 50000
    before = _children()
    with pytest.raises(RuntimeError, match="boom"):
        feed_stream(io.BufferedReader(io.BytesIO(data)), p, "x", parallel=True)
    assert _children() <= before  # killed and reaped: no zombie either


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_agree(monkeypatch, backend):
    lits = [b"out of memory", b"Traceback (most recent call last):", b"ready to roll"]
    ci = [b"not enough memory"]
    data = (b"a\nCUDA out of memory x\nfoo\nNOT ENOUGH MEMORY\n" * 3) + b"The server is fired up and ready to roll!\n"
    monkeypatch.setenv("LOGSENSE_SCAN_BACKEND", backend)
    try:
        b = search_backend(lits, ci)
    except ImportError:
        pytest.skip(f"{backend} is not installed")
    if b.name != backend:
        pytest.skip(f"{backend} is not installed")
    lines = sorted({data.rfind(b"\n", 0, off) + 1 for off in b.offsets(data)})
    assert [data[s : data.find(b"\n", s)] for s in lines] == [
        b"CUDA out of memory x", b"NOT ENOUGH MEMORY", b"CUDA out of memory x", b"NOT ENOUGH MEMORY",
        b"CUDA out of memory x", b"NOT ENOUGH MEMORY", b"The server is fired up and ready to roll!"]


def test_overlong_line_is_cut_and_counted(rules):
    data = b"first\n" + b"x" * (3 << 20) + b" Traceback (most recent call last):\nlast line\n"
    rep = _report(rules, data, True)
    assert rep["lines"] == 3
    json.dumps(rep)


def test_literal_index_same_with_and_without_aho_corasick(monkeypatch):
    import logsense.prefilter as pf

    entries = [("out of memory", False, "oom"), ("memory", False, "mem"), ("CUDA out", False, "cuda"),
               ("not enough memory", True, "kv")]
    texts = ["CUDA out of memory here", "NOT ENOUGH MEMORY", "nothing", "memory memory"]
    fast = pf.LiteralIndex(entries, always=["x"])
    monkeypatch.setattr(pf, "_automaton", lambda lits: False)
    slow = pf.LiteralIndex(entries, always=["x"])
    for t in texts:
        assert sorted(fast.keys_in(t)) == sorted(slow.keys_in(t))


FILLER = b"".join(b"[2026-01-01 00:00:00] filler line %d\n" % i for i in range(300))
FA4 = "ImportErr\x1b[0mor: Vendored Flash\x1b[0mAttention CUTE is not available\n"


def _analyze_bytes(tmp_path, name: str, data: bytes, scan: str = "") -> tuple[int, dict]:
    from conftest import run_cli

    f = tmp_path / name
    f.write_bytes(data)
    p = run_cli("analyze", "-f", "json", str(f), env={"LOGSENSE_SCAN": scan})
    return p.returncode, json.loads(p.stdout) if p.stdout else {"stderr": p.stderr.decode()}


@pytest.mark.parametrize("noise", ["\x1b[0m", "\x00", "\u200b", "\x85"], ids=["ansi", "nul", "zero-width", "c1"])
def test_a_literal_split_by_noise_is_still_found(rules, noise):
    data = FILLER + FA4.replace("\x1b[0m", noise).encode()
    scanned, every = _report(rules, data, True), _report(rules, data, False)
    assert scanned == every
    assert [d["cause"] for d in scanned["diagnoses"]] == ["flash_attn_cute_unavailable"]


@pytest.mark.parametrize("encode", [
    pytest.param(lambda t: "\ufeff".encode("utf-16-le") + t.encode("utf-16-le"), id="utf-16-le-bom"),
    pytest.param(lambda t: "\ufeff".encode("utf-16-be") + t.encode("utf-16-be"), id="utf-16-be-bom"),
    pytest.param(lambda t: t.replace("\n", "\r").encode(), id="cr-only"),
    pytest.param(lambda t: __import__("bz2").compress(t.encode()), id="bzip2"),
    pytest.param(lambda t: __import__("lzma").compress(t.encode()), id="xz"),
    pytest.param(lambda t: __import__("gzip").compress(__import__("gzip").compress(t.encode())), id="gzip-twice"),
])
def test_odd_encodings_are_read_as_text(tmp_path, encode):
    text = FILLER.decode() + FA4.replace("\x1b[0m", "")
    for scan in ("", "off"):
        code, rep = _analyze_bytes(tmp_path, "x.log.gz", encode(text), scan)
        assert code == 1, rep
        assert rep["lines"] == 301 and rep["diagnoses"][0]["cause"] == "flash_attn_cute_unavailable"


@pytest.mark.parametrize("opened", ["bytes", "file", "pipe"])
def test_lone_cr_line_ends_are_told_by_the_first_64_kib_however_the_log_is_opened(rules, tmp_path, opened):
    """The fuzzer's case: no \r in the first 8 KiB, one within 64 KiB. A peek gives one read's worth (a
    reader's 4 or 8 KiB buffer, or what a pipe held), so the log was read as one 64 KiB line."""
    lines = [b"A" * 8192, b"A" * 57302, b'  File "/x/sglang/srt/a.py", line 1, in f']
    data = b"\r".join(lines)
    if opened == "bytes":
        fp: BinaryIO = io.BufferedReader(io.BytesIO(data))
    elif opened == "file":
        (tmp_path / "x.log").write_bytes(data)
        fp = open(tmp_path / "x.log", "rb")  # closed with the text stream below
    else:
        r, w = os.pipe()

        def write() -> None:
            with os.fdopen(w, "wb") as out:
                for i in range(0, len(data), 1000):
                    out.write(data[i : i + 1000])
                    out.flush()

        threading.Thread(target=write, daemon=True).start()
        fp = os.fdopen(r, "rb")
    p = Pipeline(rules)
    with as_text_bytes(fp, "x") as text:
        feed_stream(text, p, "x")
    scanned = p.finish("x").to_json()
    assert scanned == _report(rules, b"\n".join(lines), scan=False)
    assert scanned["lines"] == 3 and scanned["status"] == "failed"


def test_zstd_is_a_clear_error_not_binary(tmp_path):
    code, rep = _analyze_bytes(tmp_path, "x.log.gz", b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
    assert code == 2 and "zstd" in rep["stderr"]


def test_one_pass_finds_the_lines_two_passes_find():
    """Big inputs are searched once, case-blind literals by every casing of their last letters; small ones twice."""
    pytest.importorskip("ahocorasick_rs")
    cs, ci = [b"mory used", b"Traceback"], [b"not enough memory", b"oom"]
    data = (b"NoT EnOuGh MeMoRy\n"  # a case-blind literal in an odd casing
            b"memory is fine\n"  # its anchor alone: checked, not picked
            b"memory used\n"  # a literal hidden behind the anchor's match
            b"an OoM here\n"  # a short case-blind literal: every casing is searched
            b"Traceback (most recent call last):\n" b"nothing\n")
    one, two = scan_module._AhoCorasick(cs, ci, big=True), scan_module._AhoCorasick(cs, ci, big=False)
    assert scan_module.lines_found(data, one) == scan_module.lines_found(data, two)
    assert [data[s : data.find(b"\n", s)] for s in scan_module.lines_found(data, one).starts] == [
        b"NoT EnOuGh MeMoRy", b"memory used", b"an OoM here", b"Traceback (most recent call last):"]


def test_no_process_to_spare_searches_in_the_process(rules, monkeypatch):
    """fork fails (a limit on processes or memory): the same report, searched here, and nothing left open."""
    data = b"".join(p.read_bytes() for p in sorted(CORPORA.rglob("*.log"))[:20])
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    fds = len(os.listdir("/proc/self/fd"))
    assert _analyze(rules, io.BufferedReader(io.BytesIO(data)), True) == _analyze(
        rules, io.BufferedReader(io.BytesIO(data)), None)
    assert len(os.listdir("/proc/self/fd")) == fds


def test_a_file_is_read_again_by_place(rules, monkeypatch, tmp_path):
    """From a regular file the child sends where each block is, not its bytes; the same report."""
    data = b"".join(p.read_bytes() for p in sorted(CORPORA.rglob("*.log"))[:40])
    path = tmp_path / "big.log"
    path.write_bytes(data)
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    reread = []
    real = scan_module._Forked._reread
    monkeypatch.setattr(scan_module._Forked, "_reread", lambda self, n, at: reread.append(n) or real(self, n, at))
    with open_recorded(str(path))[0] as fp:
        by_place = _analyze(rules, fp, True)
    assert reread and by_place == _analyze(rules, io.BufferedReader(io.BytesIO(data)), None)


def test_a_file_cut_while_read_is_said_so(rules, monkeypatch, tmp_path):
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(b"[2026-01-01 00:00:00] line %d\n" % i for i in range(20000)))
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    monkeypatch.setattr(os, "pread", lambda fd, n, at: b"")  # the file is empty when the pipeline reads it
    with open_recorded(str(path))[0] as fp, pytest.raises(SourceError, match="changed while it was read"):
        _analyze(rules, fp, True)


@pytest.mark.parametrize("tail", [b"", b"no newline at the end"])
def test_a_block_said_to_be_the_inputs_bytes_is(monkeypatch, tail):
    """Where `_bodies` says a block starts, the input holds exactly that block (cut lines and all)."""
    monkeypatch.setattr(scan_module, "BLOCK", 64)
    monkeypatch.setattr(scan_module, "MAX_LINE_BYTES", 40)
    lines = [b"short", b"x" * 100, b"", b"y" * 39, b"z" * 41, b"w" * 300, b"end"] * 5
    data = b"\n".join(lines) + b"\n" + tail
    blocks = list(scan_module._bodies(io.BufferedReader(io.BytesIO(data)), "x"))
    assert any(at >= 0 for _, at in blocks) and any(at < 0 for _, at in blocks)
    for body, at in blocks:
        assert body.endswith(b"\n")
        if at >= 0:
            assert data[at : at + len(body)] == body


def test_a_block_too_big_for_a_slot_goes_through_the_pipe(rules, monkeypatch):
    data = b"".join(p.read_bytes() for p in sorted(CORPORA.rglob("*.log"))[:20])
    monkeypatch.setattr(scan_module, "BLOCK", SMALL_BLOCK)
    monkeypatch.setattr(scan_module, "_slot_bytes", lambda: SMALL_BLOCK // 2)
    assert _analyze(rules, io.BufferedReader(io.BytesIO(data)), True) == _analyze(
        rules, io.BufferedReader(io.BytesIO(data)), None)


SERVING = [  # what a ready server writes all day, the numbers changing on every line
    "[2026-12-03 11:40:00] Prefill batch, #new-seq: 3, #new-token: 812, #cached-token: 0, token usage: 0.12, "
    "#running-req: 7, #queue-req: 0, #pending-token: 0, cpu graph: False, input throughput (token/s): 1234.56",
    "[2026-12-03 11:40:00] Decode batch, #running-req: 7, #token: 5123, token usage: 0.13, cpu graph: False, "
    "gen throughput (token/s): 321.00, #queue-req: 0",
    '[2026-12-03 11:40:00] INFO:     10.0.3.4:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '[2026-12-03 11:40:00] INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK',
    '(APIServer pid=1) INFO:     10.0.0.5:51234 - "GET /health HTTP/1.1" 200 OK',
    '(APIServer pid=1) INFO:     10.0.0.5:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '(APIServer pid=1) INFO:     10.0.0.5:51234 - "GET /metrics HTTP/1.1" 200 OK',
    "(APIServer pid=1) INFO 12-03 11:40:00 [logger.py:40] Received request chatcmpl-abc: prompt: 'hello', "
    "params: SamplingParams(n=1)",
]


@pytest.mark.parametrize("line", SERVING)
def test_serving_traffic_holds_no_literal(rules, line):
    """A pattern whose literal every health check or batch line holds would feed the pipeline the whole day's log
    (a '"GET /health HTTP/1.' literal once made tail 1.5x slower on serving traffic)."""
    keep = keep_for(analysis_pipeline(rules))
    assert keep is not None
    raw = line.encode()
    assert not [x for x in keep.cs if x in raw] + [x for x in keep.ci if x in raw.lower()]
