"""Every labelled incident in corpora/ is a test: diagnosed as its label; healthy ones raise nothing."""

from __future__ import annotations

import pytest
import yaml

from conftest import CORPORA
from logsense.commands.analyze import analyze_path


def _cases():
    labels = sorted(CORPORA.rglob("*.label.yaml"))
    out = []
    for label in labels:
        stem = label.name[: -len(".label.yaml")]
        logs = [p for p in (label.with_name(stem + ".log"), label.with_name(stem + ".log.gz"), label.with_name(stem))
                if p.is_file() and p != label]
        out.append(pytest.param(label, logs[0] if logs else None, id=str(label.relative_to(CORPORA))[: -len(".label.yaml")]))
    return out


@pytest.mark.parametrize(("label_path", "log_path"), _cases())
def test_incident(rules, label_path, log_path):
    assert log_path is not None, f"{label_path}: no log beside the label"
    label = yaml.safe_load(label_path.read_text())
    report, _ = analyze_path(str(log_path), rules)
    roots = [d for d in report.diagnoses if d.root]
    if label.get("outcome") == "incomplete":
        assert not roots, f"the excerpt ends before its failure shows, yet diagnosed {roots[0].cause}"
        return
    if label["cause"] == "healthy":
        assert not roots, f"false alarm on a healthy startup: {roots[0].cause} ({roots[0].rule})"
        return
    got = roots[0].cause if roots else "healthy"
    assert got == label["cause"], f"diagnosed {got}, labelled {label['cause']}"
    tokens = label.get("fix_any") or []
    if tokens:
        values = " ".join(f.value for f in roots[0].fixes)
        assert any(t in values for t in tokens), f"no fix contains any of {tokens}: {values!r}"
    if label.get("phase") and label.get("check_phase", False):
        assert roots[0].phase == label["phase"]
