"""Write a deterministic synthetic SGLang TP8 journal (`journalctl -o short -a` style) of N lines for benchmarks."""

from __future__ import annotations

import argparse
import random
import sys
import time

HOST = "gpu-b300-01"
UNIT = "sglang-k26-ddtree.service"
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
SITE = "/usr/local/lib/python3.12/dist-packages"
SG = SITE + "/sglang/srt"
TP = 8
BS = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168,
      176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256]

_ARGS = ("tokenizer_mode='auto' tokenizer_worker_num=1 skip_tokenizer_init=False load_format='auto' "
         "model_loader_extra_config='{}' trust_remote_code=True context_length=262144 is_embedding=False "
         "enable_multimodal=True revision=None model_impl='auto' host='0.0.0.0' port=30000 skip_server_warmup=False "
         "warmups=None nccl_port=None dtype='auto' quantization=None quantization_param_path=None kv_cache_dtype='auto' "
         "mem_fraction_static=0.85 max_running_requests=None max_queued_requests=None max_total_tokens=None "
         "chunked_prefill_size=16384 max_prefill_tokens=16384 schedule_policy='fcfs' schedule_conservativeness=1.0 "
         "page_size=1 device='cuda' tp_size=8 pp_size=1 stream_interval=1 stream_output=False random_seed={seed} "
         "watchdog_timeout=300 dist_timeout=None download_dir=None base_gpu_id=0 gpu_id_step=1 log_level='info' "
         "log_level_http=None log_requests=False log_requests_level=2 show_time_cost=False enable_metrics=True "
         "decode_log_interval=40 api_key=None served_model_name='kimi-k2.6' chat_template=None "
         "completion_template=None file_storage_path='sglang_storage' enable_cache_report=False "
         "reasoning_parser='kimi_k2' tool_call_parser='kimi_k2' dp_size=1 load_balance_method='round_robin' "
         "dist_init_addr=None nnodes=1 node_rank=0 json_model_override_args='{}' preferred_sampling_params=None "
         "enable_lora=None max_lora_rank=None lora_target_modules=None lora_paths=None max_loras_per_batch=8 "
         "lora_backend='triton' attention_backend='trtllm_mla' decode_attention_backend=None "
         "prefill_attention_backend=None sampling_backend='flashinfer' grammar_backend='xgrammar' "
         "mm_attention_backend='triton_attn' speculative_algorithm=None speculative_draft_model_path=None "
         "speculative_num_steps=None speculative_eagle_topk=None speculative_num_draft_tokens=None ep_size=1 "
         "moe_a2a_backend='none' moe_runner_backend='auto' deepep_mode='auto' ep_num_redundant_experts=0 "
         "enable_eplb=False enable_hierarchical_cache=False hicache_ratio=2.0 hicache_size=0 "
         "hicache_write_policy='write_through' enable_double_sparsity=False cpu_offload_gb=0 "
         "disable_radix_cache=False cuda_graph_max_bs=256 cuda_graph_bs={bs} disable_cuda_graph=False "
         "disable_cuda_graph_padding=False enable_profile_cuda_graph=False enable_nccl_nvls=False "
         "enable_symm_mem=False disable_outlines_disk_cache=False disable_custom_all_reduce=False "
         "enable_mscclpp=False disable_overlap_schedule=False enable_mixed_chunk=False enable_dp_attention=False "
         "enable_dp_lm_head=False enable_two_batch_overlap=False enable_torch_compile=False "
         "enable_piecewise_cuda_graph=False torch_compile_max_bs=32 torchao_config='' enable_nan_detection=False "
         "enable_p2p_check=False triton_attention_reduce_in_fp32=False triton_attention_num_kv_splits=8 "
         "num_continuous_decode_steps=1 delete_ckpt_after_loading=False enable_memory_saver=False "
         "allow_auto_truncate=False enable_custom_logit_processor=False flashinfer_mla_disable_ragged=False "
         "disable_shared_experts_fusion=False disable_chunked_prefix_cache=False disable_fast_image_processor=False "
         "keep_mm_feature_on_device=False enable_return_hidden_states=False scheduler_recv_interval=1 "
         "numa_node=None enable_deterministic_inference=False debug_tensor_dump_output_folder=None "
         "debug_tensor_dump_input_file=None debug_tensor_dump_inject=False disaggregation_mode='null' "
         "disaggregation_transfer_backend='mooncake' disaggregation_bootstrap_port=8998 "
         "disaggregation_decode_tp=None disaggregation_decode_dp=None disaggregation_prefill_pp=1 "
         "disaggregation_ib_device=None num_reserved_decode_tokens=512 custom_weight_loader=[] "
         "weight_loader_disable_mmap=False enable_pdmux=False sm_group_num=8 mm_max_concurrent_calls=32 "
         "mm_per_request_timeout=10.0 cuda_graph_backend_decode='full' cuda_graph_backend_prefill='breakable' "
         "enable_mis=False weight_cache_mode='off' weight_cache_socket=None weight_cache_timeout=1800 "
         "forward_hooks=None msprobe_dump_config=None")

