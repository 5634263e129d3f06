"""The scanner-fed diff (first line of each shape fed, the rest counted) equals the diff fed every line.

The diff that reads the good log in a child process (the bad one testing its lines against the
good run's templates only once the child hands them over) gives the same report too.

The logs are made to hit what the counting must get right: serving traffic whose numbers and
ranks change on every line, messages told apart only by a digit the masks keep (`qwen3` /
`qwen2`), a restart in the middle of the bad log, journal continuation lines, tracebacks, and
(with a small block) every decision made across block boundaries.
"""

from __future__ import annotations

import random
from datetime import datetime

import pytest
from diff_golden import canonical
from test_diff import Journal, startup

from logsense import run_templates, scan
from logsense.diff import diff_logs


def _serving(j: Journal, rnd: random.Random, n: int, model: str) -> None:
    for _ in range(n):
        j.tick(rnd.random())
        x = rnd.random()
        if x < 0.4:
            j.sg(f"Decode batch, #running-req: {rnd.randint(1, 300)}, #token: {rnd.randint(10, 99999)}, token usage: "
                 f"{rnd.random():.2f}, gen throughput (token/s): {rnd.uniform(1, 999):.2f}", rnd.randint(0, 7))
        elif x < 0.7:
            j.sg(f'INFO:     10.0.{rnd.randint(0, 9)}.{rnd.randint(1, 99)}:{rnd.randint(1024, 65535)} - '
                 f'"POST /generate HTTP/1.1" 200 OK')
        elif x < 0.8:
            j.sg(f"Using the {model} chat template for request {rnd.randint(1, 999)}", rnd.randint(0, 1))
        elif x < 0.9:
            j.py(f"NCCL INFO Channel {rnd.randint(0, 31):02d}/0 : {rnd.randint(0, 7)}[0] -> {rnd.randint(0, 7)}[0] "
                 "via P2P/CUMEM")
        elif x < 0.95:
            j.sg(f"Multi-line note {rnd.randint(1, 9)} begins")
            for k in range(rnd.randint(1, 3)):  # journalctl's continuation: indented to the message column
                j.lines.append(" " * 30 + f"continued part {k} of {rnd.randint(1, 99)}")
        elif x < 0.97:
            j.sg("Scheduler hit an exception: Traceback (most recent call last):", rnd.randint(0, 7))
            j.py(f'  File "/x/sglang/srt/managers/scheduler.py", line {rnd.randint(1, 3000)}, in event_loop')
            j.py("    self.run_batch()")
            j.py(f"RuntimeError: step {rnd.randint(1, 99)} failed")
        else:
            j.sg(f"KV cache pool is full. Retract requests. #retracted_reqs: {rnd.randint(1, 5)}", 0)


def _log(seed: int, model: str, restart: bool) -> str:
    rnd = random.Random(seed)
    text = startup(day=3 + seed % 3, seed=seed)
    j = Journal(datetime(2026, 3, 9, 12, 0, 0))
    _serving(j, rnd, 1500, model)
    if restart:
        j.raw("systemd[1]", "sglang.service: Main process exited, code=killed, status=9/KILL")
        text += j.text() + startup(day=6, seed=seed + 1)
        j = Journal(datetime(2026, 3, 9, 14, 0, 0))
    _serving(j, rnd, 1500, model)
    return text + j.text()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    good, bad = d / "good.log", d / "bad.log"
    good.write_text(_log(1, "qwen3", restart=False), encoding="utf-8")
    bad.write_text(_log(2, "qwen2", restart=True), encoding="utf-8")
    return good, bad


@pytest.mark.parametrize("block", [scan.BLOCK, 4096, 65536])
@pytest.mark.parametrize("order", ["good-bad", "bad-good"])
def test_scanner_fed_diff_is_the_every_line_diff(logs, rules, monkeypatch, block, order):
    good, bad = logs if order == "good-bad" else logs[::-1]
    monkeypatch.setattr(scan, "BLOCK", block)
    fast = canonical(diff_logs(str(good), str(bad), rules).to_json(), good, bad)
    monkeypatch.setenv("LOGSENSE_SCAN", "off")
    full = canonical(diff_logs(str(good), str(bad), rules).to_json(), good, bad)
    assert fast == full
    assert fast["bad"]["restarts"] == (1 if order == "good-bad" else 0)
    assert any("qwen" in x["text"] for x in fast["bad_only"])  # a digit the masks keep tells the lines apart


@pytest.mark.parametrize("pending", [run_templates.MAX_PENDING, 7])
def test_good_log_read_in_a_child_process(logs, rules, monkeypatch, pending):
    good, bad = logs
    monkeypatch.setattr(run_templates, "MAX_PENDING", pending)  # 7: waited for early, most of the log still unread
    monkeypatch.setattr(scan, "BLOCK", 65536)
    alone = canonical(diff_logs(str(good), str(bad), rules, parallel=False).to_json(), good, bad)
    both = canonical(diff_logs(str(good), str(bad), rules, parallel=True).to_json(), good, bad)
    assert both == alone


def test_a_good_log_the_child_cannot_read_fails_as_when_read_first(logs, rules, tmp_path):
    from logsense.errors import SourceError

    good, bad = logs
    broken = tmp_path / "broken.log.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + bytes(64))  # a gzip header, then garbage
    with pytest.raises(SourceError) as alone:
        diff_logs(str(broken), str(bad), rules, parallel=False)
    with pytest.raises(SourceError) as both:
        diff_logs(str(broken), str(bad), rules, parallel=True)
    assert str(both.value) == str(alone.value)
