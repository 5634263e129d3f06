"""ruff over the package and tests: style is part of the test command."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import ROOT


def test_ruff_clean():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    p = subprocess.run([ruff, "check", "logsense", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
