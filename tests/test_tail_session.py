"""The live decision without a clock or I/O: records and a fake clock in, notes out."""

from __future__ import annotations

import pytest
from journal_helpers import FA_IMPORT, SERVICE, T0, oom_tail, ready_tail, rule_pack, sglang, startup

from logsense.commands.common import analysis_factory
from logsense.model import Item
from logsense.normalize import Normalizer
from logsense.rules import load_rules
from logsense.session import LINGER, QUIET, Session
from logsense.sources.stream import systemd_word


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return T0 + self.now

    def advance(self, s: float) -> None:
        self.now += s


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    return load_rules([], [str(rule_pack(tmp_path_factory.mktemp("pack")))])


class Feeder:
    """Lines of a file, as FileSource makes them into items."""

    def __init__(self) -> None:
        self.normalizer = Normalizer()
        self.line = 0

    def items(self, messages: list[str]) -> list[Item]:
        out = []
        for m in messages:
            self.line += 1
            recs = tuple(self.normalizer.feed(self.line, m))
            life = next((w for w in map(systemd_word, recs) if w), None)
            out.append(Item(recs, life=life, text=recs[0].message if life else ""))
        return out


def session(rules, clock, **kw) -> Session:
    return Session(rules, analysis_factory(rules, classifier=False), clock, **kw)


def feed(s: Session, feeder: Feeder, items, caught_up=True, ended=False) -> list:
    notes = []
    for it in feeder.items([m for _, m in items]):
        notes += s.feed(it)
    notes += s.tick(caught_up=caught_up, ended=ended)
    return notes


def kinds(notes) -> list[str]:
    return [n.kind for n in notes]


def test_ready_decides_only_when_the_input_is_caught_up(rules):
    clock = FakeClock()
    s, f = session(rules, clock, until_ready=True), Feeder()
    # a healthy startup then a failing one, read in two batches: the first batch is not the end of the input
    feed(s, f, startup() + ready_tail(), caught_up=False)
    assert s.code is None
    notes = feed(s, f, startup(T0 + 1000) + oom_tail(T0 + 1000))
    assert "startup" in kinds(notes) and s.code is None  # the failure waits for the lines that complete it
    clock.advance(QUIET)
    notes = s.tick(caught_up=True)
    assert s.code == 1 and notes[-1].fields["reason"] == "failed"
    assert [v.outcome.value for v in s.verdicts] == ["ready", "failed"]


def test_ready_when_caught_up(rules):
    s, f = session(rules, FakeClock(), until_ready=True), Feeder()
    notes = feed(s, f, startup() + ready_tail())
    assert s.code == 0 and notes[-1].kind == "end" and notes[-1].fields["reason"] == "ready"
    ready = next(n for n in notes if n.kind == "ready")
    assert ready.fields["total"] == 149  # from the first timed line, on the log's own clock


def test_a_failure_lingers_at_most_LINGER_while_lines_keep_coming(rules):
    clock = FakeClock()
    s, f = session(rules, clock, until_ready=True), Feeder()
    feed(s, f, startup()[:3] + [(0, sglang(T0 + 9, FA_IMPORT))])
    assert s.code is None
    for _ in range(int(LINGER / 0.25) + 1):
        clock.advance(0.25)
        feed(s, f, [(0, sglang(T0 + 10, "still writing"))])
    assert s.code == 1


def test_a_weaker_root_cause_is_one_line_and_the_verdict_comes_last(rules):
    clock = FakeClock()
    s, f = session(rules, clock), Feeder()
    notes = feed(s, f, startup()[:3] + [(0, sglang(T0 + 9, FA_IMPORT))] + oom_tail(), ended=True)
    said = [(n.kind, n.fields["d"].cause) for n in notes if n.kind in ("diagnosis", "symptom")]
    assert said == [("diagnosis", "flash_attn_cute_unavailable"), ("symptom", "cuda_oom_cuda_graph")]
    assert kinds(notes)[-2:] == ["verdict", "end"] and s.code == 1
    assert notes[-1].fields["report"].root.cause == "flash_attn_cute_unavailable"


def test_systemd_stop_lines_in_a_file_end_the_startup_as_stopped(rules):
    s, f = session(rules, FakeClock(), until_ready=True), Feeder()
    notes = feed(s, f, startup() + [(0, f"Jan 01 00:02:00 gpu1 systemd[1]: Stopping {SERVICE} - x..."),
                                    (0, f"Jan 01 00:02:01 gpu1 systemd[1]: Stopped {SERVICE} - x.")], ended=True)
    assert any(n.kind == "unit_event" and n.fields["kind"] == "stop" for n in notes)
    assert s.code == 1 and s.verdicts[-1].outcome.value == "stopped"


