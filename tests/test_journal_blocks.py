"""A unit's journal backlog read by blocks (its lean messages searched, whole entries read only where a stage
needs them) gives the same JSONL as reading every entry, on real journal files and startups of both servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from journal_helpers import (
    BACKENDS,
    SERVICE,
    T0,
    UNIT,
    entry,
    needs_journal_remote,
    needs_systemd_python,
    write_journal,
)

from conftest import ROOT
from logsense.commands import tail
from logsense.sources import journald, stream

RECORDED = sorted((ROOT / "corpora" / "recorded").glob("*/*.log"))
# one of each kind: ready, failed at import, in weight loading, in a traceback, a vLLM engine, stopped after ready
LOGS = [p for p in RECORDED if p.parent.name in ("sglang-0.5.23", "vllm-0.32.0") and p.stem in (
    "healthy-gpt2", "weights-truncated", "flag-unknown", "architecture-unknown", "tokenizer-missing",
    "healthy-gpt2-sigterm-after-ready", "config-json-malformed")]
SERVING = [f"[2026-12-03 11:40:{n % 60:02d}] Decode batch, #running-req: {n % 7}, #token: {5000 + n}, "
           f"token usage: 0.13, gen throughput (token/s): {300 + n % 50}.00, #queue-req: 0" for n in range(400)]


def _journal(path: Path, lines: list[str], multiline: bool) -> None:
    inv = "d" * 32
    out = [entry(f"Starting {SERVICE} - server...", T0, systemd=True, invocation=inv)]
    out += [entry(text, T0 + 1 + n * 0.01, invocation=inv) for n, text in enumerate(lines)]
    if multiline:  # a traceback logged as one entry of several lines
        out.append(entry("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                         "RuntimeError: CUDA error: out of memory", T0 + 50, invocation=inv))
    write_journal(path, out)


def _tail(capsys, monkeypatch, journal: Path, blocks: bool, block: int = 37, backend: str = "systemd") -> list[dict]:
    monkeypatch.setenv(journald.BACKEND_ENV, backend)
    monkeypatch.setattr(stream, "JOURNAL_CATCH_UP", 1 if blocks else 10**9)
    monkeypatch.setattr(stream, "JOURNAL_BLOCK", block)  # many blocks, gaps that end inside one
    tail.main(target=UNIT, files=[str(journal)], follow=False, fmt="jsonl")
    return [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def test_the_logs_are_there():
    assert len(LOGS) >= 10


@needs_journal_remote
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
@pytest.mark.parametrize("shape", ["startup", "serving", "multiline"])
def test_by_blocks_and_entry_by_entry_agree(path, shape, backend, tmp_path, capsys, monkeypatch):
    lines = path.read_text(errors="replace").splitlines()
    if shape == "serving":
        lines = lines + SERVING
    journal = tmp_path / "unit.journal"
    _journal(journal, lines, multiline=shape == "multiline")
    if backend == "journalctl":
        monkeypatch.setattr(journald, "_READ_SIZE", 257)  # journalctl's output arrives cut inside entries
    by_entry = _tail(capsys, monkeypatch, journal, blocks=False, backend=backend)
    for block in (37, len(lines) // 2, len(lines)):  # the backlog's end inside a block, at one's end
        assert _tail(capsys, monkeypatch, journal, blocks=True, block=block, backend=backend) == by_entry
    assert by_entry[-1]["event"] == "end"


def test_export_entries_are_read_in_either_form_and_only_when_whole():
    """journalctl's export format: text fields, the binary form (a message of several lines), a field given twice."""
    body = (b"__CURSOR=s=1;i=2\n__REALTIME_TIMESTAMP=1767225600000000\n_PID=7\n_PID=8\n"
            b"MESSAGE\n" + (10).to_bytes(8, "little") + b"one\ntwo\xffxx\n" + b"PRIORITY=6\n\n")
    entry, end = journald._export_entry(body + b"__CURSOR=next", 0)
    assert end == len(body)
    assert entry == {"__CURSOR": "s=1;i=2", "__REALTIME_TIMESTAMP": "1767225600000000", "_PID": "7",
                     "MESSAGE": "one\ntwo\ufffdxx", "PRIORITY": "6"}
    assert all(journald._export_entry(body[:n], 0) is None for n in range(len(body)))
    assert journald._LEAN_ENTRY.match(body) is None  # the binary form is read by `_export_entry` alone


@needs_journal_remote
@needs_systemd_python
def test_the_blocks_pass_over_what_no_stage_needs(tmp_path, capsys, monkeypatch):
    """Serving lines are read for their messages alone: whole entries are read for few of them."""
    journal = tmp_path / "unit.journal"
    _journal(journal, (ROOT / "corpora/recorded/sglang-0.5.23/healthy-gpt2.log").read_text().splitlines() + SERVING,
             multiline=False)
    read: list[int] = []
    real = journald.JournalSource.entries_at

    def counted(self, first, indices):
        for e in real(self, first, indices):
            read.append(1)
            yield e

    monkeypatch.setattr(journald.JournalSource, "entries_at", counted)
    ev = _tail(capsys, monkeypatch, journal, blocks=True, block=10_000)
    assert ev[-1]["status"] == "ready"
    assert 0 < len(read) < len(SERVING) / 2
