"""A failing log pasted in any common shape keeps its verdict and its root cause.

People paste logs into issues and chats through docker, kubectl, journald, markdown fences,
quotes, `<details>` blocks, tmux and MPI launchers. Each shape below rewrites a whole log the
way that tool does; the diagnosis of the rewritten log must be the original's. The fast test
runs a fixed sample of failing corpus logs, and of healthy ones (which must stay healthy); the slow ones
(`-m slow`) run every failing and every healthy log.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import CORPORA

Shape = Callable[[list[str]], list[str]]


def _prefix(prefix: str) -> Shape:
    return lambda lines: [prefix + line for line in lines]


def _timestamped(stamp: Callable[[int], str]) -> Shape:
    return lambda lines: [stamp(i) + line for i, line in enumerate(lines)]


def _clock(i: int) -> tuple[int, int, int]:
    return 10 + i // 3600 % 10, i // 60 % 60, i % 60


def _docker_ts(i: int) -> str:
    h, m, s = _clock(i)
    return f"2026-11-20T{h:02d}:{m:02d}:{s:02d}.{i % 1000:03d}456789Z "


def _kubectl_ts(i: int) -> str:
    h, m, s = _clock(i)
    return f"2026-11-20T{h:02d}:{m:02d}:{s:02d}.{i % 1000:03d}45678Z "  # RFC3339Nano drops trailing zeros


def _journal_short(i: int) -> str:
    h, m, s = _clock(i)
    return f"Nov 20 {h:02d}:{m:02d}:{s:02d} gpu-node-1 python3[4242]: "


def _journal_iso(i: int) -> str:
    h, m, s = _clock(i)
    return f"2026-11-20T{h:02d}:{m:02d}:{s:02d}+0000 gpu-node-1 python3[4242]: "


def _journal_json(lines: list[str]) -> list[str]:
    base = 1_795_168_800_000_000  # 2026-11-20 06:00 UTC, in microseconds
    return [json.dumps({"__REALTIME_TIMESTAMP": str(base + i * 1000), "_PID": "4242", "_HOSTNAME": "gpu-node-1",
                        "SYSLOG_IDENTIFIER": "python3", "MESSAGE": line}) for i, line in enumerate(lines)]


def _fenced(opening: str) -> Shape:
    return lambda lines: ["Here is the log:", "", opening, *lines, "```", "", "Any idea?"]


def _quoted(lines: list[str]) -> list[str]:
    return [f"> {line}" if line else ">" for line in lines]


def _details(lines: list[str]) -> list[str]:
    return ["<details>", "<summary>Full log</summary>", "", "```", *lines, "```", "", "</details>"]


def _crlf(lines: list[str]) -> list[str]:
    return [line + "\r" for line in lines]


def _ansi(lines: list[str]) -> list[str]:
    colours = ("\x1b[32m", "\x1b[33m", "\x1b[1;31m", "\x1b[36m")
    return [f"{colours[i % 4]}{line}\x1b[0m" for i, line in enumerate(lines)]


def _wrapped(width: int) -> Shape:
    def shape(lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            while len(line) > width:
                out.append(line[:width])
                line = line[width:]
            out.append(line)
        return out

    return shape


def _dedented(lines: list[str]) -> list[str]:
    return [line.lstrip() for line in lines]


def _frames_cut(lines: list[str]) -> list[str]:
    """A long run of frame lines cut to its first frame and its last two, with "..." between."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, None]:
        if line is not None and line.startswith("  ") and not line.startswith("  " * 6):
            run.append(line)
            continue
        out.extend(run if len(run) <= 8 else [*run[:2], "...", *run[-4:]])
        run = []
        if line is not None:
            out.append(line)
    return out


