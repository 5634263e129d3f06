"""The root-cause ids (logsense/taxonomy.yaml): the only values a diagnosis's `cause` takes."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

TAXONOMY_PATH = Path(__file__).with_name("taxonomy.yaml")


@dataclass(frozen=True)
class Cause:
    id: str
    group: str
    title: str
    fix: tuple[str, ...]


@lru_cache(maxsize=1)
def causes() -> dict[str, Cause]:
    """All cause ids with their group, title and usual fixes."""
    data = yaml.safe_load(TAXONOMY_PATH.read_text(encoding="utf-8"))
    out: dict[str, Cause] = {}
    for group, entries in data.items():
        for cid, entry in entries.items():
            out[cid] = Cause(cid, group, entry.get("title", cid), tuple(entry.get("fix") or ()))
    return out


def title(cause: str) -> str:
    c = causes().get(cause)
    return c.title if c else cause