MOE_WARN = ("Using default MoE kernel config. Performance might be sub-optimal! Config file not found at "
            f"{SG}/layers/moe/moe_runner/triton_utils/configs/triton_3_5_1/E=384,N=256,device_name=NVIDIA_B300_SXM6_AC,"
            "dtype=int4_w4a16.json, you can create them with "
            "https://github.com/sgl-project/sglang/tree/main/benchmark/kernels/fused_moe_triton")

ASGI_TB = [
    "ERROR:    Exception in ASGI application",
    "Traceback (most recent call last):",
    f'  File "{SITE}/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
    "    result = await app(  # type: ignore[func-returns-value]",
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/uvicorn/middleware/proxy_headers.py", line 60, in __call__',
    "    return await self.app(scope, receive, send)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/fastapi/applications.py", line 1054, in __call__',
    "    await super().__call__(scope, receive, send)",
    f'  File "{SITE}/starlette/applications.py", line 113, in __call__',
    "    await self.middleware_stack(scope, receive, send)",
    f'  File "{SITE}/starlette/routing.py", line 75, in app',
    "    response = await f(request)",
    "               ^^^^^^^^^^^^^^^^",
    f'  File "{SG}/entrypoints/http_server.py", line 1198, in openai_v1_chat_completions',
    "    return await raw_request.app.state.openai_serving_chat.handle_request(",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SG}/entrypoints/openai/serving_chat.py", line 214, in _convert_to_internal_request',
    "    processed_messages = self._process_messages(request, is_multimodal)",
    "                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SG}/entrypoints/openai/serving_chat.py", line 301, in _process_messages',
    "    raise ValueError(f\"Unsupported content type: {part.type}\")",
    "ValueError: Unsupported content type: input_audio",
]


class Clock:
    """Journal time, with the 'Mon DD HH:MM:SS host ident[pid]: ' prefix cached per second."""

    def __init__(self, t0: float):
        self.t = t0
        self._sec = -1
        self._jp = ""
        self._sp = ""

    def prefixes(self, pid: int) -> tuple[str, str]:
        s = int(self.t)
        if s != self._sec:
            tm = time.gmtime(s)
            self._sec = s
            self._jp = f"{MONTHS[tm.tm_mon - 1]} {tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d} {HOST} python3[%d]: "
            self._sp = time.strftime("%Y-%m-%d %H:%M:%S", tm)
        return self._jp % pid, self._sp


def tqdm_record(desc_fn, total: int, secs: float, rng: random.Random, pct: bool) -> str:
    parts = []
    el = 0.0
    for i in range(total + 1):
        if i:
            el += secs / total * (0.6 + 0.8 * rng.random())
        e = f"{int(el // 60):02d}:{int(el % 60):02d}"
        if i == 0:
            tail = f"[{e}<?, ?it/s]"
        else:
            per = el / i
            r = (total - i) * per
            rate = f"{per:5.2f}s/it" if per >= 1 else f"{1 / per:5.2f}it/s"
            tail = f"[{e}<{int(r // 60):02d}:{int(r % 60):02d}, {rate}]"
        if pct:
            parts.append(f"{desc_fn(i)}: {100 * i // total:3d}% Completed | {i}/{total} {tail}")
        else:
            fill = 10 * i // total
            bar = ("\u2588" * fill).ljust(10)
            parts.append(f"{desc_fn(i)}: {100 * i // total:3d}%|{bar}| {i}/{total} {tail}")
    return "\r" + "\r".join(parts)


