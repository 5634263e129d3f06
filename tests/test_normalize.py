"""Prefixes of every journalctl format, SGLang ranks, ANSI, progress bars, JSON messages."""

from __future__ import annotations

import json

import pytest

from logsense.normalize import Normalizer

MSG = "[2026-01-01 00:00:00 TP3] Load weight begin. avail mem=78.48 GB"


@pytest.mark.parametrize(
    "line",
    [
        "Jan 01 00:00:00 gpu-node-1 python[4242]: " + MSG,
        "Jan 01 00:00:00 python[4242]: " + MSG,
        "Jan 01 00:00:00.123456 gpu-node-1 python[4242]: " + MSG,
        "2026-01-01T00:00:00+0000 gpu-node-1 python[4242]: " + MSG,
        "2026-01-01T00:00:00.123456+0000 python[4242]: " + MSG,
        "[    5.000000] gpu-node-1 python[4242]: " + MSG,
        "1767225600.123456 gpu-node-1 python[4242]: " + MSG,
        "Thu 2026-01-01 00:00:00 UTC gpu-node-1 python[4242]: " + MSG,
        MSG,
        "2026-09-22T06:50:07.810311167Z " + MSG,
        "\x1b[32m" + MSG + "\x1b[0m",
    ],
)
def test_prefixes(line):
    (rec,) = Normalizer().feed(1, line)
    assert rec.message == "Load weight begin. avail mem=78.48 GB"
    assert rec.rank == "TP3"
    assert rec.prefixed


def test_ranks_and_levels():
    (rec,) = Normalizer().feed(1, "[2026-08-10 09:47:14 DP0 TP0 EP0] Load weight end.")
    assert rec.rank == "DP0 TP0 EP0"
    (rec,) = Normalizer().feed(1, "[2025-11-12 15:33:32] WARNING server_args.py:1197: Attention backend not set.")
    assert rec.message == "Attention backend not set."


def test_continuation_lines_keep_indentation():
    n = Normalizer()
    n.feed(1, "Jan 01 00:00:02 gpu-node-1 python[4242]: Traceback (most recent call last):")
    (rec,) = n.feed(2, '                                           File "x.py", line 1, in <module>')
    assert rec.message == '  File "x.py", line 1, in <module>' and rec.pid == "4242"


def test_progress_bar_folds_and_glued_record_splits():
    (rec,) = Normalizer().feed(1, "Loading  0% 0/2\rLoading 50% 1/2\rLoading 100% 2/2\r")
    assert rec.message == "Loading 100% 2/2"
    recs = Normalizer().feed(1, "Capturing (bs=1): 100%|##| 36/36 [00:11<00:00][2026-08-27 03:45:56] Using default")
    assert [r.message for r in recs][-1] == "Using default" and recs[-1].prefixed


def test_meta_lines_dropped():
    assert Normalizer().feed(1, "-- Boot 0123456789abcdef0123456789abcdef --") == []
    assert Normalizer().feed(1, "-- No entries --") == []


@pytest.mark.parametrize("message", ["hello", [104, 101, 108, 108, 111], None])
def test_json_message_forms(message):
    line = json.dumps({"MESSAGE": message, "_PID": "7", "__REALTIME_TIMESTAMP": "1767225600000000"})
    (rec,) = Normalizer().feed(1, line)
    assert rec.pid == "7" and rec.time.startswith("2026-01-01")
    assert rec.message == ("hello" if message is not None else rec.message)


def test_invalid_utf8_and_controls():
    (rec,) = Normalizer().feed(1, "bad \ufffd byte \x00\x07 here \x1b]0;title\x07!")
    assert "\x00" not in rec.message and "\x1b" not in rec.message and rec.message.endswith("here !")


@pytest.mark.parametrize(
    ("line", "time"),
    [
        ("Nov 20 11:05:02 gpu python3[1]: x", "2000-11-20 11:05:02"),
        ("Jan  2 03:04:05.123456 gpu python3[1]: x", "2000-01-02 03:04:05.123456"),
        ("Thu 2026-01-01 00:00:00 UTC gpu python3[1]: x", "2026-01-01 00:00:00"),
        ("2026-01-01T00:00:00.5+0000 gpu python3[1]: x", "2026-01-01 00:00:00.5"),
    ],
)
def test_journal_times(line, time):
    (rec,) = Normalizer().feed(1, line)
    assert rec.time == time


def test_docker_timestamp_keeps_exception_text():
    (rec,) = Normalizer().feed(1, "2026-09-22T06:50:07.810311167Z RuntimeError: CUDA error: out of memory")
    assert rec.message == "RuntimeError: CUDA error: out of memory"
    (rec,) = Normalizer().feed(1, "Dec 02 12:00:00 host ValueError: bad")
    assert rec.message.endswith("ValueError: bad")


def test_an_actor_address_in_front_of_an_exception_text_is_dropped():
    from logsense.normalize import Normalizer

    line = ("ImportError: [address=0.0.0.0:40067, pid=32176] cannot import name 'build_regex_from_schema' "
            "from 'outlines.fsm.json_schema'")
    (rec,) = Normalizer().feed(1, line)
    assert rec.message == "ImportError: cannot import name 'build_regex_from_schema' from 'outlines.fsm.json_schema'"
    assert rec.raw == line


def test_an_engine_line_relayed_by_the_api_server_belongs_to_the_engine():
    (rec,) = Normalizer().feed(1, "(APIServer pid=5693) (EngineCore_DP0 pid=7960) KeyError: 'model.layers.30.self_attn.attn'")
    assert rec.message == "KeyError: 'model.layers.30.self_attn.attn'"
    assert rec.pid == "7960"
    assert rec.rank == "DP0"
