"""Each server's command-line flags, read from its own source: a fix never names a flag the server lacks.

The vocabularies live in logsense/data/flags/<server>.txt, one flag a line. They are
regenerated from a wheel (or an unpacked package) with

    python3 -m logsense.coverage.flags sglang-0.5.23-...whl vllm-0.34.0-...whl -o logsense/data/flags/

which parses the argument definitions with `ast` (nothing is imported or run). Older releases'
vocabularies (<server>-<version>.txt, written with `--release`) keep a fix for a log of an
older release from naming a flag that release did not have yet.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from logsense.servers import BY_NAME, others

DATA_DIR = Path(__file__).resolve().parent / "data" / "flags"
FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")

def release_key(version: str | None) -> tuple[int, ...] | None:
    """(0, 8, 5) for "0.8.5", "v0.8.5.post1" or "0.8.5rc1+cu124"; None when it names no release."""
    m = re.match(r"v?(\d+(?:\.\d+)*)", version or "")
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _flags_in(name: str) -> set[str]:
    try:
        text = (DATA_DIR / name).read_text(encoding="utf-8")
    except OSError:
        return set()
    return {line.split()[0] for line in text.splitlines() if line.startswith("--")}


@cache
def _releases(server: str) -> tuple[tuple[tuple[int, ...], str], ...]:
    """(release, file name) of the older releases' vocabularies shipped for `server`, oldest first."""
    found = []
    for path in DATA_DIR.glob(f"{server}-*.txt"):
        key = release_key(path.stem[len(server) + 1:])
        if key is not None:
            found.append((key, path.name))
    return tuple(sorted(found))


@cache
def vocabulary(server: str, version: str | None = None) -> frozenset[str]:
    """The flags `server` accepts: its current release's (<server>.txt, generated) and older
    releases' that logs still show (<server>.older.txt, kept by hand); empty when none ships.

    For a log of a `version` older than <server>.txt's release, the flags of the newest older
    release shipped (<server>-<release>.txt) not after it, of the oldest one when it predates them
    all: a flag added later is not advised to it (nor, between two shipped releases, one added
    in between).
    """
    key = release_key(version)
    releases = _releases(server)
    current = _current_release(server)
    if key is None or not releases or (current is not None and key >= current):
        return frozenset(_flags_in(f"{server}.txt") | _flags_in(f"{server}.older.txt"))
    older = [name for k, name in releases if k <= key]
    return frozenset(_flags_in(older[-1] if older else releases[0][1]))


@cache
def _current_release(server: str) -> tuple[int, ...] | None:
    """The release <server>.txt was generated from, as its first line names the wheel."""
    try:
        with (DATA_DIR / f"{server}.txt").open(encoding="utf-8") as f:
            head = f.readline()
    except OSError:
        return None
    m = re.search(rf"\b{server}-(\S+?)-", head)
    return release_key(m.group(1)) if m else None


def has_flag(server: str, flag: str, version: str | None = None) -> bool:
    """True when `server` (of release `version`, when known) accepts `flag`: as written, as
    argparse's `--no-X` of a boolean `--X`, or as the unambiguous prefix argparse expands (`--tp`
    for SGLang's `--tp-size`)."""
    vocab = vocabulary(server, version)
    if not vocab or flag in vocab:
        return True
    if flag.startswith("--no-") and "--" + flag[5:] in vocab:
        return True
    return sum(1 for f in vocab if f.startswith(flag)) == 1


def for_server(value: str, server: str | None, version: str | None = None) -> str | None:
    """A fix value whose flags all exist on `server` (of release `version`, when known):
    rewritten to its equivalents, or None.

    Values without flags, and any value when the server is unknown, pass unchanged.
    """
    own = BY_NAME.get(server or "")
    if own is None or "--" not in value:
        return value
    out = value
    for m in reversed(list(FLAG.finditer(value))):
        flag = m.group(0)
        if m.start() and not value[m.start() - 1].isspace() and value[m.start() - 1] not in "`'\"(":
            continue  # "--" inside a word or a path, not a flag
        if has_flag(own.name, flag, version):
            continue
        # the same setting under this server's name (each server's `settings`); a setting it lacks: no fix
        other = next((own.settings[k][0] for o in others(own.name) for k, fs in o.settings.items()
                      if flag in fs and k in own.settings), None)
        if other is None or not has_flag(own.name, other, version):
            return None
        out = out[: m.start()] + other + out[m.end() :]
    return out
