"""The same startup as journalctl short, short-iso, cat and json gives the same diagnosis."""

from __future__ import annotations

from collections import defaultdict

import pytest

from conftest import CORPORA
from logsense.commands.analyze import analyze_path


def _groups():
    groups: dict[str, list] = defaultdict(list)
    for p in sorted((CORPORA / "formats").glob("*.log")):
        stem, _, _fmt = p.name[: -len(".log")].rpartition(".")
        groups[stem].append(p)
    return [pytest.param(v, id=k) for k, v in groups.items() if len(v) > 1] or [pytest.param([], id="none")]


def _verdict(rules, path):
    report, _ = analyze_path(str(path), rules)
    root = report.root
    if root is None:
        return ("healthy", None, (), report.status.value)
    # Fixes may differ in detail: `-o json` shows a message over 4096 bytes (the server_args dump) as
    # null, so the facts from it are missing there; the principal fix must not.
    return (root.cause, root.rule, root.fixes[0].value if root.fixes else None, report.status.value, root.phase)


@pytest.mark.parametrize("paths", _groups())
def test_same_diagnosis_in_every_format(rules, paths):
    if not paths:
        pytest.skip("corpora/formats is empty")
    verdicts = {p.name: _verdict(rules, p) for p in paths}
    assert len(set(verdicts.values())) == 1, verdicts
