"""vLLM as a first-class server: its prefixes, the server fact, its phases, its flags in every fix."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from conftest import CORPORA
from logsense.commands.analyze import analyze_path
from logsense.coverage.flags import extract
from logsense.facts import Facts
from logsense.flags import for_server, has_flag, vocabulary
from logsense.normalize import Normalizer
from logsense.pipeline import run

HEALTHY = CORPORA / "constructed" / "vllm-healthy-v1.log"
KV_SMALL = CORPORA / "constructed" / "vllm-kv-cache-too-small-v1.log"


@pytest.mark.parametrize(
    ("line", "message", "pid", "rank"),
    [
        ("(EngineCore_DP0 pid=123) ERROR 11-20 10:00:00 [core.py:700] EngineCore failed to start.",
         "EngineCore failed to start.", "123", "DP0"),
        ("(Worker_TP1 pid=9) INFO 11-20 10:00:00 [gpu_worker.py:276] Available KV cache memory: 6.94 GiB",
         "Available KV cache memory: 6.94 GiB", "9", "TP1"),
        ("(Worker_DP0_PP1_TP2 pid=9) INFO 11-20 10:00:00 [x.py:1] hello", "hello", "9", "DP0 PP1 TP2"),
        ("(VllmWorker rank=3 pid=406) ERROR 07-23 19:34:51 [multiproc_executor.py:487]     self.NCCL_CHECK(",
         "    self.NCCL_CHECK(", "406", "TP3"),
        ("(VllmWorker TP5 pid=7748) WARNING 08-21 21:08:22 [cudagraph_dispatcher.py:101] keys", "keys", "7748", "TP5"),
        ("ERROR 01-28 03:21:01 engine.py:387]   File \"/x/fp8_utils.py\", line 335, in w8a8",
         "  File \"/x/fp8_utils.py\", line 335, in w8a8", None, None),
        ("(RayWorkerWrapper pid=1697, ip=192.168.223.79) ERROR 03-13 07:34:00 worker_base.py:581]     self.mlp = M( "
         "[repeated 3x across cluster]", "    self.mlp = M(", "1697", None),
        ("#033[1;36m(VllmWorkerProcess pid=382)#033[0;0m ERROR 07-15 08:09:04 [multiproc_worker_utils.py:239] "
         "  File \"/x.py\", line 1359, in _dummy_run#015", "  File \"/x.py\", line 1359, in _dummy_run", "382", None),
        # ESC in caret notation (`cat -v`, a log viewer's copy)
        ("^[[36m(LLMRayActor pid=95409)^[[0m INFO 05-01 10:00:00 [worker.py:1] ready ^[[1;31m", "ready ", "95409", None),
        ("(APIServer pid=1) INFO:     Application startup complete.", "INFO:     Application startup complete.", "1",
         None),
        ("Nov 20 10:00:00 gpu01 vllm[4242]: (EngineCore_DP0 pid=77) INFO 11-20 10:00:00 [core.py:74] Initializing",
         "Initializing", "77", "DP0"),
    ],
)
def test_vllm_prefixes(line, message, pid, rank):
    (rec,) = Normalizer().feed(1, line)
    assert rec.message == message
    assert rec.pid == pid
    assert rec.rank == rank
    assert rec.server == "vllm"


def test_a_vllm_traceback_is_one_record_per_logger_call():
    n = Normalizer()
    head = "(EngineCore_DP0 pid=5) ERROR 11-20 10:00:00 [core.py:700] "
    first, second = n.feed(1, head + "EngineCore failed to start."), n.feed(2, head + "Traceback (most recent call last):")
    third = n.feed(3, "(EngineCore_DP0 pid=5) ERROR 11-20 10:00:01 [core.py:9] next record")
    assert first[0].prefixed and not second[0].prefixed and third[0].prefixed
    assert first[0].time == "2000-11-20 10:00:00"


def test_sglang_prefix_says_sglang_and_a_bare_python_timestamp_says_nothing():
    (rec,) = Normalizer().feed(1, "[2026-01-01 00:00:00 TP3] Load weight begin.")
    assert rec.server == "sglang"
    (rec,) = Normalizer().feed(1, "[2025-08-21 21:08:22,628] LMCache INFO: hit")
    assert rec.server is None


def test_server_facts_and_vllm_args():
    facts = Facts()
    n = Normalizer()
    for i, line in enumerate(HEALTHY.read_text().splitlines(), 1):
        for rec in n.feed(i, line):
            facts.feed(rec)
    f = facts.snapshot()
    assert f["server"] == "vllm" and f["server_version"] == "0.10.1.1"
    assert f["max_model_len"] == 32768 and f["gpu_memory_utilization"] == 0.9
    assert f["tp_size"] == 1 and f["model_path"] == "Qwen/Qwen3-8B"
    assert float(f["kv_cache_memory_gib"]) == 52.18


def test_older_vllm_args_namespace():
    facts = Facts()
    line = ("INFO 10-17 08:11:58 api_server.py:529] args: Namespace(subparser='serve', model_tag='Qwen/Qwen2.5-7B', "
            "host=None, port=8000, model='Qwen/Qwen2.5-7B', max_model_len=32768, gpu_memory_utilization=0.85, "
            "swap_space=4, max_num_seqs=256, tensor_parallel_size=2, dispatch_function=<function serve at 0x7f2b1c3d4e50>)")
    for rec in Normalizer().feed(1, line):
        facts.feed(rec)
    f = facts.snapshot()
    assert f["gpu_memory_utilization"] == 0.85 and f["gpu_memory_utilization_higher"] == "0.9"
    assert f["tp_size"] == 2 and f["max_num_seqs_lower"] == 128 and f["arg_swap_space"] == 4


def test_healthy_vllm_timeline_reaches_ready(rules):
    report = run(HEALTHY.read_text().splitlines(), rules)
    assert report.status.value == "ready"
    names = [p.name for p in report.phases]
    assert names == ["server_args", "distributed_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture",
                     "warmup", "serving"]


def test_uvicorn_ready_line_is_not_sglang_ready(rules):
    log = [
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.48 GB",
        "[2026-01-01 10:00:09] INFO:     Application startup complete.",
    ]
    report = run(log, rules)
    assert report.status.value != "ready" and report.phases[-1].name == "warmup"


def test_kv_cache_fix_carries_the_length_vllm_prints(rules):
    report, _ = analyze_path(str(KV_SMALL), rules)
    d = report.diagnoses[0]
    assert d.cause == "kv_cache_insufficient" and d.phase == "kv_cache_alloc"
    values = [f.value for f in d.fixes]
    assert "--max-model-len 50512" in values and "--kv-cache-dtype fp8" in values


def test_flag_vocabularies():
    assert has_flag("vllm", "--gpu-memory-utilization") and not has_flag("vllm", "--mem-fraction-static")
    assert has_flag("sglang", "--mem-fraction-static") and not has_flag("sglang", "--gpu-memory-utilization")
    assert has_flag("sglang", "--tp")  # argparse expands the unambiguous prefix --tp-size
    assert has_flag("vllm", "--no-enable-prefix-caching")
    assert for_server("--mem-fraction-static 0.8", "vllm") == "--gpu-memory-utilization 0.8"
    assert for_server("--context-length 4096", "vllm") == "--max-model-len 4096"
    assert for_server("--enforce-eager", "sglang") == "--disable-cuda-graph"
    assert for_server("--skip-server-warmup", "vllm") is None
    assert for_server("--skip-server-warmup", None) == "--skip-server-warmup"


@pytest.mark.parametrize(
    ("version", "flag", "known"),
    [
        ("0.6.3", "--model-impl", False),  # added in 0.7-0.8
        ("0.6.3.post1", "--gpu-memory-utilization", True),
        ("0.5.4", "--hf-overrides", False),
        ("0.5.4", "--tool-call-parser", False),  # added in 0.6
        ("0.4.2", "--max-model-len", True),  # older than every release shipped: the oldest one's flags
        ("0.7.3", "--model-impl", False),  # between two shipped releases: the older one's flags
        ("0.8.5", "--model-impl", True),
        ("0.10.2", "--attention-backend", False),  # VLLM_ATTENTION_BACKEND only, then
        ("0.10.2", "--swap-space", True),
        ("0.20.1", "--attention-backend", False),  # between 0.11.0 and the current release: 0.11.0's flags
        ("0.34.0", "--attention-backend", True),
        (None, "--attention-backend", True),  # version unknown: the current release's
        ("0.34.0", "--swap-space", True),  # removed, but kept by hand in vllm.older.txt
    ],
)
def test_flag_vocabulary_of_an_older_release(version: str | None, flag: str, known: bool):
    assert has_flag("vllm", flag, version) is known


def test_fix_names_no_flag_the_logs_release_lacks(rules):
    line = ("ValueError: Model architectures ['Qwen2VLForConditionalGeneration'] are not supported for now. "
            "Supported architectures: dict_keys(['LlamaForCausalLM'])")

    def fixes(version: str) -> list[str]:
        report = run([f"INFO 10-17 08:11:58 api_server.py:528] vLLM API server version {version}", line], rules)
        return [f.value for f in report.diagnoses[0].fixes]

    assert "--model-impl transformers" in fixes("0.8.5")
    assert not any("--model-impl" in v for v in fixes("0.6.3"))
    assert for_server("--mem-fraction-static 0.8", "vllm", "0.6.3") == "--gpu-memory-utilization 0.8"


def test_extract_reads_add_argument_and_fields(tmp_path: Path):
    src = '''
class EngineArgs:
    max_model_len: int | None = None
    _private: int = 0

def add_cli_args(parser):
    parser.add_argument("--tensor-parallel-size", "-tp", type=int)
'''
    wheel = tmp_path / "vllm-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("vllm/engine/arg_utils.py", src)
        z.writestr("vllm/other.py", 'parser.add_argument("--not-a-server-flag")')
    assert extract(wheel, "vllm") == ["--max-model-len", "--tensor-parallel-size"]


def _logs_of(server: str) -> list[Path]:
    out = []
    for label in sorted(CORPORA.rglob("*.label.yaml")):
        text = label.read_text(encoding="utf-8")
        if f"\nserver: {server}\n" in "\n" + text:
            log = label.with_name(label.name[: -len(".label.yaml")] + ".log")
            if log.exists():
                out.append(log)
    return out


@pytest.mark.parametrize(("server", "other"), [("vllm", "sglang"), ("sglang", "vllm")])
def test_no_fix_names_a_flag_of_the_other_server_only(rules, server, other):
    logs = _logs_of(server)
    if server == "vllm":
        assert len(logs) >= 30
    only_other = vocabulary(other) - vocabulary(server)
    for log in logs:
        report, _ = analyze_path(str(log), rules)
        for d in report.diagnoses:
            for fix in d.fixes:
                if fix.kind != "flag":
                    continue
                flags = [w for w in fix.value.split() if w.startswith("--")]
                bad = [f for f in flags if f in only_other and not has_flag(server, f)]
                assert not bad, f"{log.name}: {d.rule} suggests {bad}, which only {other} has"


def test_stats_and_diff_on_vllm_logs(rules):
    from logsense.batch import row_from_path
    from logsense.diff import diff_logs

    result = diff_logs(str(HEALTHY), str(KV_SMALL), rules)
    assert result.matters and result.first_error is not None
    assert "max seq len" in result.first_error.text
    assert any(f.name == "arg_max_model_len" and f.bad == 131072 for f in result.facts)
    good, bad = row_from_path(str(HEALTHY)), row_from_path(str(KV_SMALL))
    assert good["status"] == "ready" and good["cause"] == "healthy"
    assert bad["status"] == "failed" and bad["cause"] == "kv_cache_insufficient" and "50512" in bad["fix"]


def test_commands_name_the_detected_servers_package():
    from logsense.fixes import in_server_terms

    assert in_server_terms("command", "pip install -U sglang", "vllm") == "pip install -U vllm"
    assert in_server_terms("command", 'pip install -U "sglang[all]>=0.5"', "vllm") == 'pip install -U "vllm"'
    assert in_server_terms("command", "pip install --force-reinstall sgl-kernel", "vllm") is None
    assert in_server_terms("env", "SGLANG_ENABLE_JIT_DEEPGEMM=0", "vllm") is None
    assert in_server_terms("env", "VLLM_ATTENTION_BACKEND=XFORMERS", "sglang") is None
    assert in_server_terms("command", "pip install -U sglang", None) == "pip install -U sglang"
    assert in_server_terms("package", "apt install python3.12-dev", "vllm") == "apt install python3.12-dev"


@pytest.mark.parametrize(
    ("path", "area"),
    [
        ("vllm/config.py", "engine_args"),  # one file up to vLLM 0.9
        ("vllm/engine/llm_engine.py", "engine_core"),  # the V0 engine
        ("vllm/worker/worker.py", "worker"),
        ("vllm/executor/ray_utils.py", "worker"),
        ("vllm/attention/selector.py", "attention_backend"),
        ("vllm/utils.py", "utils"),
        ("vllm/engine/arg_utils.py", "engine_args"),
    ],
)
def test_coverage_reads_older_vllm_layouts(path: str, area: str):
    from logsense.coverage.config import load_config

    assert load_config("vllm").area(path) == area
