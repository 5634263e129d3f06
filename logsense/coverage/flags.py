"""Each server's flag vocabulary, read from its wheel or unpacked package with `ast` (never imported).

`python3 -m logsense.coverage.flags WHEEL|DIR...` rewrites logsense/data/flags/<server>.txt, which
logsense.flags reads at run time; with `--release`, <server>-<version>.txt: an older release's
vocabulary, used for the logs of that release and of those up to the next one shipped.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from logsense.coverage.sources import open_distribution
from logsense.flags import DATA_DIR, FLAG
from logsense.servers import BY_NAME, NAMES


def _sources(root: str | Path, server: str) -> list[tuple[str, str]]:
    """(name, text) of the files that define `server`'s flags, from a wheel or an unpacked tree."""
    wanted = BY_NAME[server].flag_sources

    def keep(name: str) -> bool:
        return name.endswith(".py") and any(name == w or (w.endswith("/") and name.startswith(w)) for w in wanted)

    return [(n, data.decode("utf-8", "replace")) for n, data in open_distribution(root).files() if keep(n)]


def _strings(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for elt in node.elts for s in _strings(elt)]
    return []


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _field_flags(cls: ast.ClassDef, server: str) -> set[str]:
    """Flags a class's annotated fields become: every field of a class the server names as its arguments'
    (`flag_classes`), else the fields annotated `A[T, Arg(...)]`."""
    out: set[str] = set()
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        name = stmt.target.id
        if name.startswith("_"):
            continue
        ann = stmt.annotation
        if BY_NAME[server].flag_classes:
            if cls.name in BY_NAME[server].flag_classes:
                out.add("--" + name.replace("_", "-"))
            continue
        if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"):
            continue
        arg = next((n for n in ast.walk(ann) if isinstance(n, ast.Call) and _call_name(n) == "Arg"), None)
        kw = {k.arg: k.value for k in arg.keywords} if arg else {}
        no_cli = kw.get("no_cli")
        if isinstance(no_cli, ast.Constant) and no_cli.value is True:
            continue
        out.update(_strings(kw.get("cli_name")) or ["--" + name.replace("_", "-")])
    return out


def extract(root: str | Path, server: str) -> list[str]:
    """The flags `server` defines, read from its wheel or unpacked package at `root`."""
    flags: set[str] = set()
    for name, text in _sources(root, server):
        try:
            tree = ast.parse(text, name)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _call_name(node) in ("add_argument", "Arg"):
                for s in [s for a in node.args for s in _strings(a)] + [
                    s for k in node.keywords if k.arg in ("cli_name", "aliases") for s in _strings(k.value)
                ]:
                    if FLAG.fullmatch(s):
                        flags.add(s)
            elif isinstance(node, ast.ClassDef):
                flags |= _field_flags(node, server)
    return sorted(flags)


def _server_of(path: str) -> str:
    base = Path(path).name.lower()
    for server in NAMES:
        if base.startswith(server) or (Path(path) / server).is_dir():
            return server
    raise SystemExit(f"{path}: cannot tell which server this is (want a wheel or directory of one of: {', '.join(NAMES)})")


def main(argv: list[str] | None = None) -> int:
    """Write <server>.txt for each wheel or unpacked package given."""
    ap = argparse.ArgumentParser(prog="python3 -m logsense.coverage.flags", description=__doc__.split("\n")[0])
    ap.add_argument("sources", nargs="+", help="a server's wheel, or a directory holding its package")
    ap.add_argument("-o", "--out", default=str(DATA_DIR), help="output directory (default: the shipped one)")
    ap.add_argument("--release", action="store_true",
                    help="write <server>-<version>.txt, an older release's vocabulary, instead of <server>.txt")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for src in a.sources:
        server = _server_of(src)
        flags = extract(src, server)
        if not flags:
            print(f"{src}: no flags found", file=sys.stderr)
            return 1
        name = f"{server}.txt"
        if a.release:
            version = open_distribution(src).version
            if not version:
                print(f"{src}: cannot tell its version", file=sys.stderr)
                return 1
            name = f"{server}-{version}.txt"
        (out / name).write_text(
            f"# {server} flags, from {Path(src).name} (python3 -m logsense.coverage.flags)\n" + "\n".join(flags) + "\n",
            encoding="utf-8",
        )
        print(f"{out / name}: {len(flags)} flags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
