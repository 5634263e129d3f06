"""What is only true of one server lives in logsense/servers/: no other module names a server, holds its
patterns, flags, packages or env prefixes, or branches on its name (read from the source with `ast`;
docstrings and comments may speak of the servers)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from logsense.servers import SERVERS

PACKAGE = Path(__file__).resolve().parent.parent / "logsense"
SEAM = PACKAGE / "servers"


def _words() -> re.Pattern[str]:
    """What names a server: its name and title, its env prefixes, its own flags (not ones every server has)."""
    words = {w for s in SERVERS for w in (s.name, s.title, *s.env_prefixes)}
    flags = [{f for fs in s.settings.values() for f in fs} for s in SERVERS]
    shared = set.intersection(*flags) if flags else set()
    words |= {f for fs in flags for f in fs - shared}
    return re.compile("|".join(re.escape(w) + (r"(?![\w-])" if w.startswith("--") else "")
                               for w in sorted(words, key=len, reverse=True)), re.I)


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def server_knowledge_outside_the_seam() -> list[str]:
    """file:line: what it holds, for every string or name outside logsense/servers/ that names a server."""
    words = _words()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if SEAM in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if words.search(node.value):
                    found.append(f"{where}:{node.lineno}: {node.value[:80]!r}")
            elif isinstance(node, (ast.Name, ast.Attribute, ast.FunctionDef, ast.ClassDef)):
                name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else node.name
                if words.search(name):
                    found.append(f"{where}:{node.lineno}: name {name}")
    return found


def test_no_module_outside_the_servers_folder_holds_a_servers_knowledge():
    found = server_knowledge_outside_the_seam()
    assert not found, "server knowledge outside logsense/servers/:\n" + "\n".join(found)


def test_the_check_sees_what_it_is_for(tmp_path):
    words = _words()
    for text in ('server == "sglang"', "VLLM_USE_V1", "--mem-fraction-static", "vLLM API server", "SGL_ENABLE_JIT"):
        assert words.search(text), text
    for text in ("--port", "--quantization", "--kv-cache-dtype 'fp8'", "torch", "model_path"):
        assert not words.search(text), text


def test_every_server_is_whole():
    """Each server fills in every part the core reads, and the settings every fix rewrites agree in kind."""
    names = [s.name for s in SERVERS]
    assert len(set(names)) == len(names)
    for s in SERVERS:
        assert s.name.isidentifier() and s.name == s.name.lower(), s.name
        assert s.signs and s.version and s.args.markers and s.flag_sources, s.name
        assert all(flags and all(f.startswith("--") for f in flags) for flags in s.settings.values()), s.name
        reader = s.line_format()
        assert reader.read("no prefix here", None, None) is None, s.name
        re.compile(s.paste_heads)