def test_a_start_after_a_stop_is_a_new_startup_with_its_own_timeline(rules):
    s, f = session(rules, FakeClock()), Feeder()
    stop = [(0, f"Jan 01 00:02:00 gpu1 systemd[1]: {SERVICE}: Main process exited, code=exited, status=1/FAILURE"),
            (0, f"Jan 01 00:02:01 gpu1 systemd[1]: Starting {SERVICE} - x..."),
            (0, f"Jan 01 00:02:01 gpu1 systemd[1]: Started {SERVICE} - x.")]
    notes = feed(s, f, startup() + stop + startup(T0 + 200) + ready_tail(T0 + 200), ended=True)
    assert kinds(notes).count("startup") == 1
    phases = [n.fields["name"] for n in notes if n.kind == "phase"]
    assert phases.count("server_args") == 2
    # an exit with status 1 is a failure once fatal signals are known; stopped at least
    assert [v.outcome.value for v in s.verdicts][1:] == ["ready"] and s.code == 0
    assert s.verdicts[0].outcome.value in ("failed", "stopped")


def test_timeout_on_the_sessions_clock(rules):
    clock = FakeClock()
    s, f = session(rules, clock, until_ready=True, deadline=60), Feeder()
    feed(s, f, startup())
    clock.advance(59)
    assert not s.tick(caught_up=True)
    clock.advance(1)
    notes = s.tick(caught_up=True)
    assert s.code == 3 and kinds(notes) == ["timeout", "end"]
    assert notes[0].fields["phase"] == "cuda_graph_capture"


def test_ready_with_a_probe_waits_for_its_answer(rules):
    s, f = session(rules, FakeClock(), until_ready=True, probe=True), Feeder()
    notes = feed(s, f, startup() + ready_tail())
    assert "probe" in kinds(notes) and s.code is None
    s.probed(False, "GET /health: connection refused", final=False)
    assert s.code is None
    s.probed(True, "answered", final=False)
    assert s.code == 0
    s2 = session(rules, FakeClock(), until_ready=True, probe=True)
    feed(s2, Feeder(), startup() + ready_tail())
    notes = s2.probed(False, "GET /health: HTTP 503", final=True)
    assert s2.code == 4 and notes[-1].fields["reason"] == "not-answering"


def test_status_time_since_start_from_the_logs_clock(rules):
    clock = FakeClock()
    s, f = session(rules, clock), Feeder()
    feed(s, f, startup())
    st = s.status().fields
    assert st["phase"] == "cuda_graph_capture" and st["since_start"] is not None
    f2 = Feeder()
    s2 = session(rules, clock)
    feed(s2, f2, startup()[:5])
    assert s2.status().fields["progress"] == (2, 4)


def test_journal_short_lines_without_a_year_then_sglangs_own_times(rules):
    """journalctl's short lines carry no year; SGLang's time does: time since start stays on one clock."""
    s, f = session(rules, FakeClock()), Feeder()
    head = [(0, f"Jan 01 00:00:00 gpu1 systemd[1]: Starting {SERVICE} - x..."),
            (0, f"Jan 01 00:00:00 gpu1 systemd[1]: Started {SERVICE} - x.")]
    notes = feed(s, f, head + [(0, f"Jan 01 00:00:01 gpu1 python3[7]: {m}") for _, m in startup()], ended=True)
    since = {n.fields["name"]: n.fields["since_start"] for n in notes if n.kind == "phase"}
    assert since["server_args"] == 1 and since["weight_loading"] == 3
    assert s.verdicts[0].started_at.startswith("2026-01-01 00:00:00")


def test_a_log_written_long_ago_needs_no_quiet_time_waited_out(rules):
    clock = FakeClock()
    s, f = session(rules, clock, until_ready=True), Feeder()
    feed(s, f, startup() + oom_tail())
    assert s.code is None  # read just now: the lines that complete the failure may still come
    assert not s.tick(caught_up=False, idle=60) and s.code is None  # more to read: its age says nothing yet
    notes = s.tick(caught_up=True, idle=60)  # but nothing was added to the file for a minute
    assert s.code == 1 and notes[-1].fields["reason"] == "failed"


def test_a_file_written_a_moment_ago_waits_out_the_rest_of_the_quiet_time(rules):
    clock = FakeClock()
    s, f = session(rules, clock, until_ready=True), Feeder()
    feed(s, f, startup() + oom_tail())
    s.tick(caught_up=True, idle=QUIET / 2)
    assert s.code is None
    clock.advance(QUIET / 2)
    s.tick(caught_up=True, idle=None)
    assert s.code == 1


def test_an_item_is_what_was_read_not_where_it_began():
    """Two items that read the same are equal and hash alike, wherever the source says they began (--resume)."""
    a, b = Item((), life="start", text="x", where={"offset": 1}), Item((), life="start", text="x")
    assert a == b and hash(a) == hash(b) and a != Item((), life="stop", text="x")
