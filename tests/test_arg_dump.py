"""A server's argument dump reads as Python values, nested config objects included."""

from __future__ import annotations

from logsense.arg_dump import parse_args_body


def test_a_nested_config_objects_repr_is_one_value():
    """SGLang 0.5.16 prints config objects inside ServerArgs(...): the fields after them are still read."""
    body = ("ServerArgs(model_path='/models/gpt2', cuda_graph_config=CudaGraphConfig(decode=PhaseConfig("
            "backend='full', bs=[1, 2, 4]), prefill=None), speculative_algorithm='EAGLE', tp_size=2)")
    args = parse_args_body(body)
    assert args["cuda_graph_config"] == "CudaGraphConfig(decode=PhaseConfig(backend='full', bs=[1, 2, 4]), prefill=None)"
    assert args["speculative_algorithm"] == "EAGLE" and args["tp_size"] == 2
    assert "bs" not in args and "decode" not in args


def test_dict_and_plain_forms():
    assert parse_args_body("{'model': 'x', 'max_model_len': 4096}") == {"model": "x", "max_model_len": 4096}
    assert parse_args_body("a=1, b=None, c=True") == {"a": 1, "b": None, "c": True}
