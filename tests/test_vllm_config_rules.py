"""vLLM's argument and configuration checks: the flag a message names becomes the fix, in vLLM's spelling."""

from __future__ import annotations

from logsense.fixes import render
from logsense.model import FixKind
from logsense.pipeline import run
from logsense.rules.loader import FixSpec

FIELD_FIX = (FixSpec(FixKind.FLAG, "{field|flag}", "the setting {field|flag} names", {}, None),)


def test_a_field_is_written_as_its_flag():
    fixes = render(FIELD_FIX, {"server": "vllm"}, {"field": "max_num_batched_tokens"}, None)
    assert [(f.value, f.note) for f in fixes] == [("--max-num-batched-tokens", "the setting --max-num-batched-tokens names")]


def test_a_config_class_is_written_as_its_flag():
    spec = (FixSpec(FixKind.FLAG, "{cls|flag}-config", None, {}, None),)
    assert [f.value for f in render(spec, {"server": "vllm"}, {"cls": "KVTransfer"}, None)] == ["--kv-transfer-config"]
    assert render(spec, {"server": "vllm"}, {"cls": "Model"}, None) == ()  # vLLM has no --model-config


def test_a_field_that_is_no_flag_of_the_server_gives_no_fix():
    assert render(FIELD_FIX, {"server": "vllm"}, {"field": "compile_sizes"}, None) == ()
    assert render(FIELD_FIX, {"server": "vllm"}, {}, None) == ()


def _root(log: str, rules):
    return run(log.splitlines(), rules).root


PYDANTIC = """\
(APIServer pid=1) INFO 05-07 20:20:00 [utils.py:326] non-default args: {'model': '/models/m', 'max_loras': 4}
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 2501, in create_engine_config
(APIServer pid=1)     lora_config = LoRAConfig(
(APIServer pid=1)                   ^^^^^^^^^^^
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/pydantic/_internal/_dataclasses.py", line 121, in __init__
(APIServer pid=1)     s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)
(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for LoRAConfig
(APIServer pid=1)   Value error, max_cpu_loras (2) must be >= max_loras (4). [type=value_error, input_value=ArgsKwargs((), {'max_lora_rank': 16}), input_type=ArgsKwargs]
(APIServer pid=1)     For further information visit https://errors.pydantic.dev/2.11/v/value_error
"""


def test_pydantic_wrapped_check_names_the_first_flag_of_its_message(rules):
    root = _root(PYDANTIC, rules)
    assert root is not None and root.rule == "vllm-config-check-names-field"
    assert root.cause == "invalid_server_argument"
    assert [f.value for f in root.fixes] == ["--max-cpu-loras"]


ENGINE_CORE = """\
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010] EngineCore failed to start.
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010] Traceback (most recent call last):
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1001, in run_engine_core
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010]   File "/usr/local/lib/python3.12/dist-packages/vllm/config/vllm.py", line 3591, in validate_mamba_block_size
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010]     raise ValueError(
(EngineCore_DP0 pid=230) ERROR 05-07 20:20:07 [core.py:1010] ValueError: --mamba-block-size can only be set with --enable-prefix-caching
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/utils.py", line 1477, in wait_for_engine_startup
(APIServer pid=1)     raise RuntimeError(
(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_the_engine_core_check_is_the_root_and_the_engine_line_its_symptom(rules):
    root = _root(ENGINE_CORE, rules)
    assert root is not None and root.rule == "vllm-config-check-names-flag"
    assert [f.value for f in root.fixes] == ["--mamba-block-size"]
