"""vLLM: its line prefixes, its words, its arguments, its flags and its packages."""

from __future__ import annotations

import re
from typing import Any

from logsense import re_cache
from logsense.arg_dump import parse_args_body
from logsense.logtime import PLACEHOLDER_YEAR
from logsense.servers.base import ArgsFormat, Prefix, Server, VersionFact

NAME = "vllm"

# Its process prefix "(EngineCore_DP0 pid=123) ", "(Worker_TP1 pid=9) ", "(VllmWorker rank=1 pid=9) ",
# "(RayWorkerWrapper pid=5, ip=10.0.0.2) ", then its logger's "INFO 11-20 10:00:00 [file.py:12] " (2024:
# "file.py:12] "). Both come alone too: a child's raw stderr has only the first, one process only the second.
_PROC = re_cache.compile(
    r"\((?P<proc>[A-Za-z][\w-]*)(?: rank=(?P<rankn>\d+)| (?P<tp>TP\d+))? pid=(?P<pid>\d+)(?:, ip=[\w.:-]+)?\) ?"
)
_LOG = re_cache.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<time>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? \[?(?P<src>[\w./-]+:\d+)\] "
)
# A paste that trimmed the pid and the time keeps "(EngineCore_DP0) ERROR [core.py:1104] " or, on a traceback's
# lines, "(StageEngineCoreProc_stage0_replica0) ERROR ": the process name is then the stream.
_PROC_BARE = re_cache.compile(r"\((?P<proc>[A-Za-z][\w-]*)\) (?=(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) )")
_LOG_BARE = re_cache.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:\[(?P<src>[\w./-]+:\d+)\] )?")
_RANKS = re_cache.compile(r"(?<=_)(?:DP|PP|PCP|TP|DCP|EP)\d+")
_RAY_REPEAT = re_cache.compile(r" \[repeated \d+x across cluster\]$")
# Process names vLLM gives its processes (V1 engine core, workers, API server; V0 and Ray workers).
_PROCESSES = ("EngineCore", "VllmWorker", "Worker_", "APIServer", "ApiServer", "RayWorkerWrapper",
              "DPSupervisor", "DPCoordinator")


def _rank(m: re.Match) -> str | None:
    """'Worker_DP0_TP1' -> 'DP0 TP1'; 'VllmWorker rank=1' and 'VllmWorker TP1' -> 'TP1'."""
    if m["rankn"]:
        return f"TP{m['rankn']}"
    if m["tp"]:
        return m["tp"]
    return " ".join(_RANKS.findall(m["proc"])) or None


class VLLMLines:
    """vLLM's process prefix and its logger's; it remembers each process's last logger prefix."""

    def __init__(self) -> None:
        self._heads: dict[str | None, str] = {}  # pid -> the last logger prefix it printed

    def read(self, text: str, time: str | None, pid: str | None) -> Prefix | None:
        found = bare = False
        rank = server = None
        prefixed = False
        if text[:1] == "(" and " pid=" in text[:96]:
            # the API server relays its engine's lines under its own prefix: the innermost one is the writer
            while (v := _PROC.match(text)) is not None:
                found = True
                pid = v["pid"]  # the process is the stream: eight workers interleave on one journal pid
                rank = _rank(v)
                server = NAME if v["proc"].startswith(_PROCESSES) else server
                text = text[v.end() :]
        elif text[:1] == "(" and (b := _PROC_BARE.match(text)) is not None:
            bare = True  # its level follows (the lookahead saw it); the process name is the stream
            pid = b["proc"]
            rank = " ".join(_RANKS.findall(b["proc"])) or None
            text = text[b.end() :]
        if text[:1] in "DIWEC":
            lg = (_LOG_BARE if bare else _LOG).match(text)
            if lg:
                found, server = True, NAME
                # vLLM repeats its prefix on every line of a multi-line record (a traceback):
                # only a new time or source line starts a new record (a trimmed line without its source
                # continues the last).
                if lg["src"]:
                    head = lg.group(0)
                    prefixed = self._heads.get(pid) != head
                    self._heads[pid] = head
                if not bare:
                    time = time or PLACEHOLDER_YEAR + lg["time"]  # vLLM prints no year; journal short times neither
                text = text[lg.end() :]
        if not found:
            return None
        if text.endswith("across cluster]"):
            text = _RAY_REPEAT.sub("", text)
        return Prefix(text, time, pid, rank, server, prefixed)


