"""A pack's folder is its scope: rules under rules/<server>/ never explain another server's log."""

from __future__ import annotations

from pathlib import Path

from logsense import load_rules
from logsense.analysis import analyze_path
from logsense.rules import bundled_rules_dir
from logsense.servers import NAMES, pack_scope

CORPORA = Path(__file__).resolve().parent.parent / "corpora"


def test_every_rule_of_a_server_folder_is_scoped_to_that_server():
    rules = load_rules()
    scoped = 0
    for r in rules.rules:
        scope = pack_scope(Path(r.spec.path))
        if scope is None:
            continue
        scoped += 1
        allowed = set(r.spec.when_facts.get("server", ()))
        assert allowed, f"{r.id}: no server condition in rules/{scope}/"
        assert not allowed & (set(NAMES) - {scope}), f"{r.id} in rules/{scope}/ fires on {sorted(allowed)}"
    assert scoped > 100


def test_the_server_folders_are_the_known_servers():
    folders = {p.name for p in bundled_rules_dir().iterdir() if p.is_dir()}
    assert folders <= set(NAMES) | {"common"}


def test_the_seed_cuda_graph_oom_is_explained_by_sglangs_own_rule():
    report, _ = analyze_path(str(CORPORA / "mission" / "cuda-oom-cuda-graph.log"), load_rules())
    root = report.root
    assert root is not None and root.cause == "cuda_oom_cuda_graph"
    assert not (root.rule or "").startswith("vllm-")
    assert any("--cuda-graph-max-bs" in f.value for f in root.fixes)


def test_a_code_bug_is_named_only_where_the_traceback_ends_in_the_servers_code():
    """An AttributeError raised in another package that the server calls is that package's API, not a server bug."""
    from logsense import analyze

    frames = ('Traceback (most recent call last):\n'
              '  File "/sglang/python/sglang/srt/managers/router/model_rpc.py", line 137, in exposed_init_model\n'
              '    self.regex_fsm_cache = FSMCache(\n'
              '  File "/sglang/python/sglang/srt/constrained/fsm_cache.py", line 8, in __init__\n'
              '    self.outlines_tokenizer = TransformerTokenizer(\n')
    own = frames + "AttributeError: 'FSMCache' object has no attribute 'tokenizer_path'\n"
    other = (frames + '  File "/usr/lib/python3.10/site-packages/outlines/models/transformers.py", line 63, in __init__\n'
             "    self.eos_token_id = self.tokenizer.eos_token_id\n"
             "AttributeError: 'str' object has no attribute 'eos_token_id'\n")
    assert [d.cause for d in analyze(own.splitlines()).diagnoses if d.root][:1] == ["sglang_code_bug"]
    via_getattr = (frames + '  File "/usr/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1964, in __getattr__\n'
                   "    raise AttributeError(\n"
                   "AttributeError: 'FusedMoE' object has no attribute 'w13_weight'\n")
    assert [d.cause for d in analyze(via_getattr.splitlines()).diagnoses if d.root][:1] == ["sglang_code_bug"]
    assert "sglang_code_bug" not in [d.cause for d in analyze(other.splitlines()).diagnoses]
