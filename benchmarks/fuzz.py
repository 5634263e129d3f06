"""Fuzz what logsense reads from outside: logs, rule packs, models, archives and tail state files.

    python benchmarks/fuzz.py --examples 20000                 # logs (the default)
    python benchmarks/fuzz.py --target packs --examples 500    # or models, archives, states, all

Logs mix real SGLang, journalctl, traceback and compiler lines with random bytes, escapes,
huge lines, odd line ends and encodings; every input must give a report whose JSON renders, and
the fast scanner must give the report of reading every line. Packs, models, archives and state files are
mutated from valid ones (YAML aliases and tags, wrong types, truncation, random bytes) and run
through the command line: each must end in a result or a one-line error (exit 0, 1 or 2), never
an internal error (exit 70) or a hang. Prints how many inputs were tried.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logsense.scan
from logsense import load_rules
from logsense.errors import SourceError
from logsense.pipeline import Pipeline
from logsense.report.text import render
from logsense.scan import feed_stream
from logsense.sources.recorded import as_text_bytes, codec_of, read_lines

PIECES = [
    b"Traceback (most recent call last):", b'  File "/x/sglang/srt/a.py", line 1, in f', b"    x()",
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    b"ImportError: Vendored FlashAttention CUTE is not available", b"",
    b"The above exception was the direct cause of the following exception:",
    b"[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    b"[2026-01-01 00:00:00 TP1] Load weight begin. avail mem=1 GB", b"[2026-01-01 00:00:01] Capture cuda graph begin.",
    b"x.c:1:2: fatal error: Python.h: No such file or directory", b"compilation terminated.",
    b"Jan 01 00:00:00 host python3[1]: [2026-01-01 00:00:00 TP3] Load weight end. type=X, avail mem=1 GB",
    b"\x1b]0;title\x07\x1b[31mred\x1b[0m [red]m[/red]", b"a\rb\rc\r", b"-- Boot 0123456789abcdef0123456789abcdef --",
    b'{"MESSAGE": [27, 91, 51, 49, 109], "_PID": "3"}', b'{"MESSAGE": null}', b"\xff\xfe\x00\x01",
    b"server_args=ServerArgs(model_path='/m', mem_fraction_static=0.9, cuda_graph_max_bs=abc, tp_size=(1,",
    b"[2026-01-01 00:00:02] The server is fired up and ready to roll!",
]
line = st.one_of(st.sampled_from(PIECES), st.binary(max_size=80), st.builds(lambda n: b"A" * n, st.integers(0, 200_000)))
logs = st.tuples(st.lists(line, max_size=80), st.sampled_from([b"\n", b"\r\n", b"\r"]),
                 st.sampled_from(["utf-8", "utf-16", "gzip"]))

RULES = load_rules()
# A process's first small log is fed whole, without the search: the fuzzer would then compare feeding every
# line with itself. As if that first log had been read, every input goes through the search.
logsense.scan._whole_fed = True
TRIED = [0]


def encoded(data: bytes, encoding: str) -> bytes:
    if encoding == "utf-16":
        return "\ufeff".encode("utf-16-le") + data.decode("utf-8", "replace").encode("utf-16-le")
    if encoding == "gzip":
        import gzip

        return gzip.compress(data)
    return data


def check(data: bytes, encoding: str = "utf-8") -> None:
    TRIED[0] += 1
    a = Pipeline(RULES)
    raw = encoded(data, encoding)
    try:
        feed_stream(as_text_bytes(io.BufferedReader(io.BytesIO(raw)), "fuzz"), a, "fuzz")
    except SourceError:
        # the reader takes a log for compressed by its magic bytes: a broken one is a one-line error, no report
        assert encoding != "utf-16" and compressed(data), data[:300]
        return
    ra = a.finish("fuzz")
    json.dumps(ra.to_json())
    b = Pipeline(RULES)
    whole = data if encoding != "utf-16" else data.decode("utf-8", "replace").encode("utf-8")
    codec = codec_of(whole)
    if codec.encoding is not None:  # as the reader decides: a log that starts with a byte-order mark is UTF-16
        whole = codec.decode(whole, first=True).encode("utf-8")
    if end_is_cr(whole):
        whole = whole.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    for n, text in read_lines(io.BytesIO(whole)):
        b.feed_line(n, text)
    rb = b.finish("fuzz")
    assert ra.to_json() == rb.to_json(), (data[:300], ra, rb)  # the whole report, not only the causes
    from logsense.report.term import Terminal

    render(ra, Terminal(io.StringIO(), width=120, colour=True))


def compressed(data: bytes) -> bool:
    """As the reader decides: gzip, bzip2, xz and zstd are told by their magic bytes."""
    return (data[:2] == b"\x1f\x8b" or data[:3] == b"BZh" and data[3:4].isdigit() or data[:6] == b"\xfd7zXZ\x00"
            or data[:4] == b"\x28\xb5\x2f\xfd")


def end_is_cr(data: bytes) -> bool:
    """As the reader decides: a lone \\r ends lines when the first 64 KiB hold one and no \\n."""
    head = data[: 1 << 16]
    return b"\r" in head and b"\n" not in head


# --- files from outside, through the command line: a result or a one-line error, never exit 70 ---

PACK = b"""rules:
  - id: fuzzed
    cause: unknown
    role: symptom
    title: "a {x} title"
    match:
      any: ['boom (?P<x>\\d+)']
    fixes:
      - kind: flag
        value: --x {x}
    examples:
      match: ['boom 1', 'boom 2']
      no_match: ['boom', 'nothing']
