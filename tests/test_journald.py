"""The journald source on real journal files (made by systemd-journal-remote), through both
readers: systemd-python's journal.Reader and the `journalctl -o json` subprocess fallback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from journal_helpers import (
    BACKENDS,
    BOOT,
    BOOT_OLD,
    FA_IMPORT,
    SERVICE,
    T0,
    UNIT,
    entry,
    needs_journal_remote,
    oom_tail,
    ready_tail,
    rule_pack,
    sglang,
    startup,
    unit_entries,
    write_journal,
)

from logsense.commands import tail
from logsense.errors import SourceError, UsageError
from logsense.sources import journald
from logsense.sources.journald import find_run_start, lifecycle, parse_since, parse_span, unit_names

# -- what needs no journal ---------------------------------------------------------------------

NAMES = unit_names(UNIT)


def sd(msg: str, mid: str | None = None, inv: str | None = None) -> dict:
    e = {"_PID": "1", "SYSLOG_IDENTIFIER": "systemd", "UNIT": SERVICE, "MESSAGE": msg, "__CURSOR": msg}
    if mid:
        e["MESSAGE_ID"] = mid
    if inv:
        e["INVOCATION_ID"] = inv
    return e


def out(msg: str, inv: str | None = None) -> dict:
    e = {"_PID": "4242", "_SYSTEMD_UNIT": SERVICE, "MESSAGE": msg, "__CURSOR": msg}
    if inv:
        e["_SYSTEMD_INVOCATION_ID"] = inv
    return e


def test_unit_names():
    assert unit_names("sglang-k26-ddtree") == ("sglang-k26-ddtree", "sglang-k26-ddtree.service")
    assert unit_names("x.service") == ("x.service",)
    assert unit_names(None) == ()


def test_lifecycle_from_systemd_only():
    assert lifecycle(sd(f"Starting {SERVICE} - SGLang..."), NAMES) == "start"
    assert lifecycle(sd("Started SGLang K2.6."), NAMES) == "start"
    assert lifecycle(sd(f"Stopped {SERVICE}."), NAMES) == "stop"
    assert lifecycle(sd(f"{SERVICE}: Main process exited, code=exited, status=1/FAILURE"), NAMES) == "stop"
    assert lifecycle(sd(f"{SERVICE}: Failed with result 'exit-code'."), NAMES) == "stop"
    assert lifecycle(sd("whatever the words", mid="9d1aaa27d60140bd96365438aad20286"), NAMES) == "stop"
    assert lifecycle(sd(f"{SERVICE}: Consumed 1min 3s CPU time."), NAMES) is None
    assert lifecycle(out("Stopped everything"), NAMES) is None  # the service's own words are not systemd's
    other = dict(sd("Stopped other.service."), UNIT="other.service")
    assert lifecycle(other, NAMES) is None


def test_find_run_start_variants():
    def newest_first(entries):
        return iter(list(reversed(entries)))

    # Starting / Started / output: the run begins at "Starting"
    run = [out("old"), sd("Stopped x."), sd("Starting x..."), sd("Started x."), out("new 1"), out("new 2")]
    assert find_run_start(newest_first(run), NAMES)["MESSAGE"] == "Starting x..."
    # only "Started" (simple services), after a previous run that stopped
    run = [out("old"), sd("x: Main process exited, code=exited"), sd("Started x."), out("new")]
    assert find_run_start(newest_first(run), NAMES)["MESSAGE"] == "Started x."
    # the latest run already failed: its own stop entries do not end the search
    run = [sd("Starting x..."), out("boom"), sd("x: Main process exited, code=exited"), sd("x: Failed with result")]
    assert find_run_start(newest_first(run), NAMES)["MESSAGE"] == "Starting x..."
    # no systemd entries, but invocation ids
    run = [out("old", "a" * 32), out("new 1", "b" * 32), out("new 2", "b" * 32)]
    assert find_run_start(newest_first(run), NAMES)["MESSAGE"] == "new 1"
    # nothing at all
    assert find_run_start(iter([]), NAMES) is None


def test_a_run_longer_than_the_scan_starts_at_its_first_entry_by_invocation():
    run = [sd("Starting x...", inv="b" * 32)] + [out(f"line {n}", "b" * 32) for n in range(50)]
    asked = []

    def first_of(inv):
        asked.append(inv)
        return run[0]

    newest = list(reversed(run))
    assert find_run_start(iter(newest), NAMES, limit=10, first_of=first_of)["MESSAGE"] == "Starting x..."
    assert asked == ["b" * 32]
    # without the index, the oldest entry looked at, as before
    assert find_run_start(iter(newest), NAMES, limit=10)["MESSAGE"] == "line 40"
    # a run found within the scan does not ask
    assert find_run_start(iter(newest), NAMES, limit=100, first_of=first_of)["MESSAGE"] == "Starting x..."
    assert asked == ["b" * 32]


def test_parse_span_and_since():
    assert parse_span("20m") == 1200
    assert parse_span("90s") == 90
    assert parse_span("1h30min") == 5400
    assert parse_span("45") == 45
    assert parse_span("soon") is None
    now = 1767225600.0
    assert parse_since("@1767225000", now) == 1767225000
    assert parse_since("-2h", now) == now - 7200
    assert parse_since("10 min ago", now) == now - 600
    assert parse_since("2026-01-01 00:00:00 UTC", now) == 1767225600
    with pytest.raises(UsageError):
        parse_since("the day before", now)


def test_system_journal_missing_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(journald, "JOURNAL_DIRS", (str(tmp_path / "run"), str(tmp_path / "var")))
    with pytest.raises(SourceError, match="no journal files"):
        journald.JournalSource(UNIT, backend="journalctl")


def test_unknown_backend_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setenv(journald.BACKEND_ENV, "carrier-pigeon")
    (tmp_path / "x.journal").write_bytes(b"x")
    with pytest.raises(UsageError, match="choose from"):
        journald.JournalSource(UNIT, files=[str(tmp_path / "x.journal")])


# -- real journal files ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def journals(tmp_path_factory):
    if not os.access("/lib/systemd/systemd-journal-remote", os.X_OK):
        pytest.skip("/lib/systemd/systemd-journal-remote is missing (apt install systemd-journal-remote)")
    d = tmp_path_factory.mktemp("journals")
    pack = rule_pack(d)
    j = {"pack": str(pack)}
    # an earlier run that failed another way, then the latest run: CUDA OOM during graph capture, unit stops
    earlier = T0 - 3600
    old_run = unit_entries([(earlier + 5, sglang(earlier + 5, FA_IMPORT))], invocation="b" * 32, started=earlier,
                           stopped=earlier + 6)
    write_journal(d / "oom.journal", old_run + unit_entries(startup() + oom_tail(), stopped=T0 + 121))
    j["oom"] = str(d / "oom.journal")
    write_journal(d / "ok.journal", unit_entries(startup() + ready_tail()))
    j["ok"] = str(d / "ok.journal")
    write_journal(d / "slow.journal", unit_entries(startup()))  # still capturing CUDA graphs
    j["slow"] = str(d / "slow.journal")
    write_journal(d / "stopped.journal", unit_entries(startup(), stopped=T0 + 110))
    j["stopped"] = str(d / "stopped.journal")
    write_journal(d / "gone.journal", unit_entries(startup() + ready_tail(), stopped=T0 + 200))
    j["gone"] = str(d / "gone.journal")  # it was ready, and has stopped since
    halted = unit_entries(startup())
    halted.append(entry(f"Stopping {SERVICE} - SGLang K2.6 DDTree...", T0 + 110, systemd=True, invocation="a" * 32))
    halted.append(entry(f"Stopped {SERVICE} - SGLang K2.6 DDTree.", T0 + 111, systemd=True, invocation="a" * 32))
    write_journal(d / "halted.journal", halted)
    j["halted"] = str(d / "halted.journal")
    # two boots: the old one failed at import; the latest became ready
    boots = unit_entries([(earlier + 5, sglang(earlier + 5, FA_IMPORT))], started=earlier, invocation="c" * 32)
    boots = [b.replace(BOOT.encode(), BOOT_OLD.encode()) for b in boots]
    write_journal(d / "boots.journal", boots + unit_entries(startup() + ready_tail()))
    j["boots"] = str(d / "boots.journal")
    # entries about the unit from another daemon count; another unit's do not
    mixed = unit_entries(startup())
    mixed.append(entry(FA_IMPORT, T0 + 105, unit="other.service", invocation="e" * 32).replace(
        b"_SYSTEMD_UNIT=other.service\n", b"_SYSTEMD_UNIT=other.service\nOBJECT_SYSTEMD_UNIT=" + SERVICE.encode() + b"\n"))
    mixed.append(entry(sglang(T0 + 106, oom_tail()[0][1]), T0 + 106, unit="unrelated.service"))
    write_journal(d / "mixed.journal", mixed)
    j["mixed"] = str(d / "mixed.journal")
    (d / "garbage.journal").write_bytes(b"this is not a journal file\n" * 10)
    j["garbage"] = str(d / "garbage.journal")
    (d / "empty").mkdir()
    j["empty"] = str(d / "empty")
    return j


def run(capsys, monkeypatch, backend, pack, *, fmt="jsonl", **kw):
    monkeypatch.setenv(journald.BACKEND_ENV, backend)
    kw.setdefault("target", UNIT)
    kw.setdefault("follow", False)
    code = tail.main(fmt=fmt, only_rules=[pack], **kw)
    text = capsys.readouterr().out
    events = [json.loads(x) for x in text.splitlines()] if fmt == "jsonl" else text
    return code, events


def diagnoses(events):
    """The causes said as they came: in full (a leading root cause) or in one line (a weaker one)."""
    return [e["diagnosis"]["cause"] for e in events if e["event"] in ("diagnosis", "symptom")]


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_latest_run_only_and_multiline_messages(journals, capsys, monkeypatch, backend):
    code, ev = run(capsys, monkeypatch, backend, journals["pack"], files=[journals["oom"]])
    assert code == 1
    assert diagnoses(ev) == ["cuda_oom_cuda_graph"]  # not the earlier run's import failure
    assert ev[0]["event"] == "follow" and "latest start" in ev[0]["start"]
    d = next(e["diagnosis"] for e in ev if e["event"] == "diagnosis")
    lines = [x["line"] for x in d["evidence"]]
    assert len(lines) == len(set(lines)) >= 2  # each line of the multi-line MESSAGE is its own line
    assert any("OutOfMemoryError" in x["text"] for x in d["evidence"])
    assert [e["phase"] for e in ev if e["event"] == "phase"] == [
        "server_args", "distributed_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture"]
    assert any(e["event"] == "stopped" for e in ev)
    assert ev[-1]["event"] == "end" and ev[-1]["status"] == "failed"


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_longer_than_the_scan_is_read_from_its_start(tmp_path, capsys, monkeypatch, backend):
    """A unit up for a day holds more entries since its start than the newest-first scan looks at: its
    start is found by the run's invocation id, not taken as the oldest entry the scan reached."""
    pack = rule_pack(tmp_path)
    serving = [(T0 + 200 + n, sglang(T0 + 200 + n, f"Decode batch. #running-req: {n % 7}")) for n in range(300)]
    j = tmp_path / "long.journal"
    write_journal(j, unit_entries(startup() + ready_tail() + serving))
    monkeypatch.setattr(journald, "SCAN_LIMIT", 50)
    code, ev = run(capsys, monkeypatch, backend, str(pack), files=[str(j)])
    assert ev[0]["event"] == "follow" and f"Starting {SERVICE}" in ev[0]["start"]
    assert ev[-1]["event"] == "end" and ev[-1]["status"] == "ready"


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_until_ready_exit_codes(journals, capsys, monkeypatch, backend):
    pack = journals["pack"]
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["ok"]], until_ready=True, follow=True)
    assert code == 0
    ready = next(e for e in ev if e["event"] == "ready")
    secs = {p["name"]: p["seconds"] for p in ready["phases"]}
    assert secs["weight_loading"] == 90 and ready["seconds"] == 150
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["oom"]], until_ready=True, follow=True)
    assert code == 1 and diagnoses(ev) == ["cuda_oom_cuda_graph"]
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["stopped"]], until_ready=True, follow=True)
    # no rule knows why, but the main process exited with status 1: a failure, cause unknown
    assert code == 1 and ev[-1]["reason"] == "failed" and ev[-1]["cause"] == "unknown"
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["gone"]], until_ready=True, follow=True)
    assert code == 1 and ev[-1]["reason"] == "failed"  # ready once is not ready now
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["halted"]], until_ready=True, follow=True)
    assert code == 1 and ev[-1]["reason"] == "stopped" and ev[-1]["cause"] is None  # the operator stopped it
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["slow"]], until_ready=True, follow=True,
                   timeout="0.7s")
    assert code == 3
    t = next(e for e in ev if e["event"] == "timeout")
    assert t["phase"] == "cuda_graph_capture"


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_boot_and_since(journals, capsys, monkeypatch, backend):
    pack = journals["pack"]
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["boots"]], boot="-1")
    assert code == 1 and diagnoses(ev) == ["flash_attn_cute_unavailable"]
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["boots"]], boot=BOOT_OLD)
    assert code == 1 and diagnoses(ev) == ["flash_attn_cute_unavailable"]
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["boots"]], boot="0")
    assert code == 0 and ev[-1]["status"] == "ready"
    # --since starts where it says, not at the latest run: both runs are read
    code, ev = run(capsys, monkeypatch, backend, pack, files=[journals["boots"]], since=f"@{T0 - 7200}")
    assert code == 0 and diagnoses(ev) == ["flash_attn_cute_unavailable"] and ev[-1]["status"] == "ready"


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_unit_matches_other_daemons_entries_but_not_other_units(journals, capsys, monkeypatch, backend):
    code, ev = run(capsys, monkeypatch, backend, journals["pack"], files=[journals["mixed"]], target=SERVICE)
    assert diagnoses(ev) == ["flash_attn_cute_unavailable"]  # from OBJECT_SYSTEMD_UNIT; not the OOM of another unit
    assert code == 1


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_unreadable_journals_are_one_line_errors(journals, monkeypatch, backend):
    monkeypatch.setenv(journald.BACKEND_ENV, backend)
    with pytest.raises(SourceError, match="no journal files"):
        tail.main(target=UNIT, directory=journals["empty"], follow=False, only_rules=[journals["pack"]])
    with pytest.raises(SourceError, match="no such file"):
        tail.main(target=UNIT, files=[journals["empty"] + "/nope.journal"], follow=False,
                  only_rules=[journals["pack"]])
    with pytest.raises(SourceError) as e:
        tail.main(target=UNIT, files=[journals["garbage"]], follow=False, only_rules=[journals["pack"]])
    assert "garbage.journal" in str(e.value) and "\n" not in str(e.value)


