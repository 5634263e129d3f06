"""Each server's command-line flags, read from its own source: a fix never names a flag the server lacks.

The vocabularies live in logsense/data/flags/<server>.txt, one flag a line. They are
regenerated from a wheel (or an unpacked package) with

    python3 -m logsense.flags sglang-0.5.23-...whl vllm-0.34.0-...whl -o logsense/data/flags/

which parses the argument definitions with `ast` (nothing is imported or run).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import zipfile
from functools import cache
from pathlib import Path

SERVERS = ("sglang", "vllm")
_DATA = Path(__file__).resolve().parent / "data" / "flags"
_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")

# The same setting under each server's name. A fix written with one server's flag is rewritten
# to the other's; a flag with no counterpart is dropped for the server that lacks it.
EQUIVALENT: tuple[dict[str, str], ...] = (
    {"sglang": "--mem-fraction-static", "vllm": "--gpu-memory-utilization"},
    {"sglang": "--context-length", "vllm": "--max-model-len"},
    {"sglang": "--tp-size", "vllm": "--tensor-parallel-size"},
    {"sglang": "--tp", "vllm": "--tensor-parallel-size"},
    {"sglang": "--pp-size", "vllm": "--pipeline-parallel-size"},
    {"sglang": "--dp-size", "vllm": "--data-parallel-size"},
    {"sglang": "--max-running-requests", "vllm": "--max-num-seqs"},
    {"sglang": "--disable-cuda-graph", "vllm": "--enforce-eager"},
    {"sglang": "--cuda-graph-max-bs", "vllm": "--max-cudagraph-capture-size"},
    {"sglang": "--chunked-prefill-size", "vllm": "--max-num-batched-tokens"},
    {"sglang": "--attention-backend", "vllm": "--attention-backend"},
    {"sglang": "--kv-cache-dtype", "vllm": "--kv-cache-dtype"},
    {"sglang": "--trust-remote-code", "vllm": "--trust-remote-code"},
    {"sglang": "--quantization", "vllm": "--quantization"},
    {"sglang": "--port", "vllm": "--port"},
)

# Where each server defines its flags, inside its package.
_SOURCES = {
    "sglang": ("sglang/srt/server_args.py", "sglang/srt/arg_groups/"),
    "vllm": ("vllm/engine/arg_utils.py", "vllm/entrypoints/"),
}
# vLLM registers its dataclass fields through helpers; these classes' fields are its flags.
_VLLM_ARG_CLASSES = {"EngineArgs", "AsyncEngineArgs", "BaseFrontendArgs", "FrontendArgs"}


@cache
def vocabulary(server: str) -> frozenset[str]:
    """The flags `server` accepts: its current release's (<server>.txt, generated) and older
    releases' that logs still show (<server>.older.txt, kept by hand); empty when none ships."""
    flags: set[str] = set()
    for name in (f"{server}.txt", f"{server}.older.txt"):
        try:
            text = (_DATA / name).read_text(encoding="utf-8")
        except OSError:
            continue
        flags.update(line.split()[0] for line in text.splitlines() if line.startswith("--"))
    return frozenset(flags)


def has_flag(server: str, flag: str) -> bool:
    """True when `server` accepts `flag`: as written, as argparse's `--no-X` of a boolean `--X`,
    or as the unambiguous prefix argparse expands (`--tp` for SGLang's `--tp-size`)."""
    vocab = vocabulary(server)
    if not vocab or flag in vocab:
        return True
    if flag.startswith("--no-") and "--" + flag[5:] in vocab:
        return True
    return sum(1 for f in vocab if f.startswith(flag)) == 1


def for_server(value: str, server: str | None) -> str | None:
    """A fix value whose flags all exist on `server`: rewritten to its equivalents, or None.

    Values without flags, and any value when the server is unknown, pass unchanged.
    """
    if server not in SERVERS or "--" not in value:
        return value
    out = value
    for m in reversed(list(_FLAG.finditer(value))):
        flag = m.group(0)
        if m.start() and not value[m.start() - 1].isspace() and value[m.start() - 1] not in "`'\"(":
            continue  # "--" inside a word or a path, not a flag
        if has_flag(server, flag):
            continue
        other = next((e[server] for e in EQUIVALENT for s, f in e.items() if s != server and f == flag), None)
        if other is None or not has_flag(server, other):
            return None
        out = out[: m.start()] + other + out[m.end() :]
    return out


def _sources(root: str | Path, server: str) -> list[tuple[str, str]]:
    """(name, text) of the files that define `server`'s flags, from a wheel or an unpacked tree."""
    wanted = _SOURCES[server]

    def keep(name: str) -> bool:
        return name.endswith(".py") and any(name == w or (w.endswith("/") and name.startswith(w)) for w in wanted)

    root = Path(root)
    if root.is_file():
        with zipfile.ZipFile(root) as z:
            return [(n, z.read(n).decode("utf-8", "replace")) for n in sorted(z.namelist()) if keep(n)]
    out = []
    for p in sorted(root.rglob("*.py")):
        name = p.relative_to(root).as_posix()
        if keep(name):
            out.append((name, p.read_text(encoding="utf-8", errors="replace")))
    return out


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
    """Flags a class's annotated fields become: SGLang's `A[T, Arg(...)]`, vLLM's argument dataclasses."""
    out: set[str] = set()
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        name = stmt.target.id
        if name.startswith("_"):
            continue
        ann = stmt.annotation
        if server == "vllm":
            if cls.name in _VLLM_ARG_CLASSES:
                out.add("--" + name.replace("_", "-"))
            continue
        if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"):
            continue
        arg = next((n for n in ast.walk(ann) if isinstance(n, ast.Call) and _call_name(n) == "Arg"), None)
        kw = {k.arg: k.value for k in arg.keywords} if arg else {}
        if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value is True:
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
                    if _FLAG.fullmatch(s):
                        flags.add(s)
            elif isinstance(node, ast.ClassDef):
                flags |= _field_flags(node, server)
    return sorted(flags)


def _server_of(path: str) -> str:
    base = Path(path).name.lower()
    for server in SERVERS:
        if base.startswith(server) or (Path(path) / server).is_dir():
            return server
    raise SystemExit(f"{path}: cannot tell which server this is (want a sglang or vllm wheel or directory)")


def main(argv: list[str] | None = None) -> int:
    """Write <server>.txt for each wheel or unpacked package given."""
    ap = argparse.ArgumentParser(prog="python3 -m logsense.flags", description=__doc__.split("\n")[0])
    ap.add_argument("sources", nargs="+", help="a sglang/vllm wheel, or a directory holding the package")
    ap.add_argument("-o", "--out", default=str(_DATA), help="output directory (default: the shipped one)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for src in a.sources:
        server = _server_of(src)
        flags = extract(src, server)
        if not flags:
            print(f"{src}: no flags found", file=sys.stderr)
            return 1
        (out / f"{server}.txt").write_text(
            f"# {server} flags, from {Path(src).name} (python3 -m logsense.flags)\n" + "\n".join(flags) + "\n",
            encoding="utf-8",
        )
        print(f"{out / (server + '.txt')}: {len(flags)} flags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
