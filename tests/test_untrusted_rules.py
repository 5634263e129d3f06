"""Rules are untrusted input: safe YAML only, a catastrophic pattern is stopped and reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from phase_helpers import copy_phase_files

from conftest import run_cli

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
    copy_phase_files(d)
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
    p = run_cli("rules", "list", "--only-rules", str(d), text=True)
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
    p = run_cli("analyze", "--no-rules", str(log), env={"LOGSENSE_MODEL": str(model)}, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "classifier model" in p.stderr
    assert not marker.exists()


def _logsense(*args: str):
    return run_cli(*args, text=True)


def _alias_bomb(width: int = 10, depth: int = 8) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, depth + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\nrules: []\n"


@pytest.mark.parametrize("text", [_alias_bomb(), "rules: &r [*r]\n", "rules: !custom []\n",
                                  "rules:\n  - id: x\n    title: !!python/name:os.system\n"],
                         ids=["alias-bomb", "recursive-alias", "custom-tag", "python-scalar-tag"])
def test_hostile_yaml_in_a_pack_is_a_load_error(tmp_path, text, monkeypatch):
    monkeypatch.setattr("logsense.rules.loader.MAX_NODES", 5_000)  # the same refusal, 40x sooner
    d = tmp_path / "pack"
    d.mkdir()
    (d / "x.yaml").write_text(text)
    p = _logsense("rules", "list", "--only-rules", str(d))
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    assert "x.yaml:1:" in p.stderr or "x.yaml:3:" in p.stderr


def test_the_safe_yaml_loader_refuses_aliases_for_every_data_file(tmp_path, monkeypatch):
    monkeypatch.setattr("logsense.rules.loader.MAX_NODES", 5_000)
    from logsense.errors import RuleError
    from logsense.rules.loader import load_yaml

    f = tmp_path / "x.label.yaml"
    f.write_text(_alias_bomb())
    with pytest.raises(RuleError, match="too big"):
        load_yaml(f)
    f.write_text("cause: cuda-oom\nfix: &f [a, b]\nagain: *f\n")  # a plain alias is fine
    assert load_yaml(f) == {"cause": "cuda-oom", "fix": ["a", "b"], "again": ["a", "b"]}


def test_a_catastrophic_phase_marker_times_out_and_is_reported(tmp_path):
    d = tmp_path / "pack"
    d.mkdir()
    copy_phase_files(d)
    phases = (d / "phases.yaml").read_text()
    assert "markers: []" in phases
    (d / "phases.yaml").write_text(phases.replace("markers: []", "markers: ['(a+)+$']", 1))
    (d / "ok.yaml").write_text(PACK.replace("boom (a|aa)+$", "boom b"))
    log = tmp_path / "x.log"
    log.write_text("a" * 5000 + "!\n" + "[2025-01-01 00:00:00] The server is fired up and ready to roll!\n")
    p = subprocess.run([sys.executable, "-m", "logsense", "analyze", "-f", "json", "--only-rules", str(d), str(log)],
                       capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    problems = json.loads(p.stdout)["rule_problems"]
    assert problems[0]["rule"] == "phase import" and "disabled" in problems[0]["reason"]


@pytest.mark.parametrize("value", ["lower {num} to {{num}}", "set --x {nmu}"], ids=["double-brace", "typo"])
def test_a_fix_template_naming_no_capture_is_a_load_error(tmp_path, value):
    d = tmp_path / "pack"
    d.mkdir()
    (d / "x.yaml").write_text(f"""\
rules:
  - id: numbered
    cause: unknown
    role: symptom
    match:
      any: ['boom (?P<num>\\d+)']
    fixes:
      - kind: flag
        value: "{value}"
    examples:
      match: ['boom 7', 'boom 8']
      no_match: ['boom', 'nothing']
""")
    p = _logsense("rules", "list", "--only-rules", str(d))
    assert p.returncode == 2, p.stderr
    assert "x.yaml:9:" in p.stderr and "fixes[0].value" in p.stderr
    p = _logsense("check", "--rules", str(d))
    assert p.returncode != 0 and "x.yaml:9:" in p.stdout + p.stderr


def test_fact_names_cover_what_facts_give():
    from logsense.facts import FACT_NAMES, Facts

    assert {"mem_fraction_static_lower", "tp_size", "server", "cuda_version"} <= FACT_NAMES
    assert set(Facts().snapshot()) <= FACT_NAMES


def test_a_pattern_slow_on_every_line_is_stopped_by_its_budget(tmp_path, pack):
    """Each line stays under the per-line limit, but the rule's time on the log is bounded too."""
    log = tmp_path / "x.log"
    log.write_text("".join(f"boom {'a' * 28}b {i}\n" for i in range(1000))
                   + "[2025-01-01 00:00:00] The server is fired up and ready to roll!\n")
    p = subprocess.run([sys.executable, "-m", "logsense", "analyze", "-f", "json", "--only-rules", str(pack), str(log)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "ready"
    assert [q["rule"] for q in out["rule_problems"]] == ["backtracker"]
    assert "in all on this log" in out["rule_problems"][0]["reason"]


def test_a_disabled_rule_is_warned_on_stderr_not_in_the_report(tmp_path, pack):
    log = tmp_path / "x.log"
    log.write_text(("boom " + "a" * 60 + "b\n") * 3 + "[2025-01-01 00:00:00] The server is fired up and ready to roll!\n")
    p = subprocess.run([sys.executable, "-m", "logsense", "analyze", "--only-rules", str(pack), str(log)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "backtracker" not in p.stdout
    assert "warning: rule backtracker" in p.stderr and "disabled" in p.stderr
