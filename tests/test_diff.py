"""`logsense diff` and `analyze --baseline`: the same SGLang TP8 startup, once healthy, once failing in the warmup.

The logs are written here (journalctl short format, eight TP ranks) so the tests do not
depend on the corpus: the good run warms up with text (`POST /generate`) and becomes ready;
the bad run sends the multimodal warmup (the dummy image to /v1/chat/completions), its
vision tower calls FA4 and every rank dies with `ImportError: Vendored FlashAttention CUTE
is not available`, caused by a missing `cutlass`.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import threading
from datetime import datetime, timedelta

import pytest

from logsense.commands.common import rules_from_options
from logsense.diff import diff_logs, first_error
from logsense.model import Record
from logsense.run_templates import Kinds

SITE = "/usr/local/lib/python3.12/dist-packages"
ARGS = dict(
    model_path="'/models/Qwen3-VL-235B-A22B-Instruct-FP8'", tokenizer_path="'/models/Qwen3-VL-235B-A22B-Instruct-FP8'",
    tokenizer_mode="'auto'", trust_remote_code="True", context_length="262144", enable_multimodal="None",
    host="'0.0.0.0'", port="30000", skip_server_warmup="False", dtype="'auto'", quantization="'fp8'",
    mem_fraction_static="0.85", chunked_prefill_size="8192", tp_size="8", pp_size="1", random_seed="{seed}",
    attention_backend="None", mm_attention_backend="None", cuda_graph_max_bs="256", disable_cuda_graph="False",
    log_level="'info'", enable_metrics="True",
)


class Journal:
    """Writes journalctl -o short lines with a clock that moves on."""

    def __init__(self, start: datetime, host: str = "gpu-node-07", pid: int = 48213) -> None:
        self.t = start
        self.host = host
        self.pid = pid
        self.lines: list[str] = []

    def tick(self, seconds: float = 0.0) -> None:
        self.t += timedelta(seconds=seconds)

    def raw(self, ident: str, msg: str) -> None:
        self.lines.append(f"{self.t:%b %d %H:%M:%S} {self.host} {ident}: {msg}")

    def py(self, msg: str) -> None:
        self.raw(f"python3[{self.pid}]", msg)

    def sg(self, msg: str, rank: int | None = None) -> None:
        ranks = f" TP{rank}" if rank is not None else ""
        self.py(f"[{self.t:%Y-%m-%d %H:%M:%S}{ranks}] {msg}")

    def ranks(self, msg: str, order=(3, 0, 5, 1, 7, 2, 6, 4)) -> None:
        for r in order:
            self.sg(msg.format(r=r, mem=78.2 + r / 100), r)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _traceback(j: Journal, rank: int) -> None:
    j.sg("Scheduler hit an exception: Traceback (most recent call last):", rank)
    for path, line, func, code in [
        (f"{SITE}/sglang/jit_kernel/flash_attention_v4.py", 24, "<module>",
         "from flash_attn.cute.interface import _flash_attn_fwd"),
        (f"{SITE}/flash_attn/cute/interface.py", 31, "<module>", "import cutlass"),
    ]:
        j.py(f'  File "{path}", line {line}, in {func}')
        j.py(f"    {code}")
    j.py("ModuleNotFoundError: No module named 'cutlass'")
    j.py("")
    j.py("The above exception was the direct cause of the following exception:")
    j.py("")
    j.py("Traceback (most recent call last):")
    for path, line, func, code in [
        ("sglang/srt/managers/scheduler.py", 3418, "run_scheduler_process", "scheduler.event_loop_overlap()"),
        ("sglang/srt/managers/scheduler.py", 1187, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
        ("sglang/srt/managers/tp_worker.py", 412, "forward_batch_generation",
         "logits_output, can_run_cuda_graph = self.model_runner.forward("),
        ("sglang/srt/model_executor/model_runner.py", 2512, "forward_extend", "return self.model.forward("),
        ("sglang/srt/models/qwen3_vl.py", 742, "forward", "hidden_states = general_mm_embed_routine("),
        ("sglang/srt/managers/mm_utils.py", 962, "embed_mm_inputs", "embedding, mask = get_embedding_and_mask("),
        ("sglang/srt/models/qwen3_vl.py", 655, "get_image_feature",
         "image_embeds = self.visual(pixel_values, grid_thw=image_grid_thw)"),
        ("sglang/srt/models/qwen3_vl.py", 512, "forward", "x = blk(x, cu_seqlens=cu_seqlens)"),
        ("sglang/srt/layers/attention/vision.py", 618, "forward", "output = flash_attn_varlen_func("),
        ("sglang/jit_kernel/flash_attention_v4.py", 212, "flash_attn_varlen_func", "_ensure_fa4_available()"),
        ("sglang/jit_kernel/flash_attention_v4.py", 61, "_ensure_fa4_available", "raise ImportError("),
    ]:
        j.py(f'  File "{SITE}/{path}", line {line}, in {func}')
        j.py(f"    {code}")
        j.py("    " + "^" * min(40, len(code)))
    j.py("ImportError: Vendored FlashAttention CUTE is not available (cannot import flash_attn.cute)")


def startup(bad: bool = False, day: int = 3, sglang: str = "0.5.9", torch: str = "2.9.1", cuda: str = "12.9",
            driver: str = "580.95.05", gpu: str = "NVIDIA H200", args: dict | None = None, seed: int = 1234) -> str:
    """A TP8 SGLang 2026 startup of Qwen3-VL as `journalctl -u sglang -o short` prints it."""
    j = Journal(datetime(2026, 3, day, 10, 0, 0) + timedelta(minutes=7 * day))
    j.raw("systemd[1]", "Starting sglang.service - SGLang Qwen3-VL on 8 GPUs...")
    for g in range(8):
        j.raw("nvidia-smi[48190]", f"GPU {g}: {gpu} (UUID: GPU-{g}f3a9c1e-77aa-4b1c-9d2e-0a1b2c3d4e{g:02d})")
    j.raw("sglang-env[48201]", f"sglang=={sglang} torch=={torch}+cu{cuda.replace('.', '')} cuda_version={cuda} "
          f"Driver Version: {driver}")
    j.raw("systemd[1]", "Started sglang.service - SGLang Qwen3-VL on 8 GPUs.")
    j.tick(3)
    j.py(f"{SITE}/transformers/utils/hub.py:111: FutureWarning: Using `TRANSFORMERS_CACHE` is deprecated and will "
         "be removed in v5 of Transformers. Use `HF_HOME` instead.")
    j.py("  warnings.warn(")
    j.tick(4)
    a = {**ARGS, **(args or {})}
    j.sg("server_args=ServerArgs(" + ", ".join(f"{k}={v}".replace("{seed}", str(seed)) for k, v in a.items()) + ")")
    j.sg("Attention backend not explicitly specified. Use fa3 backend by default.")
    j.tick(9)
    j.ranks("Init torch distributed begin.")
    j.sg("sglang is using nccl==2.27.5", 0)
    for r in (6, 0, 3, 4, 1, 2, 7, 5):
        j.py(f"[Gloo] Rank {r} is connected to 7 peer ranks. Expected number of connected peer ranks is : 7")
    j.tick(3)
    j.ranks("Init torch distributed ends. elapsed=3.0{r} s, mem usage=1.13 GB")
    j.ranks("Load weight begin. avail mem=139.2{r} GB")
    j.py("Multi-thread loading shards:   0% Completed | 0/48 [00:00<?, ?it/s]")
    j.tick(190)
    j.py("Multi-thread loading shards: 100% Completed | 48/48 [03:10<00:00,  3.97s/it]")
    j.ranks("Load weight end. elapsed=190.1{r} s, type=Qwen3VLMoeForConditionalGeneration, dtype=torch.bfloat16, "
            "avail mem=79.5{r} GB, mem usage=59.73 GB.")
    j.tick(1)
    j.ranks("KV Cache is allocated. #tokens: 1203040, K size: 27.53 GB, V size: 27.53 GB")
    j.ranks("Memory pool end. avail mem=20.3{r} GB")
    j.tick(1)
    j.ranks("Capture cuda graph begin. This can take up to several minutes. avail mem=20.1{r} GB")
    j.sg("Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 96, 128, 160, 192, 224, 256]", 0)
    j.py("Capturing batches (bs=256 avail_mem=20.05 GB):   0%|          | 0/17 [00:00<?, ?it/s]")
    j.tick(21)
    j.py("Capturing batches (bs=1 avail_mem=18.99 GB): 100%|██████████| 17/17 [00:21<00:00,  1.25s/it]")
    j.ranks("Capture cuda graph end. Time elapsed: 21.3{r} s. mem usage=1.12 GB. avail mem=18.9{r} GB.")
    j.sg("max_total_num_tokens=1203040, chunked_prefill_size=8192, max_prefill_tokens=16384, "
         "max_running_requests=2048, context_len=262144, available_gpu_mem=18.98 GB", 0)
    j.tick(1)
    j.sg(f"INFO:     Started server process [{j.pid}]")
    j.sg("INFO:     Waiting for application startup.")
    j.sg("INFO:     Application startup complete.")
    j.sg("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    j.tick(1)
    j.sg('INFO:     127.0.0.1:40110 - "GET /health HTTP/1.1" 503 Service Unavailable')
    j.sg('INFO:     127.0.0.1:40112 - "GET /model_info HTTP/1.1" 200 OK')
    j.sg("Start of co-locate warmup ...")
    if not bad:
        j.sg("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, "
             "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00", 0)
        j.tick(1)
        j.sg('INFO:     127.0.0.1:40114 - "POST /generate HTTP/1.1" 200 OK')
        j.sg("The server is fired up and ready to roll!")
        for i in range(3):
            j.tick(5)
            j.sg(f'INFO:     127.0.0.1:{41000 + i} - "GET /health HTTP/1.1" 200 OK')
            j.sg(f"Decode batch, #running-req: 1, #token: {300 + i}, token usage: 0.00, cuda graph: True, "
                 f"gen throughput (token/s): 8{i}.10, #queue-req: 0", 0)
        return j.text()
    j.sg("Prefill batch, #new-seq: 1, #new-token: 1290, #cached-token: 0, token usage: 0.00, #running-req: 0, "
         "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00", 0)
    j.tick(2)
    for r in (0, 5, 2, 7, 1, 4, 6, 3):
        _traceback(j, r)
    j.sg('INFO:     127.0.0.1:40114 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    j.sg("Initialization failed. warmup error: Traceback (most recent call last):")
    j.py(f'  File "{SITE}/sglang/srt/entrypoints/http_server.py", line 1802, in _execute_server_warmup')
    j.py('    assert res.status_code == 200, f"{res=}, {res.text=}"')
    j.py("AssertionError: res=<Response [500]>, res.text='Internal Server Error'")
    j.tick(2)
    j.raw("systemd[1]", "sglang.service: Main process exited, code=killed, status=9/KILL")
    j.raw("systemd[1]", "sglang.service: Failed with result 'signal'.")
    return j.text()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    good, bad = d / "good.log", d / "bad.log"
    good.write_text(startup(day=3, seed=11), encoding="utf-8")
    bad.write_text(startup(bad=True, day=4, seed=99), encoding="utf-8")
    return good, bad


@pytest.fixture(scope="module")
def result(pair, rules):
    return diff_logs(str(pair[0]), str(pair[1]), rules)


def test_parts_ways_in_the_warmup(result):
    d = result.divergence
    assert d is not None and d.phase == "warmup"
    assert d.bad.text.startswith("Scheduler hit an exception: Traceback")
    assert "POST /generate" in d.good.text


def test_first_bad_only_error_is_the_import_error(result):
    e = result.first_error
    assert e.text == "ImportError: Vendored FlashAttention CUTE is not available (cannot import flash_attn.cute)"
    assert e.count == 8
    assert [x.text for x in result.first_error_chain] == ["ModuleNotFoundError: No module named 'cutlass'"]


def test_nothing_differs_before_the_warmup(result):
    # numbers, times, ports, pids, ranks and uuids differ in every line; no template does
    assert {x.phase for x in result.bad_only} == {"warmup"}
    assert {x.phase for x in result.good_only} <= {"warmup", "serving"}


def test_bad_only_lines_in_order(result):
    texts = [x.text for x in result.bad_only]
    assert texts.index('INFO:     127.0.0.1:40114 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error') \
        > texts.index(result.first_error.text)
    lines = [x.line for x in result.bad_only]
    assert lines == sorted(lines)
    head = next(x for x in result.bad_only if x.text.startswith("Scheduler hit an exception"))
    assert head.count == 8 and len(head.ranks) == 8 and head.kind == "traceback"


def test_new_code_path_goes_through_the_vision_tower(result):
    path = max(result.code_paths, key=len)
    assert "qwen3_vl.py:get_image_feature" in path
    assert path.index("vision.py:forward") < path.index("flash_attention_v4.py:_ensure_fa4_available")


def test_verdicts_phases_and_exit(result):
    assert result.good.report.root is None and result.good.report.status.value == "ready"
    assert result.bad.report.root is not None
    assert result.matters
    rows = {p.name: p for p in result.phases}
    assert rows["serving"].in_good and not rows["serving"].in_bad
    assert rows["weight_loading"].good == pytest.approx(190, abs=2)
    assert not result.facts  # same software, same flags: the random seed does not count


def test_same_log_twice_does_not_matter(pair, rules):
    r = diff_logs(str(pair[0]), str(pair[0]), rules)
    assert not r.bad_only and not r.good_only and r.divergence is None and not r.matters


def test_facts_diff(tmp_path, rules):
    good = tmp_path / "good.log"
    bad = tmp_path / "bad.log"
    good.write_text(startup(), encoding="utf-8")
    bad.write_text(startup(sglang="0.5.10", torch="2.10.0", cuda="13.0", driver="590.44.01", gpu="NVIDIA B300",
                           args={"mm_attention_backend": "'fa4'", "mem_fraction_static": "0.88"}, seed=7),
                   encoding="utf-8")
    r = diff_logs(str(good), str(bad), rules)
    facts = {f.name: (f.good, f.bad) for f in r.facts}
    assert facts["sglang_version"] == ("0.5.9", "0.5.10")
    assert facts["torch_version"] == ("2.9.1", "2.10.0")
    assert facts["cuda_version"] == ("12.9", "13.0")
    assert facts["driver_version"] == ("580.95.05", "590.44.01")
    assert facts["gpu_name"] == ("NVIDIA H200", "NVIDIA B300")
    assert facts["arg_mm_attention_backend"] == (None, "fa4")
    assert facts["arg_mem_fraction_static"] == (0.85, 0.88)
    assert "arg_random_seed" not in facts and "arg_tp_size" not in facts and "mem_fraction_static" not in facts
    names = [f.name for f in r.facts]
    assert names.index("sglang_version") < names.index("gpu_name") < names.index("arg_mem_fraction_static")
    # versions and GPU names are masked: the same startup otherwise (but torch's build tag, +cu130)
    assert [x.text for x in r.bad_only] == ["sglang==0.5.10 torch==2.10.0+cu130 cuda_version=13.0 Driver Version: 590.44.01"]
    assert not r.matters


def test_inputs_stdin_gzip_and_a_pipe(pair, rules, monkeypatch):
    good, bad = pair
    gz = bad.with_suffix(".log.gz")
    gz.write_bytes(gzip.compress(bad.read_bytes()))
    r1 = diff_logs(str(good), str(gz), rules)
    # stdin
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(good.read_bytes())))
    r2 = diff_logs("-", str(bad), rules)
    # process substitution: /dev/fd/N, read once, no seek
    rfd, wfd = os.pipe()
    data = bad.read_bytes()

    def writer():
        with os.fdopen(wfd, "wb") as w:
            w.write(data)

    t = threading.Thread(target=writer)
    t.start()
    try:
        r3 = diff_logs(str(good), f"/dev/fd/{rfd}", rules)
    finally:
        t.join()
    for r in (r1, r2, r3):
        assert r.divergence.phase == "warmup"
        assert r.first_error.text.startswith("ImportError: Vendored FlashAttention CUTE")


def test_cli_text_and_json(pair, capsys):
    from logsense.commands import diff as cmd

    good, bad = pair
    assert cmd.main(str(good), str(bad), "text") == 1
    out = capsys.readouterr().out
    assert "where they part ways: phase warmup" in out
    assert "first error only the bad run printed:" in out
    assert "ImportError: Vendored FlashAttention CUTE is not available" in out
    assert "new code path:" in out and "vision.py:forward" in out
    assert cmd.main(str(good), str(good), "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["divergence"] is None and data["bad_only"] == [] and data["matters"] is False
    assert cmd.main(str(good), str(bad), "json") == 1
    data = json.loads(capsys.readouterr().out)
    assert data["divergence"]["phase"] == "warmup"
    assert data["first_bad_error"]["kind"] == "exception"
    assert data["first_bad_error"]["chain"][0]["text"].startswith("ModuleNotFoundError")
    assert data["bad"]["root"] is not None and data["good"]["root"] is None


def test_log_text_is_not_markup(tmp_path, capsys):
    from logsense.commands import diff as cmd

    good = tmp_path / "good.log"
    bad = tmp_path / "bad.log"
    good.write_text(startup(), encoding="utf-8")
    bad.write_text(startup() + "Mar 03 11:00:00 gpu-node-07 python3[48213]: Failed: [bold red]boom[/] [link=x]\n",
                   encoding="utf-8")
    assert cmd.main(str(good), str(bad), "text") == 1
    assert "Failed: [bold red]boom[/] [link=x]" in capsys.readouterr().out


def test_both_stdin_is_a_usage_error():
    from logsense.commands import diff as cmd
    from logsense.errors import UsageError

    with pytest.raises(UsageError):
        cmd.main("-", "-")


def test_kinds_and_chains():
    k = Kinds()

    def rec(msg):
        return Record(1, msg, msg, pid="1")

    got = [k(rec(m)) for m in (
        "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/a/b.py", line 1, in f',
        "    f()",
        "    ^^^",
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/a/c.py", line 2, in g',
        "RuntimeError: again",
        "Failed to load the tokenizer",
        "WARNING: flag is deprecated",
        "Load weight begin.",
    )]
    assert got == ["traceback", "frame", "source", "source", "exception", "line", "chain", "line", "traceback",
                   "frame", "exception", "error", "warning", "line"]
    assert k.handled == {1}


def test_first_error_follows_the_chain():
    from logsense.run_templates import TemplateLine

    def line(n, text, chain):
        return TemplateLine(n, text, "warmup", "exception", text, text, chain)

    cause, top, other = line(1, "OSError: x", 1), line(5, "ImportError: y", 1), line(9, "ValueError: z", 2)
    assert first_error([cause, top, other]) == (top, [cause])
    assert first_error([cause, top, other], handled={1}) == (cause, [top])


# -- analyze --baseline ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    d = tmp_path_factory.mktemp("healthy")
    (d / "a.log").write_text(startup(day=1, seed=1), encoding="utf-8")
    (d / "b.log.gz").write_bytes(gzip.compress(startup(day=2, seed=2).encode()))
    # a labelled failure in the dir is not a baseline; nor are notes
    (d / "broken.log").write_text(startup(bad=True, day=5), encoding="utf-8")
    (d / "broken.label.yaml").write_text("cause: flash_attn_cute_unavailable\n", encoding="utf-8")
    (d / "README.md").write_text("healthy startups\n", encoding="utf-8")
    return d


def test_baseline_files(baselines):
    from logsense.novelty import baseline_files

    assert [p.name for p in baseline_files(str(baselines))] == ["a.log", "b.log.gz"]


def test_baseline_novel_lines_when_no_rule_knows(pair, baselines):
    from logsense.analysis import read_into
    from logsense.novelty import Baseline
    from logsense.pipeline import Pipeline

    no_rules = rules_from_options(None, None, no_rules=True)
    hook = Baseline.from_dir(str(baselines)).fallback(None)
    report, _ = read_into(Pipeline(no_rules, hook), str(pair[1]))
    d = report.diagnoses[0]
    assert d.cause == "unknown" and d.root
    assert "lines never seen in the healthy baselines (2 logs)" in d.explanation
    texts = [e.text for e in d.evidence]
    assert texts[0] == "ModuleNotFoundError: No module named 'cutlass'"
    assert texts[1].startswith("ImportError: Vendored FlashAttention CUTE is not available")
    assert all("Load weight" not in t for t in texts)
    # the same log through a hook-less analyze: a bare unknown
    bare, _ = read_into(Pipeline(no_rules, None), str(pair[1]))
    assert "never seen" not in bare.diagnoses[0].explanation


def test_baseline_leaves_known_causes_and_healthy_logs_alone(pair, baselines, rules):
    from logsense.analysis import read_into
    from logsense.novelty import Baseline
    from logsense.pipeline import Pipeline

    hook = Baseline.from_dir(str(baselines)).fallback(None)
    with_rules, _ = read_into(Pipeline(rules, hook), str(pair[1]))
    plain, _ = read_into(Pipeline(rules, None), str(pair[1]))
    assert with_rules.diagnoses[0].cause == plain.diagnoses[0].cause != "unknown"
    healthy, _ = read_into(Pipeline(rules, hook), str(pair[0]))
    assert healthy.root is None and healthy.status.value == "ready"


def test_baseline_note_on_an_incomplete_log(tmp_path, baselines, rules):
    from logsense.analysis import read_into
    from logsense.novelty import Baseline
    from logsense.pipeline import Pipeline

    text = startup().split("Load weight end.")[0].rsplit("\n", 1)[0] + "\n"
    text += "Mar 03 10:30:00 gpu-node-07 python3[48213]: [2026-03-03 10:30:00 TP0] NCCL WARN peer 3 is slow\n"
    log = tmp_path / "hang.log"
    log.write_text(text, encoding="utf-8")
    report, _ = read_into(Pipeline(rules, Baseline.from_dir(str(baselines)).fallback(None)), str(log))
    assert report.root is None and report.status.value == "incomplete"
    (note,) = report.diagnoses
    assert not note.root and "never seen in the healthy baselines" in note.title
    assert note.evidence[0].text == "NCCL WARN peer 3 is slow"


def test_baseline_dir_missing():
    from logsense.errors import SourceError
    from logsense.novelty import Baseline

    with pytest.raises(SourceError):
        Baseline.from_dir("/nonexistent/healthy").fallback(None)


def test_corpus_pair_when_present(rules):
    from conftest import CORPORA

    good = CORPORA / "healthy" / "k26-ddtree-ready.log"
    bad = CORPORA / "mission" / "flash-attn-cute-warmup.log"
    if not (good.is_file() and bad.is_file()):
        pytest.skip("the bundled corpus pair is not here")
    r = diff_logs(str(good), str(bad), rules)
    assert r.divergence.phase == "warmup"
    assert r.first_error.text.startswith("ImportError: Vendored FlashAttention CUTE is not available")
    assert any("vision.py:forward" in p for p in r.code_paths)