SHAPES: dict[str, Shape] = {
    "compose": _prefix("sglang-1  | "),
    "compose-long-name": _prefix("deploy-sglang-server-1  | "),
    "docker-timestamps": _timestamped(_docker_ts),
    "kubectl-prefix": _prefix("[pod/sglang-7d9f6c-x2x8k/sglang] "),
    "viewer-time-column": _prefix("2026-04-16 14:23:34.047 | "),
    "fastchat-columns": _prefix("2024-05-26 14:51:19 | ERROR | stderr | "),
    "kubectl-timestamps": _timestamped(_kubectl_ts),
    "journal-short": _timestamped(_journal_short),
    "journal-short-iso": _timestamped(_journal_iso),
    "journal-json": _journal_json,
    "fence": _fenced("```"),
    "fence-log": _fenced("```log"),
    "quote": _quoted,
    "details": _details,
    "crlf": _crlf,
    "ansi": _ansi,
    "indent-2": _prefix("  "),
    "indent-4": _prefix("    "),
    "dedent": _dedented,
    "frames-cut": _frames_cut,
    "tmux-wrap-120": _wrapped(120),
    "tmux-wrap-200": _wrapped(200),
    "ray-worker": _prefix("(RayWorkerWrapper pid=123, ip=10.0.0.1) "),
    "vllm-engine-core": _prefix("(EngineCore_DP0 pid=8) "),
    "vllm-api-server": _prefix("(APIServer pid=1) "),
    "vllm-worker": _prefix("(Worker_TP1 pid=9) "),
    "torchrun-rank": _prefix("[rank3]:"),
    "mpirun": _prefix("[1,0]<stderr>:"),
}


def _labelled(subdirs: tuple[str, ...]) -> list[tuple[Path, dict]]:
    out = []
    for sub in subdirs:
        for label in sorted((CORPORA / sub).rglob("*.label.yaml")):
            log = label.with_name(label.name[: -len(".label.yaml")] + ".log")
            if log.exists():
                out.append((log, yaml.safe_load(label.read_text())))
    return out


def failing_logs() -> list[Path]:
    """Every failing log of the real, recorded and constructed corpora (not the healthy ones)."""
    return [log for log, label in _labelled(("real", "recorded", "constructed"))
            if label.get("cause") != "healthy" and label.get("outcome") != "incomplete"]


def healthy_logs() -> list[Path]:
    """Every healthy log of the corpora (ready, or an excerpt that ends before anything fatal)."""
    return [log for log, label in _labelled(("healthy", "real", "recorded", "constructed"))
            if label.get("cause") == "healthy"]


def verdict(rules, path: Path) -> tuple[str, str | None]:
    from logsense.analysis import analyze_path

    report, _ = analyze_path(str(path), rules)
    root = report.root
    return report.status.value, root.cause if root is not None else None


def reshaped(path: Path, shape: Shape, into: Path) -> Path:
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    into.write_text("\n".join(shape(lines)) + "\n", encoding="utf-8", newline="")
    return into


# tmux `capture-pane` (without -J) and old terminals break a long line at the pane's width. The reader
# joins the pieces back when the log shows it was wrapped: several different lines of exactly the same,
# longest length. With fewer than three different full-width pieces nothing tells the terminal's line breaks
# from the log's own, so such an excerpt is not held to its verdict when wrapped.
_WRAPS = {"tmux-wrap-120": 120, "tmux-wrap-200": 200}
# Logs a shape does not fit, with why.
UNFIT = {
    ("dedent", "real/r2-044-api_server_positional_model_unrecognized.log"):
        "an excerpt of argparse's usage continuation lines only: their deep indent is all that says what they are",
    # an old SGLang excerpt with no line that names its server: in vLLM's prefixes it reads as vLLM's, and
    # SGLang's own warmup rule rightly does not fire on a vLLM log
    **{(shape, "real/019-http_proxy_intercepts_warmup.log"): "nothing in the excerpt says it is SGLang's"
       for shape in ("ray-worker", "vllm-engine-core", "vllm-api-server", "vllm-worker")},
}
# A launcher's prefix goes on what the process prints: never before docker compose's, nor before another
# launcher's (a log that has one is not given a second); vLLM's process prefixes only on vLLM's output.
_LAUNCHERS = {"ray-worker", "vllm-engine-core", "vllm-api-server", "vllm-worker", "torchrun-rank", "mpirun"}
_VLLM_ONLY = {"ray-worker", "vllm-engine-core", "vllm-api-server", "vllm-worker"}
_OUTER = re.compile(r"^(?:[A-Za-z0-9][\w.]*[-_][\w.-]*\s+\| |\([A-Za-z][\w-]*(?: rank=\d+| TP\d+)? pid=\d+)")
_VLLM_LOGGER = re.compile(r"(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d|\bvllm/", re.M)