@needs_journal_remote
def test_journalctl_missing_is_a_one_line_error(journals, monkeypatch, tmp_path):
    monkeypatch.setenv(journald.BACKEND_ENV, "journalctl")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SourceError, match="journalctl is not installed"):
        tail.main(target=UNIT, files=[journals["ok"]], follow=False, only_rules=[journals["pack"]])


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_neither_repeats_nor_misses_a_diagnosis(tmp_path, capsys, monkeypatch, backend):
    pack = str(rule_pack(tmp_path))
    j = tmp_path / "r.journal"
    state = str(tmp_path / "state.json")
    part1 = unit_entries(startup()[:5] + [(T0 + 40, sglang(T0 + 40, FA_IMPORT))])
    write_journal(j, part1)
    code, ev = run(capsys, monkeypatch, backend, pack, files=[str(j)], resume=state)
    assert code == 1 and diagnoses(ev) == ["flash_attn_cute_unavailable"]
    saved = json.loads(Path(state).read_text())
    assert saved["kind"] == "journal" and [k.split(":")[1] for k in saved["reported"]] == ["flash_attn_cute_unavailable"]
    assert saved["position"] and saved["start"]
    write_journal(j, [entry(m, at) for at, m in startup()[5:] + oom_tail()])  # appended by a second run
    code, ev = run(capsys, monkeypatch, backend, pack, files=[str(j)], resume=state)
    assert code == 1 and diagnoses(ev) == ["cuda_oom_cuda_graph"]  # the first one is not said again
    assert any(e["event"] == "notice" and "resumed" in e["message"] for e in ev)
    code, ev = run(capsys, monkeypatch, backend, pack, files=[str(j)], resume=state)
    assert diagnoses(ev) == []
    # a state that lost its reported list (a crash between saying and saving) says it again: nothing is missed
    saved = json.loads(Path(state).read_text())
    saved["reported"] = []
    Path(state).write_text(json.dumps(saved))
    code, ev = run(capsys, monkeypatch, backend, pack, files=[str(j)], resume=state)
    assert sorted(diagnoses(ev)) == ["cuda_oom_cuda_graph", "flash_attn_cute_unavailable"]


