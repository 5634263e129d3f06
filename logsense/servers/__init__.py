"""The servers logsense knows: one module each, and the one registry the core asks instead of naming a server."""

from __future__ import annotations

from pathlib import Path

from logsense.servers import sglang, vllm
from logsense.servers.base import ArgsFormat, LineFormat, Prefix, Server, VersionFact

SERVERS: tuple[Server, ...] = (sglang.SERVER, vllm.SERVER)
NAMES: tuple[str, ...] = tuple(s.name for s in SERVERS)
BY_NAME: dict[str, Server] = {s.name: s for s in SERVERS}

__all__ = ["BY_NAME", "NAMES", "SERVERS", "ArgsFormat", "LineFormat", "Prefix", "Server", "VersionFact", "others",
           "pack_scope"]


def others(name: str | None) -> tuple[Server, ...]:
    """Every server but `name`."""
    return tuple(s for s in SERVERS if s.name != name)


def pack_scope(pack: Path) -> str | None:
    """The server a rule pack is about, from the folder it lives in (`rules/<server>/`); None: every server."""
    return pack.parent.name if pack.parent.name in BY_NAME else None