SAMPLE = [
    "real/039-triton_shared_memory_exceeded.log",  # compose prefix, frames only
    "real/r2-005-argparse_enable_metrics_underscore.log",
    "real/r2-043-club3090_gptq_marlin_repack_driver_oom.log",
    "recorded/sglang-0.5.23/cpu-engine-cuda-kernel.log",  # a multi-line exception message
    "recorded/sglang-0.5.23/tokenizer-broken.log",
    "recorded/vllm-0.32.0/tokenizer-broken.log",
    "constructed/nan-logits-fp16-finetune.log",  # journalctl short
]


def _cases(logs: list[Path]) -> list:
    out = []
    for log in logs:
        rel = log.relative_to(CORPORA).as_posix()
        text = log.read_text(errors="replace")
        first = next((line for line in text.splitlines() if line.strip()), "")
        label = yaml.safe_load(log.with_name(log.name[: -len(".log")] + ".label.yaml").read_text())
        # an SGLang log may hold a line of vLLM's logger (SGLang imported vLLM), never SGLang's ServerArgs in vLLM's
        guess = "vllm" if _VLLM_LOGGER.search(text) and "ServerArgs(" not in text else "sglang"
        vllm = label.get("server", guess) == "vllm"
        for name in SHAPES:
            if (name, rel) in UNFIT or name in _LAUNCHERS and _OUTER.match(first) or name in _VLLM_ONLY and not vllm:
                continue
            if name in _WRAPS and len({piece for piece in SHAPES[name](text.splitlines())
                                       if len(piece) == _WRAPS[name]}) < 3:
                continue
            out.append(pytest.param(log, name, id=f"{rel}-{name}"))
    return out


@functools.cache
def _rules():
    from logsense import load_rules

    return load_rules()


@functools.cache
def _original(log: Path) -> tuple[str, str | None]:
    return verdict(_rules(), log)


def _check(log: Path, shape: str, tmp_path: Path) -> None:
    pasted = reshaped(log, SHAPES[shape], tmp_path / f"{log.stem}.{shape}.log")
    assert verdict(_rules(), pasted) == _original(log), f"{log.name} pasted as {shape}"


@pytest.mark.parametrize(("log", "shape"), _cases([CORPORA / p for p in SAMPLE]))
def test_pasted_shape_keeps_the_diagnosis(log: Path, shape: str, tmp_path: Path) -> None:
    _check(log, shape, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("log", "shape"), _cases(failing_logs()))
def test_every_failing_log_in_every_shape(log: Path, shape: str, tmp_path: Path) -> None:
    _check(log, shape, tmp_path)


HEALTHY_SAMPLE = [
    "healthy/k26-ddtree-ready.log",  # journalctl short, TP8
    "recorded/vllm-0.32.0/healthy-llama.log",
]


@pytest.mark.parametrize(("log", "shape"), _cases([CORPORA / p for p in HEALTHY_SAMPLE]))
def test_pasted_healthy_log_stays_healthy(log: Path, shape: str, tmp_path: Path) -> None:
    _check(log, shape, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("log", "shape"), _cases(healthy_logs()))
