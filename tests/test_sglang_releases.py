"""Older SGLang releases (0.3.x-0.5.1): their wording gets the cause, and fixes those releases can run.

The logs are in each release's own shapes (paths of its source layout, its exact messages), as
the releases' source prints them; a flag the release did not have must not be advised.
"""

from __future__ import annotations

import pytest

from logsense.coverage.config import load_config
from logsense.flags import has_flag
from logsense.pipeline import run

SGLANG_036_NO_VLLM = """\
Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/usr/local/lib/python3.10/dist-packages/sglang/launch_server.py", line 6, in <module>
    from sglang.srt.server import launch_server
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/server.py", line 48, in <module>
    from sglang.srt.managers.data_parallel_controller import (
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/layernorm.py", line 34, in <module>
    from vllm.model_executor.custom_op import CustomOp
ModuleNotFoundError: No module named 'vllm'
"""

SGLANG_046_AWQ_NO_VLLM = """\
[2025-05-01 10:00:01] server_args=ServerArgs(model_path='Qwen/Qwen2.5-7B-Instruct-AWQ', quantization='awq', tp_size=1)
[2025-05-01 10:00:08 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/quantization/__init__.py", line 110, in get_quantization_config
    raise ValueError(
ValueError: awq quantization requires some operators from vllm. Pleaes install vllm by `pip install vllm==0.7.2`
"""

SGLANG_036_ARCH = """\
[2024-11-21 10:00:08 TP0] Load weight begin. avail mem=23.34 GB
[2024-11-21 10:00:08 TP0] Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", line 725, in load_model_cls_srt
    raise ValueError(
ValueError: Unsupported architectures: Gemma2ForCausalLM. Supported list: ['LlamaForCausalLM', 'Qwen2ForCausalLM']
"""

