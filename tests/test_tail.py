"""`logsense tail FILE`: the file source through the pipeline, exit codes, --resume, the CLI's errors."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from journal_helpers import FA_IMPORT, T0, oom_tail, ready_tail, rule_pack, run_tail, sglang, startup

from logsense.commands import tail
from logsense.errors import UsageError


def lines(items) -> str:
    return "".join(m + "\n" for _, m in items)


def run(capsys, pack, *, fmt="jsonl", **kw):
    kw.setdefault("follow", False)
    code = tail.main(fmt=fmt, only_rules=[str(pack)], **kw)
    text = capsys.readouterr().out
    return code, ([json.loads(x) for x in text.splitlines()] if fmt == "jsonl" else text)


def diagnoses(events):
    """The causes said as they came: in full (a leading root cause) or in one line (a weaker one)."""
    return [e["diagnosis"]["cause"] for e in events if e["event"] in ("diagnosis", "symptom")]


@pytest.fixture
def pack(tmp_path):
    return rule_pack(tmp_path)


def test_a_file_is_read_from_its_latest_startup(tmp_path, capsys, pack):
    p = tmp_path / "server.log"
    earlier = [(T0 - 600, sglang(T0 - 600, "server_args=ServerArgs(model_path='/m')")),
               (T0 - 599, sglang(T0 - 599, FA_IMPORT))]
    p.write_text(lines(earlier + startup() + oom_tail()))
    code, ev = run(capsys, pack, target=str(p))
    assert code == 1 and diagnoses(ev) == ["cuda_oom_cuda_graph"]
    assert "latest startup" in ev[0]["start"]
    code, ev = run(capsys, pack, target=str(p), from_start=True)
    assert diagnoses(ev) == ["flash_attn_cute_unavailable", "cuda_oom_cuda_graph"]


def test_each_startup_in_a_file_gets_its_own_diagnosis(tmp_path, capsys, pack):
    p = tmp_path / "server.log"
    later = T0 + 1000
    p.write_text(lines(startup() + oom_tail() + startup(later) + oom_tail(later)))
    code, ev = run(capsys, pack, target=str(p), from_start=True)
    assert code == 1 and diagnoses(ev) == ["cuda_oom_cuda_graph", "cuda_oom_cuda_graph"]
    code, ev = run(capsys, pack, target=str(p))
    assert diagnoses(ev) == ["cuda_oom_cuda_graph"]
    assert next(e for e in ev if e["event"] == "diagnosis")["line"] > 1


def test_no_follow_exit_codes(tmp_path, capsys, pack):
    p = tmp_path / "ok.log"
    p.write_text(lines(startup() + ready_tail()))
    code, ev = run(capsys, pack, target=str(p))
    assert code == 0 and ev[-1]["status"] == "ready"
    p.write_text(lines(startup()))
    code, ev = run(capsys, pack, target=str(p))
    assert code == 0 and ev[-1]["status"] == "incomplete"
    code, ev = run(capsys, pack, target=str(p), until_ready=True)
    assert code == 3  # the input ended before ready


def test_until_ready_on_a_file_being_written(tmp_path, capsys, pack):
    p = tmp_path / "live.log"
    items = startup() + ready_tail()

    def writer():
        time.sleep(0.2)
        with open(p, "a") as fh:
            for _, m in items:
                fh.write(m + "\n")
                fh.flush()
                time.sleep(0.01)

    t = threading.Thread(target=writer)
    t.start()
    code, ev = run(capsys, pack, target=str(p), until_ready=True, follow=True, timeout="10s")
    t.join()
    assert code == 0
    assert [e["phase"] for e in ev if e["event"] == "phase"][-1] == "serving"
    progress = [(e["done"], e["total"]) for e in ev if e["event"] == "progress"]
    assert progress[-1] == (4, 4)  # the last step is never throttled away
    assert ev[-1]["event"] == "end" and ev[-1]["reason"] == "ready"


def test_until_ready_timeout_on_a_file(tmp_path, capsys, pack):
    p = tmp_path / "slow.log"
    p.write_text(lines(startup()))
    t0 = time.monotonic()
    code, ev = run(capsys, pack, target=str(p), until_ready=True, follow=True, timeout="0.5s")
    assert code == 3 and time.monotonic() - t0 < 3
    assert next(e for e in ev if e["event"] == "timeout")["phase"] == "cuda_graph_capture"


def test_until_ready_exits_1_on_a_root_cause(tmp_path, capsys, pack):
    p = tmp_path / "fa.log"
    p.write_text(lines(startup()[:3]) + sglang(T0 + 9, FA_IMPORT) + "\n")
    code, ev = run(capsys, pack, target=str(p), until_ready=True, follow=True, timeout="10s")
    assert code == 1 and diagnoses(ev) == ["flash_attn_cute_unavailable"]
    assert ev[-1]["reason"] == "failed"


def test_text_view(tmp_path, capsys, pack):
    p = tmp_path / "ok.log"
    p.write_text(lines(startup() + ready_tail()))
    code, text = run(capsys, pack, fmt="text", target=str(p), until_ready=True, follow=True)
    text = " ".join(text.split())
    assert code == 0
    # phase names and durations as the analyze report writes them
    assert "▸ weight_loading" in text and "▸ cuda_graph_capture" in text
    assert "✓ ready at 2.5 min" in text  # from the first line with a time (server_args)
    assert "weight_loading 1.5 min" in text and "cuda_graph_capture 32 s" in text


def test_resume_a_file(tmp_path, capsys, pack):
    p = tmp_path / "server.log"
    state = tmp_path / "tail.state"
    p.write_text(lines(startup()[:4]) + sglang(T0 + 9, FA_IMPORT) + "\n")
    code, ev = run(capsys, pack, target=str(p), resume=str(state))
    assert diagnoses(ev) == ["flash_attn_cute_unavailable"]
    saved = json.loads(state.read_text())
    assert saved["kind"] == "file" and saved["position"]["offset"] == p.stat().st_size
    with open(p, "a") as fh:
        fh.write(lines(startup()[4:] + oom_tail()))
    code, ev = run(capsys, pack, target=str(p), resume=str(state))
    assert diagnoses(ev) == ["cuda_oom_cuda_graph"]
    # the phase was rebuilt from the replayed lines: the OOM is placed in CUDA graph capture
    assert next(e for e in ev if e["event"] == "symptom")["diagnosis"]["phase"] == "cuda_graph_capture"
    code, ev = run(capsys, pack, target=str(p), resume=str(state))
    assert diagnoses(ev) == [] and code == 1


def test_resume_state_for_another_target_starts_afresh(tmp_path, capsys, pack):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(sglang(T0, FA_IMPORT) + "\n")
    b.write_text(sglang(T0, FA_IMPORT) + "\n")
    state = tmp_path / "s.json"
    run(capsys, pack, target=str(a), resume=str(state))
    code, ev = run(capsys, pack, target=str(b), resume=str(state))
    assert diagnoses(ev) == ["flash_attn_cute_unavailable"]
    assert json.loads(state.read_text())["target"] == str(b)


def test_usage_errors(tmp_path, pack):
    with pytest.raises(UsageError, match="--timeout"):
        tail.main(target=str(tmp_path / "x.log"), timeout="soon", only_rules=[str(pack)])
    with pytest.raises(UsageError, match="give a systemd unit or a log file"):
        tail.main(target=None, only_rules=[str(pack)])
    with pytest.raises(UsageError, match="--since"):
        tail.main(target=str(tmp_path / "x.log"), since="-1h", only_rules=[str(pack)])


def test_cli_errors_are_one_line_and_exit_2(tmp_path):
    p = run_tail(str(tmp_path / "x.log"), "--timeout", "soon")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    p = run_tail("--directory", str(tmp_path), "sglang-k26-ddtree")
    assert p.returncode == 2 and "no journal files" in p.stderr and p.stderr.count("\n") == 1
    p = run_tail("--format", "yaml", "x.log")
    assert p.returncode == 2


def test_missing_file_without_follow(tmp_path, pack):
    from logsense.errors import SourceError

    with pytest.raises(SourceError, match="no such file"):
        tail.main(target=str(tmp_path / "nope.log"), follow=False, only_rules=[str(pack)])
    assert not Path(tmp_path / "nope.log").exists()


# -- --until-ready is deterministic --------------------------------------------------------------


def test_until_ready_on_a_file_is_the_same_20_times(tmp_path, capsys, pack):
    """A healthy startup then a failing one: the latest startup decides, every time."""
    p = tmp_path / "live.log"
    later = T0 + 1000
    p.write_text(lines(startup() + ready_tail() + startup(later) + oom_tail(later)))
    codes = set()
    for _ in range(20):
        code, ev = run(capsys, pack, target=str(p), from_start=True, until_ready=True)
        codes.add((code, ev[-1]["reason"], ev[-1]["cause"]))
    assert codes == {(1, "failed", "cuda_oom_cuda_graph")}
    # and the other way round: the latest startup became ready
    p.write_text(lines(startup() + oom_tail() + startup(later) + ready_tail(later)))
    codes = {run(capsys, pack, target=str(p), from_start=True, until_ready=True)[0] for _ in range(20)}
    assert codes == {0}


# -- --resume across rotation ------------------------------------------------------------------------


def test_resume_finishes_the_rotated_file_first(tmp_path, capsys, pack):
    p = tmp_path / "server.log"
    state = tmp_path / "tail.state"
    p.write_text(lines(startup()))
    code, ev = run(capsys, pack, target=str(p), resume=str(state))
    assert diagnoses(ev) == []
    with open(p, "a") as fh:  # tail is not running: a failure is written, then the log is rotated
        fh.write(lines(oom_tail()))
    p.rename(tmp_path / "server.log.1")
    p.write_text(lines(startup(T0 + 1000)))
    code, ev = run(capsys, pack, target=str(p), resume=str(state))
    assert diagnoses(ev)[:1] == ["cuda_oom_cuda_graph"]
    assert code == 0 or code == 1


def test_resume_position_is_saved_as_lines_come(tmp_path, capsys, pack, monkeypatch):
    from logsense import resume

    monkeypatch.setattr(resume, "SAVE_EVERY", 0.0)
    p = tmp_path / "server.log"
    state = tmp_path / "tail.state"
    p.write_text(lines(startup()))
    run(capsys, pack, target=str(p), resume=str(state))
    saved = json.loads(state.read_text())
    assert saved["position"]["line"] == len(startup()) and saved["position"]["offset"] == p.stat().st_size
    assert saved["position"]["head_len"] > 0


def test_a_truncate_and_refill_past_the_old_size_is_noticed(tmp_path, capsys, pack):
    p = tmp_path / "server.log"
    state = tmp_path / "tail.state"
    p.write_text(lines(startup()[:3]))
    run(capsys, pack, target=str(p), resume=str(state))
    # copytruncate, then more than the old size written before tail looks again
    p.write_text(lines(startup(T0 + 500)[:3]) + sglang(T0 + 509, FA_IMPORT) + "\n" * 3)
    code, ev = run(capsys, pack, target=str(p), resume=str(state))
    assert diagnoses(ev) == ["flash_attn_cute_unavailable"]


@pytest.mark.parametrize("bad", ['{"schema": 2, "kind": "file", "target": "%s", "position": {"offset": "x"}}',
                                 '{"schema": 2, "kind": "file", "target": "%s", "reported": [1]}',
                                 '[1, 2]', 'not json'])
def test_a_state_file_with_wrong_types_is_exit_2_with_one_line(tmp_path, bad):
    p = tmp_path / "server.log"
    p.write_text(lines(startup()))
    state = tmp_path / "tail.state"
    state.write_text(bad.replace("%s", str(p)) if "%s" in bad else bad)
    r = run_tail(str(p), "--no-follow", "--resume", str(state))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "tail.state" in r.stderr, r.stderr


# -- journalctl habits ---------------------------------------------------------------------------------


def test_f_means_follow_and_format_is_long_only(tmp_path):
    p = tmp_path / "x.log"
    p.write_text(lines(startup() + ready_tail()))
    r = run_tail("-f", str(p), "--until-ready", "--timeout", "5s")
    assert r.returncode == 0 and "ready" in r.stdout  # -f is --follow, not --format
    r = run_tail("-f", "--no-follow", str(p))
    assert r.returncode == 2 and "--no-follow" in r.stderr
    r = run_tail("-h")
    assert r.returncode == 0 and "--until-ready" in r.stdout and "--probe" in r.stdout


def test_line_numbers_are_the_files_and_the_verdict_is_said_once(tmp_path, capsys, pack):
    p = tmp_path / "server.log"
    earlier = startup(T0 - 900) + oom_tail(T0 - 900)
    p.write_text(lines(earlier + startup() + oom_tail()))
    code, ev = run(capsys, pack, target=str(p))
    before = lines(earlier).count("\n")  # the traceback is several lines of the file
    oom_line = before + len(startup()) + 1
    d = next(e for e in ev if e["event"] == "diagnosis")
    assert d["line"] == oom_line
    assert [e["line"] for e in ev if e["event"] == "phase"][0] == before + 1
    assert sum(e["event"] == "verdict" for e in ev) == 1
    code, text = run(capsys, pack, target=str(p), fmt="text")
    assert text.count("phases:") == 1 and text.count("✗ failed") == 1


def test_two_tails_on_one_resume_state_the_second_is_refused(tmp_path, pack):
    """Two runs on one state would overwrite each other's position: the second says so, exit 2."""
    import subprocess
    import sys

    p = tmp_path / "server.log"
    state = tmp_path / "tail.state"
    p.write_text(lines(startup()[:4]))
    cmd = [sys.executable, "-m", "logsense", "tail", str(p), "--resume", str(state), "--only-rules", str(pack)]
    first = subprocess.Popen(cmd + ["--format", "jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None
        first.stdout.readline()  # it has begun, holding the state
        second = subprocess.run(cmd + ["--no-follow"], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stderr
        assert "another logsense tail is using this --resume state" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=30)
    after = subprocess.run(cmd + ["--no-follow"], capture_output=True, text=True, timeout=60)
    assert after.returncode != 2, after.stderr  # the lock went with the first process


def _vllm_start(pid: int, minute: int) -> list[str]:
    at = f"INFO 05-07 20:{minute:02d}:00"
    return [f"(APIServer pid={pid}) {at} [api_server.py:1805] vLLM API server version 0.10.1.1",
            f"(APIServer pid={pid}) {at} [utils.py:326] non-default args: {{'model': 'Qwen/Qwen3-8B'}}",
            f"(EngineCore_DP0 pid={pid + 1}) {at} [gpu_model_runner.py:1953] Starting to load model Qwen/Qwen3-8B..."]


@pytest.mark.parametrize("starts, where, first", [(1, "from its start (its only startup)", 1),
                                                  (2, "from the latest startup", 4)])
def test_a_startup_that_says_its_arguments_in_two_lines_is_one_startup(tmp_path, capsys, starts, where, first):
    """vLLM gives its version and then its non-default args, both server_args lines: tail reads the latest
    startup from the first of them, and a file holding one startup from its top."""
    p = tmp_path / "vllm.log"
    p.write_text("\n".join(line for i in range(starts) for line in _vllm_start(10 * i + 1, 10 * i)) + "\n")
    tail.main(fmt="jsonl", target=str(p), follow=False)
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert events[0]["start"] == where
    assert next(e["line"] for e in events if e["event"] == "phase") == first