def test_every_healthy_log_in_every_shape(log: Path, shape: str, tmp_path: Path) -> None:
    _check(log, shape, tmp_path)


def test_the_samples_are_corpus_logs() -> None:
    assert {CORPORA / p for p in SAMPLE} <= set(failing_logs())
    assert {CORPORA / p for p in HEALTHY_SAMPLE} <= set(healthy_logs())


# ---------------------------------------------------------------- the pieces, line by line


@pytest.mark.parametrize("line", [
    "> [2026-01-01 00:00:00 TP3] Load weight begin.",
    "    [2026-01-01 00:00:00 TP3] Load weight begin.",
    "[pod/sglang-0/sglang] [2026-01-01 00:00:00 TP3] Load weight begin.",
    "sglang-1  | 2026-01-01T00:00:00.123456789Z [2026-01-01 00:00:00 TP3] Load weight begin.",
])
def test_paste_decorations_are_not_the_message(line: str) -> None:
    from logsense.normalize import Normalizer

    (rec,) = Normalizer().feed(1, line)
    assert (rec.message, rec.rank, rec.prefixed) == ("Load weight begin.", "TP3", True)


def test_each_launcher_rank_is_a_stream() -> None:
    from logsense.normalize import Normalizer

    n = Normalizer()
    a, b = n.feed(1, "[rank0]: Traceback (most recent call last):")[0], n.feed(2, "[1,1]<stderr>:ValueError: x")[0]
    assert (a.message, b.message) == ("Traceback (most recent call last):", "ValueError: x")
    assert a.pid != b.pid


def test_an_indented_line_keeps_its_indent_unless_it_starts_a_record() -> None:
    from logsense.normalize import Normalizer

    n = Normalizer()
    assert n.feed(1, '  File "/app/x.py", line 3, in f')[0].message == '  File "/app/x.py", line 3, in f'
    assert n.feed(2, "  ValueError: bad value")[0].message == "ValueError: bad value"


@pytest.mark.parametrize("text", [
    # frames that lost their indent
    'Traceback (most recent call last):\nFile "/app/main.py", line 1, in <module>\nmain()\n'
    'File "/app/x.py", line 3, in main\nload.weights()\nValueError: bad value',
    # frames cut by "..."
    'Traceback (most recent call last):\n  File "/app/main.py", line 1, in <module>\n    main()\n...\n'
    '  File "/app/x.py", line 3, in main\n    load.weights()\nValueError: bad value',
])
def test_a_pasted_traceback_still_frames(text: str) -> None:
    from logsense.framing import Framer, error_lines
    from logsense.model import EventKind
    from logsense.normalize import Normalizer

    n, framer = Normalizer(), Framer()
    events = [e for i, line in enumerate(text.split("\n"), 1) for r in n.feed(i, line) for e in framer.feed(r)]
    events += framer.flush()
    (event,) = events
    assert event.kind is EventKind.TRACEBACK
    assert [r.message for r in error_lines(event)] == ["ValueError: bad value"]


def test_a_wrapped_paste_is_joined_back() -> None:
    import io

    from logsense.sources.recorded import as_text_bytes, read_lines

    lines = [f"[2026-01-01 00:00:0{i} TP0] {'x' * 70} message {i} of a long run that the pane wraps" for i in range(4)]
    wrapped = "\n".join(_wrapped(80)(lines)) + "\n"
    assert len(wrapped.splitlines()) == 8
    fp = as_text_bytes(io.BufferedReader(io.BytesIO(wrapped.encode())), "<paste>")  # type: ignore[arg-type]
    assert [text for _, text in read_lines(fp)] == lines


@pytest.mark.parametrize("log", sorted(CORPORA.rglob("*.log")), ids=lambda p: p.relative_to(CORPORA).as_posix())
def test_no_corpus_log_reads_as_wrapped(log: Path) -> None:
    from logsense.sources.recorded import wrap_width

    assert wrap_width(log.read_bytes()[: 1 << 16]) is None