SGLANG_036_NO_DRIVER = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/server_args.py", line 160, in __post_init__
    gpu_mem = get_nvgpu_memory_capacity()
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/utils.py", line 838, in get_nvgpu_memory_capacity
    raise RuntimeError(
RuntimeError: nvidia-smi not found. Ensure NVIDIA drivers are installed and accessible.
"""

SGLANG_046_NO_DEVICE = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/utils.py", line 1310, in get_device
    raise RuntimeError("No accelerator (CUDA, XPU, HPU) is available.")
RuntimeError: No accelerator (CUDA, XPU, HPU) is available.
"""

SGLANG_046_GGUF = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/hf_transformers_utils.py", line 97, in get_config
    raise RuntimeError(f"Can't get gguf config for {config.model_type}.")
RuntimeError: Can't get gguf config for qwen2vl.
"""


@pytest.mark.parametrize(("log", "rule", "has", "lacks"), [
    # the vllm these releases were built with, kept as vllm (not "pip install sglang"); no --model-impl then
    (SGLANG_036_NO_VLLM, "sglang-vllm-dependency-missing", "pip install vllm==0.6.3.post1", "--model-impl"),
    # the version the message names, kept as vllm (not rewritten into SGLang's package)
    (SGLANG_046_AWQ_NO_VLLM, "quantization-needs-vllm-ops", "pip install vllm==0.7.2", "pip install sglang"),
    # 0.3.x had no --model-impl
    (SGLANG_036_ARCH, "model-architecture-unsupported", "sglang", "--model-impl"),
    # 0.3.x had no CPU device
    (SGLANG_036_NO_DRIVER, "no-accelerator-visible", "nvidia-smi", "--device cpu"),
    (SGLANG_046_NO_DEVICE, "no-accelerator-visible", "--device cpu", "rocm-smi"),
    # 0.4.x-0.5.1 read a GGUF's config from the file alone: a config.json beside it does not help
    (SGLANG_046_GGUF, "gguf-config-not-derivable", "safetensors", "config.json next to"),
], ids=["0.3-no-vllm", "0.4.6-awq-no-vllm", "0.3-architecture", "0.3-no-driver", "0.4.6-no-device", "0.4.6-gguf"])
def test_an_older_release_gets_its_cause_and_a_fix_it_can_run(rules, log, rule, has, lacks):
    root = run(log.splitlines(), rules).root
    assert root is not None and root.rule == rule
    said = " | ".join(f"{f.value} {f.note or ''}" for f in root.fixes)
    assert has in said
    assert lacks not in " | ".join(f.value for f in root.fixes)


@pytest.mark.parametrize(("version", "flag", "known"), [
    ("0.3.6", "--attention-backend", True),
    ("0.3.6", "--disable-flashinfer", True),  # deprecated for --attention-backend triton, still parsed
    ("0.4.0", "--dist-timeout", False),
    ("0.4.6", "--dist-timeout", True),
    ("0.4.8", "--skip-server-warmup", False),  # --skip-server-warmup, --model-impl, --nccl-port: 0.4.9
    ("0.4.9.post1", "--skip-server-warmup", True),
    ("0.4.8", "--model-impl", False),
    ("0.5.12", "--fp8-gemm-backend", True),
    ("0.5.20", "--cuda-graph-max-bs", False),  # split into -decode / -prefill by then
    (None, "--cuda-graph-max-bs", True),  # version unknown: every release's, older.txt included
])
def test_flag_vocabulary_of_an_older_sglang_release(version, flag, known):
    assert has_flag("sglang", flag, version) is known


def test_a_warmup_fix_names_no_flag_the_logs_release_lacks(rules):
    lines = ["sglang version 0.4.6.post1",
             "[2025-05-01 10:00:21] Initialization failed. warmup error: Traceback (most recent call last):",
             '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/entrypoints/http_server.py", line 772, in _wait_and_warmup',
             '    assert res.status_code == 200, f"{res=}, {res.text=}"',
             "AssertionError: res=<Response [502]>, res.text=''"]

    def fixes(version: str) -> list[str]:
        root = run([lines[0].replace("0.4.6.post1", version)] + lines[1:], rules).root
        assert root is not None and root.cause == "warmup_request_failed"
        return [f.value for f in root.fixes]

    assert "--skip-server-warmup" not in fixes("0.4.6.post1")
    assert "--skip-server-warmup" in fixes("0.4.9.post6")
    assert any("no_proxy" in v for v in fixes("0.4.6.post1"))


def test_sglang_0_3_rank_prefix_is_read(rules):
    """0.3.6 logs "DP-1 TP0" when there is no data parallelism (DP_RANK unset reads as -1)."""
    lines = ["[2024-11-21 10:00:07 DP-1 TP0] Init torch distributed begin.",
             "[2024-11-21 10:00:08 DP-1 TP0] Load weight begin. avail mem=23.34 GB",
             "[2024-11-21 10:00:15 DP-1 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=8.25 GB"]
    report = run(lines, rules)
    assert [(p.name, p.seconds) for p in report.phases][:2] == [("distributed_init", 1.0), ("weight_loading", 7.0)]


def test_the_release_is_read_from_check_env(rules):
    """`python3 -m sglang.check_env`, which SGLang's issue template asks for, names the release."""
    report = run(["Python: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]", "sglang: 0.4.6.post1",
                  "[2025-05-01 10:00:08 TP0] Load weight begin. avail mem=23.34 GB"], rules)
    assert report.facts.get("sglang_version") == "0.4.6.post1"


def test_sglang_0_3_0_prefix_without_a_day_is_read(rules):
    """0.3.4 and older print "[10:00:07 TP0] " (datefmt %H:%M:%S): the prefix is read, no day is made up."""
    lines = ["[10:00:07 TP0] Init nccl begin.", "[10:00:21 TP0] Exception in ModelTpServer:",
             "Traceback (most recent call last):",
             '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/tp_worker.py", line 228, in exposed_step',
             "RuntimeError: CUDA error: an illegal memory access was encountered"]
    report = run(lines, rules)
    assert report.root is not None and report.root.cause == "cuda_illegal_memory_access"
    assert any(d.rule == "scheduler-hit-exception" for d in report.diagnoses)  # its '^Exception in' anchor holds


@pytest.mark.parametrize(("path", "area"), [
    ("sglang/srt/server.py", "entrypoints"),  # <= 0.4.3
    ("sglang/srt/utils.py", "utils"),  # before the utils/ package
    ("sglang/srt/hf_transformers_utils.py", "tokenizer_manager"),
    ("sglang/srt/managers/controller_single.py", "scheduler_init"),  # <= 0.3.0
    ("sglang/srt/model_config.py", "model_loading"),
])
def test_older_layouts_are_on_the_startup_path(path, area):
    assert load_config("sglang").area(path) == area


def test_vllm_named_by_an_sglang_log_stays_vllm(rules):
    """sglang <= 0.4 ran on vllm's kernels: a broken vllm build in its log is advice about vllm, not the other server."""
    lines = ["[2024-11-21 10:00:08 TP0] Init torch distributed begin.",
             "[2024-11-21 10:00:09 TP0] Traceback (most recent call last):",
             '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/fused_moe/fused_moe.py", line 13, in <module>',
             "    from vllm import _custom_ops as ops",
             "ImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c1010Dispatcher17runRecordFunctionERN2at14RecordFunctionE"]
    root = run(lines, rules).root
    assert root is not None and root.rule == "kernel-undefined-symbol"
    values = [f.value for f in root.fixes]
    assert "pip install --force-reinstall --no-deps vllm" in values
    assert not any(v.endswith(" sglang") for v in values)
