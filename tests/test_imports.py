"""The package's modules import one another without a circle, and the rule loader stays below the core.

The graph is read from the source with `ast`. Every import counts, also one inside a function:
a lazy import keeps the start path light, it does not make a circle harmless. Not counted:
what `if TYPE_CHECKING:` imports (it never runs), and the package root's own functions
(`logsense.analyze`, `logsense.load_rules`): the public API imports the core on first use so
that `import logsense` stays cheap, and the root package is loaded before any of its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "logsense"
ROOT = PACKAGE.name


def _modules(package: Path) -> dict[str, Path]:
    out = {}
    for f in package.rglob("*.py"):
        parts = list(f.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports, anywhere in it (the root's function bodies aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    skip: set[int] = set()
    for node in ast.walk(tree):  # `if TYPE_CHECKING:` never runs
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    if name == ROOT:
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                skip.update(id(n) for n in ast.walk(fn))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join(pkg + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in modules else base)
    return {m for m in out if m in modules and m != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (a, b, ..., a), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_the_package_has_no_import_circle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("graph, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
])
def test_find_cycle(graph, cycle):
    assert find_cycle(graph) == cycle


def test_a_lazy_import_inside_a_function_still_counts(tmp_path):
    pkg = tmp_path / "logsense"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def api():\n    from logsense.a import x\n")
    (pkg / "a.py").write_text("from logsense.b import y\n")
    (pkg / "b.py").write_text("def f():\n    from logsense import a\n")
    graph = import_graph(pkg)
    assert graph["logsense"] == set()  # the public API's lazy imports
    assert find_cycle(graph) == ["logsense.a", "logsense.b", "logsense.a"]


def test_the_model_imports_nothing_above_it():
    graph = import_graph()
    assert graph["logsense.model"] <= {"logsense.logtime"}


def test_the_rule_loader_does_not_reach_into_the_core():
    core = {"logsense.pipeline", "logsense.engine", "logsense.analysis", "logsense.timeline", "logsense.framing",
            "logsense.check", "logsense.examples"}
    for name, imported in import_graph().items():
        if name == "logsense.rules" or name.startswith("logsense.rules."):
            assert not imported & core, f"{name} imports {sorted(imported & core)}"


def test_only_the_reports_draw_on_the_terminal():
    """rich is imported by report/ (the console and what is drawn) and nowhere else in the package."""
    drawing = set()
    for name, path in _modules(PACKAGE).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(m == "rich" or m.startswith("rich.") for m in mods):
                drawing.add(name)
    assert sorted(m for m in drawing if not m.startswith("logsense.report")) == []


def test_the_sources_and_the_commands_keep_to_their_layers():
    """A source reads lines (it knows no tail session and no command); a command imports no other command."""
    graph = import_graph()
    for name, imported in graph.items():
        if name.startswith("logsense.sources"):
            above = {m for m in imported if m == "logsense.session" or m.startswith("logsense.commands")}
            assert not above, f"{name} imports {sorted(above)}"
        if name.startswith("logsense.commands.") and name != "logsense.commands.common":
            others = {m for m in imported if m.startswith("logsense.commands.") and m != "logsense.commands.common"}
            assert not others, f"{name} imports {sorted(others)}"
