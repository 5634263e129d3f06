"""The root-cause ids (logsense/taxonomy.yaml): the only values a diagnosis's `cause` takes."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from logsense.model import Value, _set

TAXONOMY_PATH = Path(__file__).with_name("taxonomy.yaml")


class Cause(Value):
    """One cause of the taxonomy: its id, group, title and usual fixes."""

    __slots__ = ("id", "group", "title", "fix")
    id: str
    group: str
    title: str
    fix: tuple[str, ...]

    def __init__(self, id: str, group: str, title: str, fix: tuple[str, ...]) -> None:
        _set(self, "id", id)
        _set(self, "group", group)
        _set(self, "title", title)
        _set(self, "fix", fix)


@lru_cache(maxsize=1)
def causes() -> dict[str, Cause]:
    """All cause ids with their group, title and usual fixes."""
    from logsense import cache

    raw = TAXONOMY_PATH.read_bytes()
    name = cache.key("taxonomy", raw)
    kept = cache.load(name)
    if isinstance(kept, dict) and all(isinstance(v, tuple) and len(v) == 3 for v in kept.values()):
        return {cid: Cause(cid, group, title, fix) for cid, (group, title, fix) in kept.items()}
    import yaml

    data = yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out: dict[str, Cause] = {}
    for group, entries in data.items():
        for cid, entry in entries.items():
            out[cid] = Cause(cid, group, entry.get("title", cid), tuple(entry.get("fix") or ()))
    cache.store(name, {c.id: (c.group, c.title, c.fix) for c in out.values()})
    return out


def title(cause: str) -> str:
    c = causes().get(cause)
    return c.title if c else cause
