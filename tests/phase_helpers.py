"""The bundled phase file and each server's markers file, copied into a test's own rule folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from logsense.rules import bundled_rules_dir
from logsense.servers import NAMES


def copy_phase_files(d: Path) -> None:
    """`d/phases.yaml` and `d/<server>/phases.yaml`, as the bundled rules hold them."""
    src = bundled_rules_dir()
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "phases.yaml", d / "phases.yaml")
    for name in NAMES:
        if (src / name / "phases.yaml").is_file():
            (d / name).mkdir(exist_ok=True)
            shutil.copy(src / name / "phases.yaml", d / name / "phases.yaml")


def phase_files(d: Path) -> list[Path]:
    """The phase file of `d` and its servers' markers files."""
    return [d / "phases.yaml", *sorted(d.glob("*/phases.yaml"))]