# "non-default args: {'model': ..., 'max_model_len': 32768}", the engine's config line, and
# "args: Namespace(model=..., ...)", every argument, as vLLM 0.5-0.9's API server logs them.
_ARGS = ("non-default args: ", "with config: ", "args: Namespace")


def _arguments(message: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for marker in _ARGS:
        at = message.find(marker)
        if at < 0 or (marker == "with config: " and "LLM engine" not in message[:at]):
            continue
        try:
            parsed = parse_args_body(message[at + len(marker) :].strip())
        except (IndexError, ValueError):
            continue
        for k, v in parsed.items():
            out.setdefault(k, v)
    return out


SERVER = Server(
    name=NAME,
    title="vLLM",
    line_format=VLLMLines,
    paste_heads=r"\([A-Za-z][\w-]*(?: rank=\d+| TP\d+)? pid=\d+|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d ",
    # vLLM paths under model_executor/ or distributed/ are not signs: SGLang imported them
    signs=("vLLM API server version", "vLLM server version", "LLM engine (v", "non-default args:",
           "EngineCore failed to start", "Engine core initialization failed", "WorkerProc failed to start",
           "WorkerProc hit an exception", "Engine process failed to start", "Starting vLLM ",
           "/vllm/v1/", "/vllm/engine/", "/vllm/worker/", "/vllm/executor/", "/vllm/entrypoints/",
           "packages/vllm/utils", "packages/vllm/config"),
    launch=("vllm serve ", "vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"),
    # "vLLM API server version 0.8.5" (2025), "vLLM server version 0.34.0, serving model"; the engine's
    # "Initializing a V1 LLM engine (v0.10.1) with config:" (V0: "Initializing an LLM engine (v0.6.3)").
    version=(
        VersionFact(("vLLM API server version", "vLLM server version"),
                    r"vLLM (?:API )?server version v?(\d+\.\d+\.\d+[\w.+-]*?),?(?:\s|$)"),
        VersionFact(("LLM engine (v",), r"LLM engine \(v(\d+\.\d+\.\d+[\w.+-]*)\)"),
    ),
    args=ArgsFormat(
        markers=_ARGS,
        read=_arguments,
        facts={"model": "model_path", "tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
               "data_parallel_size": "dp_size", "max_model_len": "max_model_len", "max_seq_len": "max_model_len",
               "gpu_memory_utilization": "gpu_memory_utilization", "max_num_seqs": "max_num_seqs",
               "enforce_eager": "enforce_eager", "kv_cache_dtype": "kv_cache_dtype", "quantization": "quantization",
               "port": "port", "trust_remote_code": "trust_remote_code",
               "max_num_batched_tokens": "max_num_batched_tokens"},
    ),
    env_prefixes=("VLLM_",),
    packages=re.compile(r"(?<![\w/.-])vllm(?:\[[^\]]*\])?(?![\w/-])"),
    settings={
        "memory_fraction": ("--gpu-memory-utilization",),
        "context_length": ("--max-model-len",),
        "tensor_parallel": ("--tensor-parallel-size",),
        "pipeline_parallel": ("--pipeline-parallel-size",),
        "data_parallel": ("--data-parallel-size",),
        "max_running_requests": ("--max-num-seqs",),
        "no_cuda_graph": ("--enforce-eager",),
        "cuda_graph_max_batch": ("--max-cudagraph-capture-size",),
        "prefill_chunk": ("--max-num-batched-tokens",),
        "attention_backend": ("--attention-backend",),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "trust_remote_code": ("--trust-remote-code",),
        "quantization": ("--quantization",),
        "port": ("--port",),
    },
    flag_sources=("vllm/engine/arg_utils.py", "vllm/entrypoints/"),
    # vLLM registers its dataclass fields through helpers; these classes' fields are its flags
    flag_classes=frozenset({"EngineArgs", "AsyncEngineArgs", "BaseFrontendArgs", "FrontendArgs"}),
)
