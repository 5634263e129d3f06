"""What the log says about the setup: versions, GPU, model, server flags; fixes are rendered from it."""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from logsense import re_cache
from logsense.memo import text_memo
from logsense.model import Record
from logsense.prefilter import LiteralIndex
from logsense.servers import BY_NAME, SERVERS

# (literals the line must hold (any), pattern, fact name); the first group is the value. The literals
# are what the block scanner looks for, so they must be rare: never "python3" or "sglang" alone,
# which stand in every journal prefix of a unit that runs `python3` or `sglang serve`.
_SIMPLE: list[tuple[tuple[str, ...], str, str]] = [
    (("torch==", "torch version", "PyTorch version", "torch_version="),
     r"\b(?i:torch)(?:==|\s+version[:=]?\s*|_version=)v?(\d+\.\d+\.\d+)", "torch_version"),
    (("CUDA Version", "CUDA_VERSION", "CUDA runtime", "CUDA version", "cuda_version=", "cuda=="),
     r"\b(?i:cuda)(?: Version| runtime(?: version)?| version|_VERSION|_version=|==)[: =]*(\d+\.\d+)", "cuda_version"),
    (("Driver Version",), r"Driver Version:?\s*(\d+\.\d+(?:\.\d+)?)", "driver_version"),
    (("NVIDIA ",),
     r"\b(NVIDIA (?:(?:GeForce|Tesla|Quadro|RTX|TITAN) )*[A-Z]{0,4}\d{2,4}[A-Za-z0-9-]*"
     r"(?: (?:SXM\d?|PCIe|NVL\d*|HBM\d\w*|\d+\s?GB|Ti|SUPER|Max-Q|AC|Ada|Generation|Laptop GPU|Graphics))*)",
     "gpu_name"),
    (("device_name=NVIDIA_",), r"device_name=(NVIDIA_[A-Za-z0-9_]+?)(?:,|\.json|$)", "gpu_name"),
    (("Load weight end",), r"Load weight end\..*?\btype=([A-Za-z0-9_]+)", "model_arch"),
    (("architectures",), r"architectures['\"]?\s*[:=]\s*\[['\"]([A-Za-z0-9_]+)", "model_arch"),
    (("max_running_requests=",), r"\bmax_running_requests=(\d+)", "max_running_requests"),
    (("max_total_num_tokens=",), r"\bmax_total_num_tokens=(\d+)", "max_total_num_tokens"),
    (("context_len=",), r"\bcontext_len=(\d+)", "context_len"),
    (("Available KV cache memory:",), r"Available KV cache memory: ([\d.]+) GiB", "kv_cache_memory_gib"),
    (("KV cache size:",), r"KV cache size: ([\d,]+) tokens", "kv_cache_tokens"),
    (("estimated maximum model length is",), r"estimated maximum model length is (\d+)", "max_model_len_fits"),
]
# Common lines of a startup log whose server prefix (rec.server) says which server wrote it.
_VOICE = ('File "', "Traceback", "Error", "error", "Route: /", "Application startup complete", "Started server process",
          "Loading weights took", "Model loading took", "KV cache", "init engine", "CUDA graph", "Load weight")
# Counts are numbers wherever they come from (the server_args dump gives ints): one type a fact.
_COUNTS = frozenset({"max_running_requests", "max_total_num_tokens", "context_len", "kv_cache_tokens",
                     "max_model_len_fits"})


def _typed(name: str, value: str) -> Any:
    if name == "gpu_name":
        return value.replace("_", " ")
    if name in _COUNTS and value.replace(",", "").isdigit():
        return int(value.replace(",", ""))
    if name == "kv_cache_memory_gib":
        try:
            return float(value)
        except ValueError:
            return value
    return value


# Every name `Facts.snapshot` can give besides the `arg_*` ones: a fix template may name these
# (a test checks the list against what the corpus yields).
FACT_NAMES = frozenset(
    {name for _, _, name in _SIMPLE} | {f"{s.name}_version" for s in SERVERS}
    | {fact for s in SERVERS for fact in s.args.facts.values()}
    | {"server", "server_version", "python_minor", "python_version", "gpu_count", "model_is_multimodal", "model_is_local",
       "model_path", "tp_size", "dp_size", "ep_size", "pp_size", "attention_backend", "mm_attention_backend", "port",
       "context_length", "chunked_prefill_size", "cuda_graph_max_bs", "mem_fraction_static", "max_running_requests",
       "quantization", "kv_cache_dtype", "skip_server_warmup", "disable_cuda_graph", "enable_torch_compile",
       "enable_multimodal", "gpu_memory_utilization_higher", "max_num_seqs_lower", "mem_fraction_static_lower",
       "mem_fraction_static_higher", "cuda_graph_max_bs_lower", "chunked_prefill_size_lower",
       "max_running_requests_lower"}
)
_RANK_MARKERS = ("Load weight begin", "Init torch distributed begin", "Load weight end", "Memory pool end")
_PY_LITERALS = ("include/python3", "/python3.", "cpython-3", "Python 3.")

