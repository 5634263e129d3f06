"""`logsense history`: the bring-up's three attempts, read from a real journal file and from a file."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path

import pytest
from journal_helpers import BACKENDS, SERVICE, UNIT, entry, needs_journal_remote, write_journal

from conftest import ROOT
from logsense.commands import history
from logsense.sources import journald

_SHORT = re.compile(r"^(\w{3} +\d+ \d\d:\d\d:\d\d) (\S+) ([^\[:]+)(?:\[(\d+)\])?: (.*)$")
ATTEMPTS = [
    ("mission/python-h-missing.log", "1" * 32, None),
    ("mission/flash-attn-cute-warmup.log", "2" * 32, None),
    # the operator added --skip-server-warmup: the healthy twin, with that flag in its server_args
    # (and the vision tower's backend left as in the attempts before, so that one flag changed)
    ("healthy/k26-ddtree-ready.log", "3" * 32, [("skip_server_warmup=False", "skip_server_warmup=True"),
                                                ("mm_attention_backend='triton_attn'", "mm_attention_backend=None")]),
]


def _lines(rel: str, changes) -> list[str]:
    text = (ROOT / "corpora" / rel).read_text(encoding="utf-8", errors="replace")
    for old, new in changes or ():
        assert old in text
        text = text.replace(old, new)
    return text.splitlines()


def bring_up_entries(systemd_ids: bool = True) -> list[bytes]:
    """The three attempts as journald held them: systemd's own entries and the service's, in 2026 (systemd's
    without the invocation id when not `systemd_ids`, as some versions write them)."""
    out = []
    for rel, inv, change in ATTEMPTS:
        for line in _lines(rel, change):
            m = _SHORT.match(line)
            if not m:
                continue
            at = time.mktime(time.strptime("2026 " + m[1], "%Y %b %d %H:%M:%S")) - time.timezone
            ident, msg = m[3], m[5]
            if ident == "systemd":
                out.append(entry(msg.split(": ", 1)[-1] if msg.startswith(SERVICE + ":") else msg, at, systemd=True,
                                 invocation=inv if systemd_ids else None))
            else:
                out.append(entry(msg, at, pid=int(m[4] or 4242), invocation=inv))
    return out


def check_rows(rows: list[dict]) -> None:
    assert [r["outcome"] for r in rows] == ["failed", "failed", "ready"]
    assert rows[0]["cause"] == "python_headers_missing"
    assert rows[1]["cause"] == "flash_attn_cute_unavailable" and rows[1]["phase"] == "warmup"
    assert rows[2]["cause"] is None
    assert rows[2]["changed"] == ["--skip-server-warmup"]
    assert "--skip-server-warmup" not in rows[1]["changed"]
    assert all(r["seconds"] and r["seconds"] > 0 for r in rows)


@pytest.fixture(scope="module")
def bring_up(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("history")
    j = d / "bring-up.journal"
    write_journal(j, bring_up_entries())
    return j


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_three_attempts_from_a_real_journal(bring_up, capsys, monkeypatch, backend):
    monkeypatch.setenv(journald.BACKEND_ENV, backend)
    code = history.main(target=UNIT, files=[str(bring_up)], fmt="json")
    rows = json.loads(capsys.readouterr().out)
    check_rows(rows)
    assert code == 0  # the latest attempt became ready
    code = history.main(target=UNIT, files=[str(bring_up)], fmt="csv")
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["outcome"] for r in table] == ["failed", "failed", "ready"] and table[2]["changed"] == "--skip-server-warmup"
    history.main(target=UNIT, files=[str(bring_up)])
    text = capsys.readouterr().out
    assert text.count("failed") == 2 and "ready" in text and "--skip-server-warmup" in text


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
def test_systemd_entries_without_the_run_id_count_no_extra_attempt(tmp_path, capsys, monkeypatch, backend):
    """systemd's "Starting"/"Started" without an invocation id, the service's own lines with one: three
    attempts, not an empty one at each start (5 were counted)."""
    j = tmp_path / "no-ids.journal"
    write_journal(j, bring_up_entries(systemd_ids=False))
    monkeypatch.setenv(journald.BACKEND_ENV, backend)
    history.main(target=UNIT, files=[str(j)], fmt="json")
    check_rows(json.loads(capsys.readouterr().out))


def test_three_attempts_from_a_file(tmp_path, capsys):
    p = tmp_path / "sglang.log"
    p.write_text("".join(line + "\n" for rel, _, change in ATTEMPTS for line in _lines(rel, change)))
    code = history.main(target=str(p), fmt="json")
    check_rows(json.loads(capsys.readouterr().out))
    assert code == 0


def test_changed_flags_read_as_flags():
    assert history.changed({"a_b": False, "tp_size": 4}, {"a_b": True, "tp_size": 8}) == ["--a-b", "--tp-size 8"]
    assert history.changed({"a_b": True}, {"a_b": False}) == ["no --a-b"]


@needs_journal_remote
def test_the_command_line(bring_up):
    import subprocess
    import sys

    # -f is --format, as in analyze, diff, stats and eval (tail's -f is --follow, as journalctl's)
    p = subprocess.run([sys.executable, "-m", "logsense", "history", "-u", UNIT, "--file", str(bring_up), "-f",
                        "json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    check_rows(json.loads(p.stdout))
    p = subprocess.run([sys.executable, "-m", "logsense", "history", "-h"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert p.returncode == 0 and "--format" in p.stdout


def test_vllm_restarts_are_attempts_of_their_own(tmp_path, capsys):
    """Two real vLLM starts in one file (ready, then a model dir without config.json): two rows."""
    recorded = ROOT / "corpora" / "recorded" / "vllm-0.32.0"
    log = tmp_path / "vllm.log"
    log.write_text((recorded / "healthy-gpt2.log").read_text() + (recorded / "config-json-missing.log").read_text())
    assert history.main(str(log), fmt="json") == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["outcome"], r["cause"]) for r in rows] == [("ready", None), ("failed", "model_files_invalid")]
    assert rows[1]["phase"] == "server_args"
