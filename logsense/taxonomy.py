"""The root-cause ids (logsense/taxonomy.yaml): the only values a diagnosis's `cause` takes."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from logsense.model import Value, _set

TAXONOMY_PATH = Path(__file__).with_name("taxonomy.yaml")
# The causes that explain a failure whose fatal sign is memory running out (fatal kind out_of_memory):
# no other cause is offered for it, by the learned classifier or as the likely part of the code.
OUT_OF_MEMORY = frozenset({
    "cuda_oom_weight_loading", "cuda_oom_cuda_graph", "cuda_oom_runtime", "cuda_oom_kv_cache_alloc",
    "kv_cache_insufficient", "kv_cache_pressure", "gpu_memory_not_free", "gpu_memory_unbalanced", "host_memory_oom",
})
OUT_OF_MEMORY_KIND = "out_of_memory"


class Cause(Value):
    """One cause of the taxonomy: its id, group, title, usual fixes, and where its exception must be raised."""

    __slots__ = ("id", "group", "title", "fix", "raised_in")
    id: str
    group: str
    title: str
    fix: tuple[str, ...]
    raised_in: str | None  # a pattern the innermost traceback frame's path must match ('/vllm/'), or None

    def __init__(self, id: str, group: str, title: str, fix: tuple[str, ...], raised_in: str | None = None) -> None:
        _set(self, "id", id)
        _set(self, "group", group)
        _set(self, "title", title)
        _set(self, "fix", fix)
        _set(self, "raised_in", raised_in)


@lru_cache(maxsize=1)
def causes() -> dict[str, Cause]:
    """All cause ids with their group, title and usual fixes."""
    from logsense import cache

    raw = TAXONOMY_PATH.read_bytes()
    name = cache.key("taxonomy", raw)
    kept = cache.load(name)
    if isinstance(kept, dict) and all(isinstance(v, tuple) and len(v) == 4 for v in kept.values()):
        return {cid: Cause(cid, *v) for cid, v in kept.items()}
    import yaml

    data = yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out: dict[str, Cause] = {}
    for group, entries in data.items():
        for cid, entry in entries.items():
            out[cid] = Cause(cid, group, entry.get("title", cid), tuple(entry.get("fix") or ()), entry.get("raised_in"))
    cache.store(name, {c.id: (c.group, c.title, c.fix, c.raised_in) for c in out.values()})
    return out


def raised_in(cause: str) -> str | None:
    """The pattern the innermost frame of a traceback must match for `cause` to be named, or None."""
    c = causes().get(cause)
    return c.raised_in if c else None


def title(cause: str) -> str:
    c = causes().get(cause)
    return c.title if c else cause
