"""history reuses a repeated startup's verdict (logsense.repeats): the same rows as reading every startup.

The reuse is forced on small files here (`MIN_BYTES`), and the block reading on any backlog with small blocks,
so that blocks end inside startups. The reference is the same process's history with the reuse off.
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from logsense import repeats as repeats_module
from logsense.commands import history
from logsense.commands.common import WallClock, analysis_factory
from logsense.repeats import Repeats, same_but_stamps
from logsense.scan import keep_for
from logsense.session import Session
from logsense.sources import stream
from logsense.sources.stream import FileSource
from tests.conftest import CORPORA, HEALTHY, MODULE_MISSING

LOGS = sorted(CORPORA.rglob("*.log"))
FA4 = CORPORA / "mission/flash-attn-cute-warmup.log"
VLLM_WEIGHTS = CORPORA / "recorded/vllm-0.17.1/weights-do-not-fit-config.log"

# the stamps a line begins with, as the copies of a startup shift them
_STAMPS = re.compile(r"(?P<iso>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)|(?P<short>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)"
                     r"|(?P<md>(?<![\d-])\d\d-\d\d \d\d:\d\d:\d\d)")
_FORMS = {"iso": "%Y-%m-%d %H:%M:%S", "short": "%b %d %H:%M:%S", "md": "%m-%d %H:%M:%S"}


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setattr(repeats_module, "MIN_BYTES", 0)
    monkeypatch.setattr(stream, "CATCH_UP_MIN", 0)
    monkeypatch.setattr(stream, "CATCH_UP_BLOCK", 48 << 10)


def judged(rules, path: Path, reuse: bool) -> tuple[list[dict], int]:
    """history's rows for the file at `path`, and how many startups took an earlier one's verdict."""
    new = analysis_factory(rules)
    made: list[Repeats] = []
    of = Repeats.of

    def keep(source, session):
        r = of(source, session)
        if r is not None:
            made.append(r)
        return r

    source = FileSource(str(path), rules, from_start=True, follow=False, keep=keep_for(new()))
    session = Session(rules, new, WallClock(), source_name=source.description)
    try:
        Repeats.of = keep  # type: ignore[method-assign]
        verdicts = history.attempts(source, session, reuse=reuse)
    finally:
        Repeats.of = of  # type: ignore[method-assign]
        source.close()
    assert reuse or not made
    return history.table(verdicts), sum(r.repeated for r in made)


def same(rules, path: Path) -> tuple[list[dict], int]:
    """The rows with reuse, checked against those without; and how many startups were repeats."""
    rows, repeated = judged(rules, path, True)
    assert json.dumps(rows) == json.dumps(judged(rules, path, False)[0])
    return rows, repeated


def _moved(m: re.Match, move: timedelta) -> str:
    kind = m.lastgroup
    assert kind is not None
    form = _FORMS[kind]
    text = m.group(0).replace("T", " ")
    t = datetime.strptime(text if kind == "iso" else "2026 " + text, form if kind == "iso" else "%Y " + form) + move
    s = t.strftime(form)
    return s.replace(" ", "T", 1) if kind == "iso" and "T" in m.group(0) else s


def shifted(text: str, seconds: float, jitter: int = 0) -> str:
    """`text` with the stamps that begin its lines moved by `seconds`, and each `jitter`th line's by one more."""
    out = []
    for i, line in enumerate(text.split("\n")):
        move = timedelta(seconds=seconds + (1 if jitter and i % jitter == 0 else 0))
        out.append(_STAMPS.sub(lambda m, move=move: _moved(m, move), line[:100]) + line[100:])
    return "\n".join(out)


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")  # its bytes as they are (a "\r" stays one)


def _write(path: Path, parts: list[str]) -> Path:
    path.write_bytes("".join(p if p.endswith("\n") else p + "\n" for p in parts).encode())
    return path


def test_a_crash_loop(rules, tmp_path, forced):
    rows, repeated = same(rules, _write(tmp_path / "loop.log", [_read(FA4)] * 40))
    assert len(rows) == 40 and repeated >= 36
    assert {r["cause"] for r in rows} == {"flash_attn_cute_unavailable"}


def test_the_command_gives_the_same_rows(rules, tmp_path, forced, monkeypatch, capsys):
    path = _write(tmp_path / "loop.log", [shifted(_read(FA4), 600 * k) for k in range(12)])
    history.main(str(path), fmt="json")
    reused = capsys.readouterr().out
    monkeypatch.setattr(history, "REUSE", False)
    history.main(str(path), fmt="json")
    assert reused == capsys.readouterr().out
    assert len({r["started"] for r in json.loads(reused)}) == 12


def test_repeats_whose_times_differ(rules, tmp_path, forced):
    """Each copy shifted, some lines a second more in some copies: each startup keeps its own start and seconds."""
    text = _read(FA4)
    copies = [shifted(text, 3600 * k + 17 * k, jitter=(k % 4) * 3) for k in range(16)]
    rows, repeated = same(rules, _write(tmp_path / "shifted.log", copies))
    assert repeated >= 10
    assert len({r["started"] for r in rows}) == 16
    assert len({r["seconds"] for r in rows}) > 1


def test_a_vllm_record_cut_by_a_stamp_is_not_repeated(rules, tmp_path, forced):
    """vLLM starts a new record where a line's time changes: a copy whose traceback lines change second where
    the earlier copy's did not frames other events, so it is read, not repeated (the rows agree either way)."""
    text = _read(VLLM_WEIGHTS)
    copies = [shifted(text, 3601 * k, jitter=k) for k in range(6)]
    same(rules, _write(tmp_path / "vllm-jitter.log", copies))
    rows, repeated = same(rules, _write(tmp_path / "vllm-shifted.log", [shifted(text, 3601 * k) for k in range(6)]))
    assert repeated >= 3 and len({r["started"] for r in rows}) == 6  # the first two are read, and the last


