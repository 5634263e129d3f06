"""A malformed rule pack is reported like a compiler error: file:line: rule: field: reason, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from logsense.errors import RuleErrors
from logsense.rules import load_rules

HERE = Path(__file__).parent / "bad-rules"


@pytest.mark.parametrize("case", sorted(HERE.glob("*.yaml")), ids=lambda p: p.stem)
def test_bad_rule_message(case, tmp_path, monkeypatch):
    monkeypatch.chdir(HERE)
    expected = case.with_suffix(".err").read_text().strip()
    with pytest.raises(RuleErrors) as e:
        load_rules(only=[case.name])
    assert str(e.value).strip() == expected


def test_cli_exit_code_and_no_traceback():
    case = HERE / "bad-regex.yaml"
    p = subprocess.run([sys.executable, "-m", "logsense", "rules", "test", "--only-rules", str(case)],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "bad-regex.yaml:" in p.stderr and "match.any[1]" in p.stderr
