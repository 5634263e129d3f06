"""What a server is to logsense: the one shape each server's module fills in, and the core reads."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol


class Prefix(NamedTuple):
    """What a server's own line prefix gave: the text after it and the fields it held."""

    text: str
    time: str | None
    pid: str | None
    rank: str | None  # "TP0", "DP1 TP3": the ranks the prefix names, in its order
    server: str | None  # the server's name when the prefix is surely its own, else None
    prefixed: bool  # the line starts a record (False: a record's later line that repeats its prefix)


class LineFormat(Protocol):
    """A reader of one server's line prefix, made fresh for each log (it may remember earlier lines)."""

    def read(self, text: str, time: str | None, pid: str | None) -> Prefix | None:
        """The line's prefix read, or None when the line does not start with this server's prefix."""


class VersionFact(NamedTuple):
    """A line that gives the server's release: literals it must hold (any), and a pattern whose group 1 is it."""

    literals: tuple[str, ...]
    pattern: str


@dataclass(frozen=True)
class ArgsFormat:
    """How the server logs its arguments, and which of them are facts a fix may name."""

    markers: tuple[str, ...]  # literals that start the dump in a line
    read: Callable[[str], dict[str, Any]]  # the line -> {argument: value}; {} when it holds none
    facts: Mapping[str, str] = field(default_factory=dict)  # argument -> the fact it gives, when named otherwise
    once: bool = False  # only its first readable dump counts (a later one is another process's copy)
    overrides: bool = False  # its values win over another server's in `arg_*` (its dump is the whole config)


@dataclass(frozen=True)
class Server:
    """Everything that is only true of one server: its log format, its words, its flags, its packages."""

    name: str  # "sglang": rule folders, labels, `if: {server: ...}` and facts use it
    title: str  # "SGLang": how people write it
    line_format: Callable[[], LineFormat]  # a fresh reader of its line prefix
    paste_heads: str  # regex alternatives that start a record of its log (a pasted log's indent is told by them)
    signs: tuple[str, ...]  # literals only its log holds: banners, its own error wording, its package's paths
    version: tuple[VersionFact, ...]  # lines that give its release (the fact `<name>_version`)
    args: ArgsFormat
    env_prefixes: tuple[str, ...]  # environment variables only it reads
    packages: re.Pattern[str]  # its own pip packages, as a command names them
    settings: Mapping[str, tuple[str, ...]]  # a setting every server has -> its flags for it, the advised one first
    flag_sources: tuple[str, ...]  # files (or folders, ending in /) of its package that define its flags
    flag_classes: frozenset[str] = frozenset()  # classes whose fields are all flags; empty: `A[T, Arg(...)]` fields
    dump_heads: tuple[str, ...] = ()  # how a line dumping every argument starts: never read as an error or a template
    pip_names: Mapping[str, str] = field(default_factory=dict)  # its import names whose PyPI package is named otherwise
    glued_head: str | None = None  # a record of its log that a progress bar may have no newline before
    runs_on: tuple[str, ...] = ()
    # how a command that starts it reads: a log that shows such a command, and no other server's, is its log
    # however many of another server's lines it holds (SGLang imports vLLM, which logs in its own format)
    launch: tuple[str, ...] = ()
    # a plug-in's folder of rule packs (they fire only on its logs) and of `phases.yaml`, its own markers for
    # the phase file's phases; a bundled server's packs and markers file are in rules/<name>/
    rules: Path | None = None  # servers whose packages it imports: a fix naming those is its own advice