@needs_journal_remote
def test_text_output(journals, capsys, monkeypatch):
    backend = "systemd" if journald.choose_backend("auto")[0] == "systemd" else "journalctl"
    code, text = run(capsys, monkeypatch, backend, journals["pack"], fmt="text", files=[journals["ok"]],
                     until_ready=True, follow=True)
    text = " ".join(text.split())
    assert code == 0
    assert "✓ ready at 2.5 min" in text and "weight_loading 1.5 min" in text and "cuda_graph_capture 32 s" in text
    code, text = run(capsys, monkeypatch, backend, journals["pack"], fmt="text", files=[journals["oom"]])
    assert code == 1
    assert "CUDA out of memory" in text and "--cuda-graph-max-bs 16" in text and "unit stopped" in text


def test_the_fallback_is_chosen_when_the_binding_is_missing(monkeypatch):
    import sys

    monkeypatch.delenv(journald.BACKEND_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "systemd", None)  # `from systemd import journal` now raises ImportError
    assert journald.choose_backend() == ("journalctl", "the systemd Python binding is not installed")
    monkeypatch.setenv(journald.BACKEND_ENV, "systemd")
    with pytest.raises(SourceError, match="pip install systemd-python"):
        journald.choose_backend()


@pytest.mark.slow
@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_until_ready_on_a_journal_is_the_same_20_times(tmp_path, capsys, monkeypatch, backend):
    """A healthy start, then a failing start: the latest start decides, every time, following or not."""
    pack = str(rule_pack(tmp_path))
    j = tmp_path / "two.journal"
    later = T0 + 1000
    write_journal(j, unit_entries(startup() + ready_tail(), stopped=T0 + 500)
                  + unit_entries(startup(later) + oom_tail(later), invocation="d" * 32, started=later))
    seen = set()
    for i in range(20):
        code, ev = run(capsys, monkeypatch, backend, pack, files=[str(j)], since=f"@{T0 - 10}", until_ready=True,
                       follow=bool(i % 2), timeout="20s")
        seen.add((code, ev[-1]["reason"], ev[-1]["cause"]))
    assert seen == {(1, "failed", "cuda_oom_cuda_graph")}
