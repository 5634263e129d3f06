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