def test_a_digit_outside_the_time_is_not_repeated(rules, tmp_path, forced):
    text = _read(FA4)
    assert "tp_size=8," in text
    copies = [text] * 10
    copies[5] = text.replace("tp_size=8,", "tp_size=4,")
    copies[7] = text.replace("status=9/KILL", "status=6/ABRT")
    rows, repeated = same(rules, _write(tmp_path / "digit.log", copies))
    assert repeated == 10 - 5  # not the first two (the year is named in the first), the changed ones, the last
    assert rows[5]["changed"] == ["--tp-size 4"] and rows[6]["changed"] == ["--tp-size 8"]


def test_startups_that_fail_before_loading_weights(rules, tmp_path, forced):
    """A start that never reached the weights is no restart: the session joins it to the next one."""
    failing = MODULE_MISSING.replace("[2026-11-20 10:00:03 TP0] Load weight begin. avail mem=78.48 GB\n", "")
    assert failing != MODULE_MISSING
    rows, _ = same(rules, _write(tmp_path / "early.log", [shifted(failing, 60 * k) for k in range(30)]))
    assert len(rows) == 1
    mixed = [shifted(failing if k % 3 else MODULE_MISSING, 60 * k) for k in range(30)]
    rows, repeated = same(rules, _write(tmp_path / "mixed.log", mixed))
    assert len(rows) == 11 and repeated >= 6  # the first start, then three a startup (one reached the weights)


def test_a_healthy_startup_repeated(rules, tmp_path, forced):
    rows, repeated = same(rules, _write(tmp_path / "ready.log", [shifted(HEALTHY, 97 * k) for k in range(20)]))
    assert len(rows) == 20 and repeated >= 17
    assert {r["outcome"] for r in rows} == {"ready"}


@pytest.mark.parametrize("i", range(0, len(LOGS), 20))
def test_corpus_logs_repeated(rules, tmp_path, forced, i):
    text = _read(LOGS[i])
    same(rules, _write(tmp_path / "repeated.log", [text] * 6))
    same(rules, _write(tmp_path / "shifted.log", [shifted(text, 3601 * k, jitter=k) for k in range(6)]))


@pytest.mark.parametrize("seed", range(12))
def test_corpus_logs_joined_in_various_orders(rules, tmp_path, forced, seed):
    pick = random.Random(seed)
    logs = [_read(p) for p in pick.sample(LOGS, 3)]
    order = [pick.randrange(3) for _ in range(12)]
    same(rules, _write(tmp_path / "joined.log", [logs[k] for k in order]))
    same(rules, _write(tmp_path / "joined-shifted.log", [shifted(logs[k], 7200 * n) for n, k in enumerate(order)]))


def test_small_files_and_followed_ones_read_every_startup(rules, tmp_path):
    path = _write(tmp_path / "loop.log", [_read(FA4)] * 3)
    assert judged(rules, path, True)[1] == 0  # under MIN_BYTES
    new = analysis_factory(rules)
    source = FileSource(str(path), rules, from_start=True, follow=True, keep=keep_for(new()))
    try:
        assert Repeats.of(source, Session(rules, new, WallClock())) is None
    finally:
        source.close()


def test_stamps_are_the_only_difference_allowed():
    a = b"Nov 20 08:27:49 gpu-b300-01 python3[1795520]: [2026-11-20 08:27:57] OSError: [Errno 24] Too many open files"
    assert same_but_stamps(a, a.replace(b"08:27:49", b"09:28:50").replace(b"08:27:57", b"09:28:58"))
    assert same_but_stamps(a, a.replace(b"Nov 20", b"Nov 21"))
    assert not same_but_stamps(a, a.replace(b"Errno 24", b"Errno 28"))
    assert not same_but_stamps(a, a.replace(b"1795520", b"1795521"))  # a process id is not a time
    assert not same_but_stamps(a, a.replace(b"2026-11-20", b"2027-11-20"))  # nor is a year its own
    late = a.replace(b"OSError: [Errno 24] Too many open files", b"watchdog fired at 08:28:00")
    assert not same_but_stamps(late, late.replace(b"08:28:00", b"08:29:00"))  # a time in the message is its own
    assert same_but_stamps(late, late.replace(b"08:27:57", b"08:27:58"))
    vllm = b"(APIServer pid=1) INFO 11-20 10:00:00 [api_server.py:12] vLLM API server version 0.9.1"
    assert same_but_stamps(vllm, vllm.replace(b"10:00:00", b"10:01:02"))
    assert not same_but_stamps(vllm, vllm.replace(b"0.9.1", b"0.9.2"))


def test_a_repeat_that_ends_otherwise_reads_the_file_again(rules, tmp_path, forced, monkeypatch, capsys):
    """Should the line after a repeat not begin a startup, as it began one after the startup repeated, the
    command reads the file again without reuse (here: repeats are made to keep the startup's state)."""
    path = _write(tmp_path / "loop.log", [_read(FA4)] * 6)
    monkeypatch.setattr(history, "REUSE", False)
    history.main(str(path), fmt="json")
    expected = capsys.readouterr().out
    monkeypatch.setattr(history, "REUSE", True)
    monkeypatch.setattr(Session, "repeat", lambda self, *args: [])
    with pytest.raises(repeats_module.NotRepeated):
        judged(rules, path, True)
    history.main(str(path), fmt="json")
    assert capsys.readouterr().out == expected