class Gen:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seed = seed
        self.clock = Clock(1795000000.0 + (seed % 1000) * 86400)
        self.pid = 1600000 + self.rng.randint(0, 300000)
        self.out: list[str] = []
        self.flushed = 0  # lines already written out of self.out
        self.restarts = 0

    # -- emitters
    def line(self, msg: str) -> None:
        jp, _ = self.clock.prefixes(self.pid)
        self.out.append(jp + msg)
        self.clock.t += 0.0004 + 0.002 * self.rng.random()

    def sg(self, msg: str, rank: int | None = None) -> None:
        jp, sp = self.clock.prefixes(self.pid)
        r = "" if rank is None else f" TP{rank}"
        self.out.append(f"{jp}[{sp}{r}] {msg}")
        self.clock.t += 0.0004 + 0.002 * self.rng.random()

    def ranks(self, fn) -> None:
        order = list(range(TP))
        self.rng.shuffle(order)
        for r in order:
            self.sg(fn(r), r)

    def systemd(self, msg: str) -> None:
        jp, _ = self.clock.prefixes(1)
        self.out.append(jp.replace("python3[1]", "systemd[1]") + msg)

    # -- a whole startup, ~400 lines
    def startup(self) -> None:
        rng = self.rng
        self.systemd(f"Started {UNIT} - SGLang Kimi-K2.6 (DDTree) on 8x B300.")
        self.clock.t += 2.0
        bs = "[" + ", ".join(map(str, BS)) + "]"
        args = _ARGS.replace("{seed}", str(rng.randint(10 ** 8, 10 ** 9))).replace("{bs}", bs)
        fields = ", ".join(args.split(" "))
        self.sg(f"server_args=ServerArgs(model_path='/models/Kimi-K2.6', tokenizer_path='/models/Kimi-K2.6', {fields})")
        self.sg("Attention backend not explicitly specified. Use trtllm_mla backend by default.")
        self.sg("Using default HuggingFace chat template with detected content format: openai")
        self.clock.t += 8
        for _ in range(TP):
            self.line(f"{SITE}/transformers/utils/hub.py:111: FutureWarning: Using `TRANSFORMERS_CACHE` is deprecated and will be removed in v5 of Transformers. Use `HF_HOME` instead.")
            self.line("  warnings.warn(")
        self.ranks(lambda _: "Init torch distributed begin.")
        self.clock.t += 2
        for _ in range(3):
            for r in rng.sample(range(TP), TP):
                self.line(f"[Gloo] Rank {r} is connected to 7 peer ranks. Expected number of connected peer ranks is : 7")
        self.ranks(lambda _: f"Init torch distributed ends. elapsed={2.8 + rng.random() * 0.3:.2f} s, mem usage=1.13 GB")
        self.ranks(lambda _: f"Load weight begin. avail mem={265.7 + rng.random() * 0.1:.2f} GB")
        load = 300 + rng.random() * 120
        self.clock.t += load
        self.line(tqdm_record(lambda _: "Multi-thread loading shards", 64, load, rng, pct=True))
        self.line("")
        self.ranks(lambda _: f"Load weight end. elapsed={load:.2f} s, type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem={191.4 + rng.random() * 0.1:.2f} GB, mem usage=74.28 GB.")
        self.ranks(lambda _: "Using KV cache dtype: torch.bfloat16")
        self.ranks(lambda _: "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2331544, KV size: 152.59 GB")
        self.ranks(lambda _: f"Memory pool end. avail mem={38.6 + rng.random() * 0.2:.2f} GB")
        self.ranks(lambda _: f"Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs={bs}, avail mem=38.41 GB")
        self.ranks(lambda _: MOE_WARN)
        cap = 30 + rng.random() * 15
        self.clock.t += cap
        rev = BS[::-1]
        self.line(tqdm_record(lambda i: f"Capturing batches (bs={rev[min(i, len(rev) - 1)]} avail_mem={38.4 - 0.07 * i:.2f} GB)", len(BS), cap, rng, pct=False))
        self.ranks(lambda _: f"Capture target decode CUDA graph end. elapsed={cap:.2f} s, mem usage=2.71 GB, avail mem=35.70 GB.")
        self.ranks(lambda _: "max_total_num_tokens=2331544, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=1024, context_len=262144, available_gpu_mem=35.70 GB")
        self.sg("Tree cache initialized: source=default impl=RadixCache hybrid_swa=False hybrid_ssm=False hicache_attached=False streaming_wrapped=False", 0)
        self.sg(f"Engine startup timings (s): load_weight={load:.2f}, kv_cache_allocation=3.08, scheduler_e2e={load + cap + 21:.2f}, cuda_graph={{prefill=0.00, decode={cap:.2f}, target_verify=0.00, draft_prefill=0.00, draft_decode=0.00, draft_extend=0.00}}, tokenizer_e2e={load + cap + 33:.2f}")
        self.sg(f"INFO:     Started server process [{self.pid}]")
        self.sg("INFO:     Waiting for application startup.")
        self.sg("INFO:     Application startup complete.")
        self.sg("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
        self.sg('INFO:     127.0.0.1:50388 - "GET /model_info HTTP/1.1" 200 OK')
        self.sg("Start of co-locate warmup ...")
        self.sg("Prefill batch, #new-seq: 1, #new-token: 52, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00", 0)
        self.sg('INFO:     127.0.0.1:50390 - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        self.sg("The server is fired up and ready to roll!")

    def crash(self) -> None:
        """A rank dies (Scheduler hit an exception) and the unit restarts."""
        rng = self.rng
        r = rng.randrange(TP)
        tb = [
            "Scheduler hit an exception: Traceback (most recent call last):",
            f'  File "{SG}/managers/scheduler.py", line 3418, in run_scheduler_process',
            "    scheduler.event_loop_overlap()",
            f'  File "{SITE}/torch/utils/_contextlib.py", line 120, in decorate_context',
            "    return func(*args, **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{SG}/managers/scheduler.py", line 1187, in event_loop_overlap',
            "    batch_result = self.run_batch(batch)",
            "                   ^^^^^^^^^^^^^^^^^^^^",
            f'  File "{SG}/managers/scheduler.py", line 2431, in run_batch',
            "    batch_result = self.model_worker.forward_batch_generation(",
            f'  File "{SG}/model_executor/model_runner.py", line 2471, in forward_decode',
            "    return self.graph_runner.replay(",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "",
        ]
        self.sg(tb[0], r)
        for x in tb[1:]:
            self.line(x)
        self.sg("Received sigquit from a child process. It usually means the child failed.")
        self.clock.t += 2
        self.systemd(f"{UNIT}: Main process exited, code=killed, status=9/KILL")
        self.systemd(f"{UNIT}: Failed with result 'signal'.")
        self.systemd(f"{UNIT}: Scheduled restart job, restart counter is at {self.restarts + 1}.")
        self.restarts += 1
        self.clock.t += 5
        self.pid += 1 + rng.randint(50, 400)
        self.startup()

    # -- serving traffic, the bulk of the file
    def serve(self, n_lines: int) -> None:
        rng = self.rng
        rnd = rng.random
        out = self.out
        clock = self.clock
        pid = self.pid
        running = 4
        tokens = 5000
        gen_ok = [f'INFO:     10.0.{a}.{b}:{{p}} - "POST /generate HTTP/1.1" 200 OK' for a in (3, 7) for b in (11, 12, 40)]
        chat_ok = 'INFO:     10.0.7.40:{p} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        base = self.flushed
        if not hasattr(self, "next_crash"):
            self.next_crash = 200_000 + rng.randint(0, 100_000)
            self.next_tb = 20_000 + rng.randint(0, 20_000)
        target = len(out) + n_lines
        while len(out) < target:
            done = base + len(out)
            if done >= self.next_crash and target - len(out) > 600:
                self.crash()
                pid = self.pid
                running, tokens = 4, 5000
                self.next_crash = done + 200_000 + rng.randint(0, 100_000)
                continue
            if done >= self.next_tb and target - len(out) > 40:
                self.sg('INFO:     10.0.3.12:41234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
                self.sg(ASGI_TB[0])
                for x in ASGI_TB[1:]:
                    self.line(x)
                self.next_tb = done + 20_000 + rng.randint(0, 20_000)
                continue
            clock.t += 0.002 + 0.05 * rnd()
            jp, sp = clock.prefixes(pid)
            x = rnd()
            if x < 0.22:
                new = 20 + int(rnd() * 6000)
                cached = int(new * rnd() * 0.8)
                running = min(running + 1, 900)
                tokens = min(tokens + new, 2_200_000)
                out.append(f"{jp}[{sp} TP0] Prefill batch, #new-seq: 1, #new-token: {new}, #cached-token: {cached}, "
                           f"token usage: {tokens / 2331544:.2f}, #running-req: {running - 1}, #queue-req: {int(rnd() * 3)}, "
                           f"#pending-token: 0, cuda graph: False, input throughput (token/s): {800 + rnd() * 20000:.2f}")
            elif x < 0.55:
                tokens = min(tokens + running, 2_200_000)
                out.append(f"{jp}[{sp} TP0] Decode batch, #running-req: {running}, #token: {tokens}, token usage: "
                           f"{tokens / 2331544:.2f}, cuda graph: True, gen throughput (token/s): {running * (25 + rnd() * 30):.2f}, #queue-req: 0")
            elif x < 0.93:
                if running > 1:
                    tokens = max(1000, tokens - tokens // running)
                    running -= 1
                p = 30000 + int(rnd() * 30000)
                tmpl = chat_ok if x > 0.85 else gen_ok[int(rnd() * len(gen_ok))]
                out.append(f"{jp}[{sp}] " + tmpl.format(p=p))
            elif x < 0.985:
                out.append(f'{jp}[{sp}] INFO:     10.0.0.2:{30000 + int(rnd() * 30000)} - "GET /health HTTP/1.1" 200 OK')
            elif x < 0.995:
                out.append(f"{jp}[{sp} TP{int(rnd() * TP)}] " + MOE_WARN)
            else:
                out.append(f"{jp}[{sp} TP0] KV cache pool is full. Retract requests. #retracted_reqs: {1 + int(rnd() * 5)}, "
                           f"#new_token_ratio: 0.4286 -> 0.6000")

    def run(self, n: int, fh) -> None:
        self.startup()
        chunk = 200_000
        written = 0
        while written < n:
            want = min(chunk, n - written)
            if len(self.out) < want:
                self.serve(want - len(self.out))
            take = self.out[:want]
            del self.out[:want]
            self.flushed += want
            fh.write("\n".join(take))
            fh.write("\n")
            written += want


def after_startup(startup: str, n: int, seed: int, fh) -> None:
    """A recorded startup (an SGLang log that reached ready) followed by `n` serving lines in its own shape:
    prefill and decode batch lines and access lines, their numbers changing on every line, a health check
    now and then, the clock moving on from the startup's last time."""
    import re
    from datetime import datetime, timedelta

    rng = random.Random(seed)
    text = open(startup, encoding="utf-8").read()
    fh.write(text if text.endswith("\n") else text + "\n")
    stamps = re.findall(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]", text, re.M)
    t = datetime.strptime(stamps[-1], "%Y-%m-%d %H:%M:%S") if stamps else datetime(2026, 12, 3, 11, 36)
    out: list[str] = []
    for i in range(n):
        if i % 40 == 0:
            t += timedelta(seconds=1)
        ts = t.strftime("%Y-%m-%d %H:%M:%S")
        k = rng.random()
        running = rng.randint(1, 64)
        if k < 0.15:
            out.append(f"[{ts}] Prefill batch, #new-seq: {rng.randint(1, 8)}, #new-token: {rng.randint(8, 4096)}, "
                       f"#cached-token: {rng.randint(0, 2048)}, token usage: {rng.random():.2f}, #running-req: {running}, "
                       f"#queue-req: {rng.randint(0, 9)}, #pending-token: 0, cpu graph: False, "
                       f"input throughput (token/s): {rng.uniform(10, 9000):.2f}")
        elif k < 0.75:
            out.append(f"[{ts}] Decode batch, #running-req: {running}, #token: {rng.randint(64, 200000)}, "
                       f"token usage: {rng.random():.2f}, cpu graph: False, gen throughput (token/s): "
                       f"{rng.uniform(5, 3000):.2f}, #queue-req: {rng.randint(0, 9)}")
        elif k < 0.99:
            path = rng.choice(("/v1/chat/completions", "/generate", "/v1/completions"))
            out.append(f'[{ts}] INFO:     10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}:{rng.randint(1024, 65535)} - '
                       f'"POST {path} HTTP/1.1" 200 OK')
        else:
            out.append(f'[{ts}] INFO:     127.0.0.1:{rng.randint(1024, 65535)} - "GET /health HTTP/1.1" 200 OK')
        if len(out) >= 100_000:
            fh.write("\n".join(out) + "\n")
            out.clear()
    if out:
        fh.write("\n".join(out) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=100_000, help="number of lines to write")
    ap.add_argument("--seed", type=int, default=1, help="random seed (same seed, same file)")
    ap.add_argument("-o", "--output", default="-", help="output file, '-' for stdout")
    ap.add_argument("--after", metavar="LOG", help="a recorded startup that reached ready: write it, then --lines "
                    "serving lines in its shape (instead of the synthetic TP8 journal)")
    a = ap.parse_args(argv)
    if a.lines <= 0:
        ap.error("--lines must be positive")
    fh = sys.stdout if a.output == "-" else open(a.output, "w", encoding="utf-8", newline="\n")
    try:
        if a.after:
            after_startup(a.after, a.lines, a.seed, fh)
        else:
            Gen(a.seed).run(a.lines, fh)
    finally:
        if fh is not sys.stdout:
            fh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
