"""The servers logsense knows, by name: the one list the core asks instead of naming a server itself."""

from __future__ import annotations

from pathlib import Path

NAMES: tuple[str, ...] = ("sglang", "vllm")


def pack_scope(pack: Path) -> str | None:
    """The server a rule pack is about, from the folder it lives in (`rules/<server>/`); None: every server."""
    return pack.parent.name if pack.parent.name in NAMES else None
