"""The template miner: masks, Drain-style grouping, novelty matching, determinism, bounded memory."""

from __future__ import annotations

import pytest

from logsense.templates import WILDCARD, TemplateMiner, mask, mine, tokens


@pytest.mark.parametrize(
    ("message", "masked"),
    [
        ("Load weight end. elapsed=12.02 s, avail mem=49.33 GB, mem usage=29.15 GB.",
         "Load weight end. elapsed=<NUM> s, avail mem=<SIZE>, mem usage=<SIZE>."),
        ('INFO:     127.0.0.1:50386 - "GET /health HTTP/1.1" 503 Service Unavailable',
         'INFO:     <IP> - "GET /health HTTP/<NUM>" <NUM> Service Unavailable'),
        ("Init torch distributed begin. dist_init_addr=tcp://10.0.0.7:29500",
         "Init torch distributed begin. dist_init_addr=<URL>"),
        ('  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/attention/vision.py", line 618, in forward',
         '  File "<PATH>/vision.py", line <NUM>, in forward'),
        ('INFO:     127.0.0.1:45512 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
         'INFO:     <IP> - "POST <PATH>/completions HTTP/<NUM>" <NUM> Internal Server Error'),
        ("[Gloo] Rank 6 is connected to 7 peer ranks.", "[Gloo] <RANK> is connected to <NUM> peer ranks."),
        ("TP3 on cuda:3 failed", "<RANK> on <RANK> failed"),
        ("started at 2026-03-03 10:00:01.123 (took 00:11)", "started at <TIME> (took <TIME>)"),
        ("request 3f2b8c1e-1d2a-4e5f-9a0b-1c2d3e4f5a6b done", "request <UUID> done"),
        ("ptr=0x7f3a2c001000 commit 4be6a9f0c2d1", "ptr=<HEX> commit <HEX>"),
        ("device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8", "device_name=<GPU>,dtype=fp8_w8a8"),
        ("GPU 0: NVIDIA B300 SXM6 AC (UUID: GPU-1)", "<RANK>: <GPU> SXM6 AC (UUID: GPU-<NUM>)"),
        ("Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32]", "Capture cuda graph bs [<NUMS>]"),
        ("Capturing batches (bs=4 avail_mem=3.1 GB):  50%|█████     | 18/36 [00:10<00:10,  1.7it/s]",
         "Capturing batches (bs=<NUM> avail_mem=<SIZE>):  <NUM>%|<BAR>| <NUM>/<NUM> [<TIME><<TIME>,  <NUM>it/s]"),
        ("Using model weights format ['*.safetensors']", "Using model weights format ['*.safetensors']"),
        ("qwen2_5_vl uses fp8 on H100", "qwen2_5_vl uses fp8 on H100"),
    ],
)
def test_mask(message, masked):
    assert mask(message) == masked


def test_numbers_differ_same_template():
    m = TemplateMiner()
    a = m.add("[2026-01-01 00:00:01 TP0] Load weight begin. avail mem=78.48 GB")
    b = m.add("[2026-01-02 03:04:05 TP7] Load weight begin. avail mem=65.00 GB")
    assert a is b and a.size == 2 and len(m) == 1


def test_variable_word_becomes_wildcard():
    m = mine([
        "Freezing GC in Scheduler process. gen0: 48->0, gen1: 2763->0",
        "Freezing GC in Tokenizer process. gen0: 366->0, gen1: 4764->0",
    ])
    (c,) = m.clusters
    assert c.tokens[3] == WILDCARD
    assert m.match("Freezing GC in Detokenizer process. gen0: 1->0, gen1: 2->0") is c


def test_files_routes_and_functions_are_never_wildcards():
    m = mine([
        'INFO:     127.0.0.1:1 - "GET /model_info HTTP/1.1" 200 OK',
        'INFO:     127.0.0.1:2 - "POST /generate HTTP/1.1" 200 OK',
        '  File "/x/sglang/srt/managers/scheduler.py", line 10, in event_loop',
        '  File "/x/sglang/srt/layers/vision.py", line 10, in event_loop',
        '  File "/x/sglang/srt/layers/vision.py", line 99, in forward',
    ])
    assert len(m) == 5
    assert m.match('INFO:     10.1.1.1:9 - "POST /v1/chat/completions HTTP/1.1" 200 OK') is None
    assert m.match('  File "/opt/venv/sglang/srt/layers/vision.py", line 1, in forward') is not None


def test_match_never_changes_the_miner():
    m = mine(["Init torch distributed begin.", "Memory pool end. avail mem=1.68 GB"])
    before = [(c.id, c.tokens, c.size) for c in m.clusters]
    assert m.match("ImportError: Vendored FlashAttention CUTE is not available") is None
    assert m.match("Memory pool end. avail mem=20.30 GB") is not None
    assert [(c.id, c.tokens, c.size) for c in m.clusters] == before


def test_long_lines_are_cut():
    toks = tokens(" ".join(f"w{i}x" for i in range(200)), max_tokens=10)
    assert len(toks) == 11 and toks[-1] == "<+>"


def test_deterministic():
    lines = [f"worker {w} says {word} after {i} steps" for i in range(50) for w, word in
             ((1, "hello"), (2, "bye"), (3, "hello"))] + ["odd one out", "another odd one"]

    def run():
        m = mine(lines)
        return [(c.id, c.template, c.size) for c in m.clusters]

    assert run() == run()


def test_bounded_clusters_and_tree():
    m = TemplateMiner(max_clusters=50)
    for i in range(2000):
        m.add(f"event{i % 997}kind alpha{i} beta{i * 7} gamma")  # words with digits: never one template
    assert len(m) <= 50
    assert m.evicted > 0

    def leaves(node):
        if isinstance(node, list):
            return 1
        return sum(leaves(c) for c in node.values())

    assert sum(len(leaf) for leaf in _leaf_lists(m._root)) == len(m)
    assert leaves(m._root) <= len(m)


def _leaf_lists(node):
    if isinstance(node, list):
        yield node
        return
    for child in node.values():
        yield from _leaf_lists(child)


def test_max_children_routes_to_wildcard():
    m = TemplateMiner(max_children=4)
    for w in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        m.add(f"{w} starts now")
    # the first tokens beyond the cap share the wildcard branch, and still match
    assert m.match("zeta starts now") is not None
    assert len(m._root[3]) <= 4


def test_crowded_leaf_is_capped():
    m = TemplateMiner(max_leaf=8)
    for i in range(100):
        m.add(f"Unexpected w{i}x near v{i * 3}y")  # same shape, never similar enough to merge
    assert all(len(leaf) <= 8 for leaf in _leaf_lists(m._root))
    assert m.match("Unexpected w99x near v297y") is not None  # the recent ones stay
    assert m.match("Unexpected w0x near v0y") is None


def test_huge_messages_are_cut_before_masking():
    masked = mask("load shard 12 " * 2000)
    assert len(masked) <= 2048 * 2 and masked.startswith("load shard <NUM> load")
    assert not masked.endswith(" ")
