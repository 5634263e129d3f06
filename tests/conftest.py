"""Shared fixtures: the bundled rules, loaded once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "corpora"


@pytest.fixture(scope="session")
def rules():
    from logsense import load_rules

    return load_rules()
