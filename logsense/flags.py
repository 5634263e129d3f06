"""Each server's command-line flags, read from its own source: a fix never names a flag the server lacks.

The vocabularies live in logsense/data/flags/<server>.txt, one flag a line. They are
regenerated from a wheel (or an unpacked package) with

    python3 -m logsense.coverage.flags sglang-0.5.23-...whl vllm-0.34.0-...whl -o logsense/data/flags/

which parses the argument definitions with `ast` (nothing is imported or run).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

SERVERS = ("sglang", "vllm")
DATA_DIR = Path(__file__).resolve().parent / "data" / "flags"
FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")

# The same setting under each server's name. A fix written with one server's flag is rewritten
# to the other's; a flag with no counterpart is dropped for the server that lacks it.
EQUIVALENT: tuple[dict[str, str], ...] = (
    {"sglang": "--mem-fraction-static", "vllm": "--gpu-memory-utilization"},
    {"sglang": "--context-length", "vllm": "--max-model-len"},
    {"sglang": "--tp-size", "vllm": "--tensor-parallel-size"},
    {"sglang": "--tp", "vllm": "--tensor-parallel-size"},
    {"sglang": "--pp-size", "vllm": "--pipeline-parallel-size"},
    {"sglang": "--dp-size", "vllm": "--data-parallel-size"},
    {"sglang": "--max-running-requests", "vllm": "--max-num-seqs"},
    {"sglang": "--disable-cuda-graph", "vllm": "--enforce-eager"},
    {"sglang": "--cuda-graph-max-bs", "vllm": "--max-cudagraph-capture-size"},
    {"sglang": "--chunked-prefill-size", "vllm": "--max-num-batched-tokens"},
    {"sglang": "--attention-backend", "vllm": "--attention-backend"},
    {"sglang": "--kv-cache-dtype", "vllm": "--kv-cache-dtype"},
    {"sglang": "--trust-remote-code", "vllm": "--trust-remote-code"},
    {"sglang": "--quantization", "vllm": "--quantization"},
    {"sglang": "--port", "vllm": "--port"},
)

@cache
def vocabulary(server: str) -> frozenset[str]:
    """The flags `server` accepts: its current release's (<server>.txt, generated) and older
    releases' that logs still show (<server>.older.txt, kept by hand); empty when none ships."""
    flags: set[str] = set()
    for name in (f"{server}.txt", f"{server}.older.txt"):
        try:
            text = (DATA_DIR / name).read_text(encoding="utf-8")
        except OSError:
            continue
        flags.update(line.split()[0] for line in text.splitlines() if line.startswith("--"))
    return frozenset(flags)


def has_flag(server: str, flag: str) -> bool:
    """True when `server` accepts `flag`: as written, as argparse's `--no-X` of a boolean `--X`,
    or as the unambiguous prefix argparse expands (`--tp` for SGLang's `--tp-size`)."""
    vocab = vocabulary(server)
    if not vocab or flag in vocab:
        return True
    if flag.startswith("--no-") and "--" + flag[5:] in vocab:
        return True
    return sum(1 for f in vocab if f.startswith(flag)) == 1


def for_server(value: str, server: str | None) -> str | None:
    """A fix value whose flags all exist on `server`: rewritten to its equivalents, or None.

    Values without flags, and any value when the server is unknown, pass unchanged.
    """
    if server not in SERVERS or "--" not in value:
        return value
    out = value
    for m in reversed(list(FLAG.finditer(value))):
        flag = m.group(0)
        if m.start() and not value[m.start() - 1].isspace() and value[m.start() - 1] not in "`'\"(":
            continue  # "--" inside a word or a path, not a flag
        if has_flag(server, flag):
            continue
        other = next((e[server] for e in EQUIVALENT for s, f in e.items() if s != server and f == flag), None)
        if other is None or not has_flag(server, other):
            return None
        out = out[: m.start()] + other + out[m.end() :]
    return out
