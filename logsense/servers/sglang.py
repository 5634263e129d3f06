"""SGLang: its line prefix, its words, its arguments, its flags and its packages."""

from __future__ import annotations

import re
from typing import Any

from logsense import re_cache
from logsense.arg_dump import parse_args_body
from logsense.logtime import PLACEHOLDER_YEAR
from logsense.servers.base import ArgsFormat, Prefix, Server, VersionFact

NAME = "sglang"

_PREFIX = re_cache.compile(
    r"\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3})?|\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3})?"
    r"|\d\d:\d\d:\d\d(?= (?:DP|TP)))"  # sglang <= 0.3.4: "[10:00:07 TP0] " (the time alone, a rank always follows)
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP|CP)-?\d+)*)\] "  # sglang 0.3.6: "DP-1 TP0" when not data-parallel
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+\.py:\d+: )?"
)


class SGLangLines:
    """SGLang's prefix: "[2025-01-01 10:00:00 TP0] ", "[2025-01-01 10:00:00] ", "[10:00:07 TP0] " (<= 0.3.4)."""

    def read(self, text: str, time: str | None, pid: str | None) -> Prefix | None:
        if text[:1] != "[":
            return None
        s = _PREFIX.match(text)
        if s is None:
            return None
        rank = s["ranks"].strip() or None
        # a bare "[date time,ms]" is any Python logger's; SGLang's has no milliseconds or has ranks
        server = NAME if rank or "," not in s["time"] else None
        inner = s["time"].replace(",", ".")
        # SGLang's own time has the year that journalctl's short one leaves out; a time without its day
        # (sglang <= 0.3.4) cannot be placed, so the line keeps the journal's time or none
        if inner[2:3] != ":":
            time = inner if not time or (time.startswith(PLACEHOLDER_YEAR) and inner[4:5] == "-") else time
        return Prefix(text[s.end() :], time, pid, rank, server, True)


def _server_args(message: str) -> dict[str, Any]:
    """The fields of a `server_args=ServerArgs(...)` repr or `server_args={...}` dict; {} when unreadable."""
    try:
        return parse_args_body(message.split("server_args=", 1)[1])
    except (IndexError, ValueError):
        return {}


SERVER = Server(
    name=NAME,
    title="SGLang",
    line_format=SGLangLines,
    paste_heads=r"\[\d{4}-\d\d-\d\d[ T]|\[\d\d-\d\d \d\d:",
    signs=("server_args=ServerArgs(", "sglang.launch_server", "The server is fired up and ready to roll",
           "Scheduler hit an exception", "/sglang/srt/", "Load weight begin", "Capture cuda graph begin"),
    launch=("sglang.launch_server", "sglang serve "),
    version=(
        VersionFact(("sglang==", "sglang version", "SGLang version", "sglang-v"),
                    r"\b(?i:sglang)(?:==|\s+version[:=]?\s*|-v)v?(\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)"),
        # `python3 -m sglang.check_env`, which SGLang's issue template asks for: "sglang: 0.4.6.post1"
        VersionFact(("sglang: 0.", "sglang: 1."), r"^sglang: (\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)\s*$"),
    ),
    # the whole ServerArgs, once a startup: its first readable dump stands
    args=ArgsFormat(markers=("server_args=",), read=_server_args, once=True, overrides=True),
    env_prefixes=("SGLANG_", "SGL_"),
    packages=re.compile(r"(?<![\w/.-])(?:sglang(?:\[[^\]]*\])?|sgl[-_]kernel)(?![\w/-])"),
    settings={
        "memory_fraction": ("--mem-fraction-static",),
        "context_length": ("--context-length",),
        "tensor_parallel": ("--tp-size", "--tp"),
        "pipeline_parallel": ("--pp-size",),
        "data_parallel": ("--dp-size",),
        "max_running_requests": ("--max-running-requests",),
        "no_cuda_graph": ("--disable-cuda-graph",),
        "cuda_graph_max_batch": ("--cuda-graph-max-bs",),
        "prefill_chunk": ("--chunked-prefill-size",),
        "attention_backend": ("--attention-backend",),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "trust_remote_code": ("--trust-remote-code",),
        "quantization": ("--quantization",),
        "port": ("--port",),
    },
    flag_sources=("sglang/srt/server_args.py", "sglang/srt/arg_groups/"),
    dump_heads=("server_args=", "ServerArgs(", "Namespace(model_path="),  # the last: sglang <= 0.1's
    pip_names={"sgl_kernel": "sgl-kernel"},
    # a tqdm bar with SGLang's record glued after it (no newline between them)
    glued_head=r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3})?(?: [A-Z_]+\d+)*\] ",
    runs_on=("vllm",),  # sglang <= 0.4 imported vllm's layers: a vllm its log names is its own dependency
)