"""
YAML_BITS = [b"&a ", b"*a", b"!!python/object:os.system ", b"!custom ", b"[", b"]", b"{", b"}", b": ", b"- ",
             b"\n", b"  ", b"'", b'"', b"(a+)+$", b"{{x}}", b"\x1b]0;t\x07", b"\xff", b"~", b"1e999", b"0x"]
MODEL = b'{"format": "logsense-linear", "version": 1, "causes": ["a", "b"], "threshold": 0.5, "weights": [[1, 2]]}'
STATE = b'{"schema": 2, "key": {"kind": "file", "target": "x"}, "offset": 10, "line": 3, "inode": 1}'
JSON_BITS = [b"NaN", b"-1", b"1e999", b"[]", b"{}", b"null", b'"x"', b",", b":", b"[[[[", b"\x00", b"true"]


def mutated(base: bytes, bits: list[bytes]):
    """A valid file with pieces inserted, deleted or cut off."""
    edit = st.tuples(st.integers(0, len(base)), st.integers(0, 12), st.sampled_from(bits + [b""]))

    def apply(edits, cut):
        data = base
        for at, drop, bit in edits:
            data = data[:at] + bit + data[at + drop:]
        return data[:cut] if cut is not None else data

    return st.builds(apply, st.lists(edit, max_size=6), st.one_of(st.none(), st.integers(0, len(base))))


def run_cli(args: list[str], env: dict[str, str] | None = None) -> int:
    import os

    from logsense import cli

    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        out, err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = io.StringIO()
        try:
            code = cli.run(args)
        finally:
            sys.stdout, sys.stderr = out, err
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert code in (0, 1, 2, 3), (code, args)
    return code


def archive(kind: str, members: list[bytes], cut: int | None) -> bytes:
    import tarfile
    import zipfile

    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w") as z:
            for i, m in enumerate(members):
                z.writestr(f"d/{i}.log", m)
    else:
        with tarfile.open(fileobj=buf, mode="w:gz") as t:
            for i, m in enumerate(members):
                info = tarfile.TarInfo(f"d/{i}.log")
                info.size = len(m)
                t.addfile(info, io.BytesIO(m))
    data = buf.getvalue()
    return data[:cut] if cut is not None and cut < len(data) else data


def target(name: str):
    """The hypothesis strategy and the check of one kind of input."""
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="logsense-fuzz-"))
    log = tmp / "x.log"
    log.write_bytes(b"Traceback (most recent call last):\n  File \"a.py\", line 1\nSomeNewError: x\n")
    if name == "packs":
        def one(data: bytes) -> None:
            d = tmp / f"pack{TRIED[0]}"
            d.mkdir()
            (d / "x.yaml").write_bytes(data)
            run_cli(["rules", "list", "--only-rules", str(d)])
            run_cli(["analyze", "--only-rules", str(d), str(log)])
        return mutated(PACK, YAML_BITS), one
    if name == "models":
        def one(data: bytes) -> None:
            f = tmp / f"model{TRIED[0]}.json"
            f.write_bytes(data)
            run_cli(["analyze", "--no-rules", str(log)], {"LOGSENSE_MODEL": str(f)})
        return mutated(MODEL, JSON_BITS), one
    if name == "states":
        def one(data: bytes) -> None:
            f = tmp / f"state{TRIED[0]}.json"
            f.write_bytes(data)
            run_cli(["tail", "--no-follow", "--resume", str(f), str(log)])
        return mutated(STATE, JSON_BITS), one
    if name == "archives":
        def one(case) -> None:
            kind, members, cut = case
            d = tmp / f"arch{TRIED[0]}"
            d.mkdir()
            (d / ("x.zip" if kind == "zip" else "x.tar.gz")).write_bytes(archive(kind, members, cut))
            run_cli(["stats", "-j", "1", "-f", "csv", str(d)])
        return st.tuples(st.sampled_from(["zip", "tgz"]), st.lists(st.sampled_from(PIECES), max_size=4),
                         st.one_of(st.none(), st.integers(0, 400))), one
    raise SystemExit(f"--target {name}: logs, packs, models, archives, states or all")


def files_run(strategy, one, examples: int):
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(case):
        TRIED[0] += 1
        one(case)

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=5000)
    ap.add_argument("--target", default="logs", help="logs, packs, models, archives, states or all")
    args = ap.parse_args()
    names = ["logs", "packs", "models", "archives", "states"] if args.target == "all" else [args.target]
    t = time.perf_counter()
    for name in names:
        if name == "logs":
            @settings(max_examples=args.examples, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(logs)
            def run(case):
                lines, end, encoding = case
                check(end.join(lines), encoding)
        else:
            run = files_run(*target(name), args.examples)
        run()
    print(f"fuzz: {TRIED[0]} inputs ({', '.join(names)}) tried in {time.perf_counter() - t:.0f} s, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