_PY_INCLUDE = re_cache.compile(r"include/python(3\.\d{1,2})\b")
_PY_PATH = re_cache.compile(r"/python(3\.\d{1,2})/|cpython-3(\d{1,2})-|\bPython (3\.\d{1,2})\.\d+")
_MULTIMODAL_ARCH = re_cache.compile(
    r"VL|Vision|Llava|LLaVA|ConditionalGeneration|Qwen2_?5_?VL|InternVL|MiniCPM[VO]|Mllama|Pixtral|Idefics|Phi4MM|"
    r"Janus|Gemma3n?ForConditional|KimiK2[5-9]|KimiVL|Kimi-VL|Glm4v|DeepseekVL|Ovis|Step3VL|MultiModal"
)
# Lines that only a model with a vision tower prints (server_args alone names mm_* flags for every model).
_MULTIMODAL_HINTS = (
    "vision tower", "vision_tower", "VisionTransformer", "has_image_understanding", "image_processor",
    "multimodal warmup", "vision_model", "/v1/chat/completions with image",
)


def _lower_fraction(x: float) -> float:
    return max(0.5, math.floor((x - 0.05) * 20 + 1e-9) / 20)


def _python_versions_in(msg: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The Python versions a line names: in an include path (the headers built against), in any other path."""
    paths = (a or (f"3.{b}" if b else c) for a, b, c in _PY_PATH.findall(msg))
    return tuple(_PY_INCLUDE.findall(msg)), tuple(v for v in paths if v)


_python_versions = text_memo(_python_versions_in)  # every rank's MoE-config warning names the same path


def _reading_of(msg: str) -> tuple[frozenset[str], tuple[tuple[Any, ...], ...]]:
    """The servers a line's own signs name, and the other keys its literals give, each once in the literals' order."""
    keys = _compiled()[0].keys_in(msg)
    signs = frozenset(key[1] for key in keys if key[0] == "server")
    return signs, tuple(dict.fromkeys(key for key in keys if key[0] != "server"))


_reading = text_memo(_reading_of)


@lru_cache(maxsize=1)
def _compiled() -> tuple[LiteralIndex[tuple[Any, ...]], list[tuple[re.Pattern, str]]]:
    """The literal index and fact patterns, built once a process (a Facts is made per startup of a log)."""
    simple = _simple_facts()
    entries: list[tuple[str, bool, tuple[Any, ...]]] = [(lit, False, ("s", i)) for i, (lits, _, _) in enumerate(simple) for lit in lits]
    entries += [(lit, False, ("args", s.name)) for s in SERVERS for lit in s.args.markers]
    entries += [(lit, False, ("py",)) for lit in _PY_LITERALS]
    entries += [(h, True, ("mm",)) for h in _MULTIMODAL_HINTS]
    entries += [(lit, False, ("server", s.name)) for s in SERVERS for lit in s.signs]
    entries += [(lit, False, ("launch", s.name)) for s in SERVERS for lit in s.launch]
    entries += [(lit, False, ("voice",)) for lit in _VOICE]
    # every rank prints these once: counting ranks here (not on every line) gives the same
    # count whether all lines were read or only the ones the block scanner picked
    entries += [(m, False, ("rank",)) for m in _RANK_MARKERS]
    return LiteralIndex(entries), [(re_cache.compile(p), name) for _, p, name in simple]


def _simple_facts() -> list[tuple[tuple[str, ...], str, str]]:
    """The one-pattern facts: each server's release, then the others."""
    versions = [(v.literals, v.pattern, f"{s.name}_version") for s in SERVERS for v in s.version]
    return versions + _SIMPLE


class Facts:
    """Collects facts line by line; `snapshot()` gives the fact dict that fix templates use."""

    def __init__(self) -> None:
        self.index, self._simple = _compiled()
        self.values: dict[str, Any] = {}
        self.args_of: dict[str, dict[str, Any]] = {s.name: {} for s in SERVERS}  # each server's dumped arguments
        self._py_include: Counter[str] = Counter()
        self._py_path: Counter[str] = Counter()
        self._ranks: set[str] = set()
        self.mm_hint = False
        self._server_votes: Counter[str] = Counter()
        self._launched: set[str] = set()  # servers whose launch command the log shows

    def feed(self, rec: Record) -> None:
        msg = rec.message
        signs, keys = _reading(msg)
        if not keys and not signs:
            return
        # A line that holds a fact literal is fed whether the whole log or the scanner's picks are
        # read, so counting its server here gives the same answer either way.
        for server in signs | {rec.server} if rec.server else signs:
            self._server_votes[server] += 1
        for key in keys:
            if key[0] == "s":
                rx, name = self._simple[key[1]]
                if name in self.values:
                    continue  # the first value of a fact stands
                m = rx.search(msg)
                if m:
                    self.values[name] = _typed(name, m.group(1))
            elif key[0] == "args":
                fmt, args = BY_NAME[key[1]].args, self.args_of[key[1]]
                if not (fmt.once and args):
                    for k, v in fmt.read(msg).items():
                        args.setdefault(k, v)
            elif key[0] == "py":
                include, path = _python_versions(msg)
                self._py_include.update(include)
                self._py_path.update(path)
            elif key[0] == "mm":
                self.mm_hint = True
            elif key[0] == "launch":
                self._launched.add(key[1])
            elif key[0] == "rank" and rec.rank:
                self._ranks.add(rec.rank)

    def server(self) -> str | None:
        """The server the log shows launched, else the one whose own lines it holds most of; None when it says
        none, or two as often."""
        if len(self._launched) == 1:
            return next(iter(self._launched))
        top = self._server_votes.most_common(2)
        if not top or (len(top) == 2 and top[0][1] == top[1][1]):
            return None
        return top[0][0]

    def snapshot(self) -> dict[str, Any]:
        f: dict[str, Any] = dict(self.values)
        server = self.server()
        if server:
            f["server"] = server
            version = f.get(f"{server}_version")
            if version:
                f["server_version"] = version
        for s in SERVERS:
            for k, v in self.args_of[s.name].items():
                name = s.args.facts.get(k)
                if name and v is not None:
                    f.setdefault(name, v)
        # a server whose dump is its whole configuration has the last word on an argument both name
        a = {k: v for s in sorted(SERVERS, key=lambda s: s.args.overrides) for k, v in self.args_of[s.name].items()}
        for k, v in a.items():
            f[f"arg_{k}"] = v
        py = (self._py_include or self._py_path).most_common(1)
        if py:
            f["python_minor"] = py[0][0]
            f.setdefault("python_version", py[0][0])
        for name in ("model_path", "tp_size", "dp_size", "ep_size", "pp_size", "attention_backend",
                     "mm_attention_backend", "port", "context_length", "chunked_prefill_size", "cuda_graph_max_bs",
                     "mem_fraction_static", "max_running_requests", "quantization", "kv_cache_dtype",
                     "skip_server_warmup", "disable_cuda_graph", "enable_torch_compile", "enable_multimodal"):
            if a.get(name) is not None:
                f.setdefault(name, a[name])
        gmu = f.get("gpu_memory_utilization")
        if isinstance(gmu, (int, float)) and gmu < 0.95:
            f["gpu_memory_utilization_higher"] = f"{min(0.95, round(float(gmu) + 0.05, 2)):.2f}".rstrip("0")
        mns = f.get("max_num_seqs")
        if isinstance(mns, int) and mns > 1:
            f["max_num_seqs_lower"] = max(1, mns // 2)
        mfs = f.get("mem_fraction_static")
        if isinstance(mfs, (int, float)):
            f["mem_fraction_static_lower"] = f"{_lower_fraction(float(mfs)):.2f}".rstrip("0").rstrip(".")
            f["mem_fraction_static_higher"] = f"{min(0.95, round(float(mfs) + 0.04, 2)):.2f}".rstrip("0")
        bs = f.get("cuda_graph_max_bs")
        if isinstance(bs, int) and bs > 1:
            f["cuda_graph_max_bs_lower"] = max(1, bs // 2)
        cps = f.get("chunked_prefill_size")
        if isinstance(cps, int) and cps > 512:
            f["chunked_prefill_size_lower"] = max(512, cps // 2)
        mrr = f.get("max_running_requests")
        if isinstance(mrr, str) and mrr.isdigit():
            mrr = int(mrr)
            f["max_running_requests"] = mrr
        if isinstance(mrr, int) and mrr > 1:
            f["max_running_requests_lower"] = max(1, mrr // 2)
        if self._ranks:
            tps = [r for r in self._ranks for part in r.split() if part.startswith("TP")]
            f.setdefault("gpu_count", len(set(tps)) or None)
        f["model_is_multimodal"] = self._multimodal(f)
        f["model_is_local"] = _is_local_path(f.get("model_path"))
        return f

    def _multimodal(self, f: dict[str, Any]) -> bool | None:
        if f.get("enable_multimodal") is True:
            return True
        arch = f.get("model_arch") or ""
        path = str(f.get("model_path") or "")
        if arch:
            return bool(_MULTIMODAL_ARCH.search(arch)) or self.mm_hint
        if _MULTIMODAL_ARCH.search(path.rsplit("/", 1)[-1]):
            return True
        return True if self.mm_hint else None


def _is_local_path(path: object) -> bool | None:
    """True for a filesystem path, False for a hub id (org/name), None when the log gives neither."""
    if not isinstance(path, str) or not path:
        return None
    if path.startswith(("/", "./", "../", "~")) or path in (".", ".."):
        return True
    return False if re.fullmatch(r"[\w.-]+(?:/[\w.-]+)?", path) else None
