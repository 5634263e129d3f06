"""The servers logsense knows: one module each, and the one registry the core asks instead of naming a server.

A server outside this folder is a plug-in: a module that defines `SERVER` (a `Server`), named in the
environment variable LOGSENSE_SERVERS (comma-separated module names, importable from sys.path). Its
rule packs (and markers of its own for the phase file's phases) sit in its `rules` folder.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from logsense.servers import sglang, vllm
from logsense.servers.base import ArgsFormat, LineFormat, Prefix, Server, VersionFact

PLUGINS_ENV = "LOGSENSE_SERVERS"


def _plugins(names: str) -> tuple[Server, ...]:
    """The servers the modules named in `names` define; exits with a message when one cannot be had."""
    out = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        try:
            server = importlib.import_module(name).SERVER
        except Exception as e:  # noqa: BLE001 - any failure of a plug-in's import is the plug-in's, said as such
            raise SystemExit(f"logsense: {PLUGINS_ENV}: cannot load server module {name!r}: {type(e).__name__}: {e}") from None
        if not isinstance(server, Server):
            raise SystemExit(f"logsense: {PLUGINS_ENV}: {name}.SERVER is not a logsense.servers.Server")
        out.append(server)
    return tuple(out)


SERVERS: tuple[Server, ...] = (sglang.SERVER, vllm.SERVER) + _plugins(os.environ.get(PLUGINS_ENV, ""))
NAMES: tuple[str, ...] = tuple(s.name for s in SERVERS)
BY_NAME: dict[str, Server] = {s.name: s for s in SERVERS}
if len(BY_NAME) != len(SERVERS):
    raise SystemExit(f"logsense: {PLUGINS_ENV}: two servers are named alike: {', '.join(NAMES)}")

__all__ = ["BY_NAME", "NAMES", "PLUGINS_ENV", "SERVERS", "ArgsFormat", "LineFormat", "Prefix", "Server", "VersionFact",
           "others", "pack_scope", "plugin_rules"]


def others(name: str | None) -> tuple[Server, ...]:
    """Every server but `name`."""
    return tuple(s for s in SERVERS if s.name != name)


def plugin_rules() -> dict[Path, str]:
    """The rule folders of the plug-in servers (resolved), each with its server's name."""
    return {s.rules.resolve(): s.name for s in SERVERS if s.rules is not None}


def pack_scope(pack: Path) -> str | None:
    """The server a rule pack is about: the plug-in whose rules folder holds it, or the folder it lives in
    (`rules/<server>/`); None: every server."""
    for folder, name in plugin_rules().items():
        if folder in pack.resolve().parents:
            return name
    return pack.parent.name if pack.parent.name in BY_NAME else None
