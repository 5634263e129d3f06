"""Rules are untrusted input: safe YAML only, a catastrophic pattern is stopped and reported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PACK = """\
rules:
  - id: backtracker
    cause: unknown
    role: symptom
    match:
      any: ['boom (a|aa)+$']
    examples:
      match: ['boom aaa']
      no_match: ['boom b', 'nothing']
"""


@pytest.fixture
def pack(tmp_path) -> Path:
    d = tmp_path / "pack"
    d.mkdir()
    shutil.copy(ROOT / "rules" / "phases.yaml", d / "phases.yaml")
    (d / "bad.yaml").write_text(PACK)
    return d


def test_catastrophic_pattern_times_out_and_is_disabled(tmp_path, pack):
    log = tmp_path / "x.log"
    log.write_text(("boom " + "a" * 60 + "b\n") * 3 + "[2025-01-01 00:00:00] The server is fired up and ready to roll!\n")
    p = subprocess.run([sys.executable, "-m", "logsense", "analyze", "-f", "json", "--only-rules", str(pack), str(log)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "ready"
    assert out["rule_problems"] and out["rule_problems"][0]["rule"] == "backtracker"
    assert "disabled" in out["rule_problems"][0]["reason"]


def test_yaml_tags_are_refused(tmp_path):
    d = tmp_path / "evil"
    d.mkdir()
    (d / "x.yaml").write_text("rules: !!python/object/apply:os.system ['echo pwned > %s']\n" % (tmp_path / "pwned"))
    p = subprocess.run([sys.executable, "-m", "logsense", "rules", "list", "--only-rules", str(d)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert not (tmp_path / "pwned").exists()


class _Payload:
    """A pickle that runs a command when unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_pickle_model_is_refused_and_never_runs(tmp_path):
    import pickle

    marker = tmp_path / "ran"
    model = tmp_path / "classifier.json"
    model.write_bytes(pickle.dumps(_Payload(marker)))
    log = tmp_path / "x.log"
    log.write_text("Traceback (most recent call last):\n  File \"x\", line 1\nSomeNewError: never seen\n")
    env = {**__import__("os").environ, "LOGSENSE_MODEL": str(model)}
    p = subprocess.run([sys.executable, "-m", "logsense", "analyze", "--no-rules", str(log)],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "classifier model" in p.stderr
    assert not marker.exists()
