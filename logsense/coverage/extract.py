"""Every message a Python file can print when it fails: raise, logger.error/critical/exception/fatal,
sys.exit("..."), assert ..., "..." -- read with `ast`, never imported."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from logsense.coverage.template import HOLE, Template, format_parts, printf_parts

LOG_METHODS = frozenset({"error", "critical", "exception", "fatal"})
_LOGGER = re.compile(r"^_*(logger|log|logging|LOGGER|LOG)$")
_EXIT_CALLS = frozenset({"exit", "quit"})
_MAX_DEPTH = 40  # expression nesting we follow before calling the rest a hole


@dataclass(frozen=True)
class Site:
    """One place in the source that prints a failure message."""

    file: str  # path inside the distribution, e.g. sglang/srt/server_args.py
    line: int
    scope: str  # Class.function, or <module>
    kind: str  # raise | log | exit | assert
    exc: str  # exception type; for a log call the logger method (error, exception, ...)
    template: Template | None  # None: the site gives no message (raise ValueError)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


class ParseProblem(Exception):
    """A file that could not be read as Python; it is reported and skipped."""


def extract(path: str, source: str | bytes) -> list[Site]:
    """The failure messages of one file; raises ParseProblem when it is not valid Python."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise ParseProblem(f"{path}: {type(e).__name__}: {e}") from None
    finder = _Finder(path)
    try:
        finder.visit(tree)
    except RecursionError:
        raise ParseProblem(f"{path}: too deeply nested to walk") from None
    return finder.sites


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.sites: list[Site] = []
        self.scopes: list[str] = []
        self.envs: list[dict[str, ast.expr | None]] = []  # per function: names bound once to a value

    # -- scopes -------------------------------------------------------------------------------
    def _scoped(self, node, env: dict[str, ast.expr | None] | None) -> None:
        self.scopes.append(node.name)
        self.envs.append(env if env is not None else (self.envs[-1] if self.envs else {}))
        self.generic_visit(node)
        self.scopes.pop()
        self.envs.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, {})

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._scoped(node, _bindings(node))

    visit_AsyncFunctionDef = visit_FunctionDef

    def _add(self, node: ast.stmt | ast.expr, kind: str, exc: str, template: Template | None) -> None:
        scope = ".".join(self.scopes) or "<module>"
        self.sites.append(Site(self.path, node.lineno, scope, kind, exc, template))

    # -- sites --------------------------------------------------------------------------------
    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call):
            name = _name(exc.func)
            if name:
                msg = exc.args[0] if exc.args else next(
                    (k.value for k in exc.keywords if k.arg in ("msg", "message", "detail", "reason")), None)
                self._add(node, "raise", name, self._template(msg) if msg is not None else None)
        elif exc is not None:
            name = _name(exc)
            if name and name[:1].isupper() and name not in self._env():
                self._add(node, "raise", name, None)  # `raise NotImplementedError`; `raise e` re-raises
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._add(node, "assert", "AssertionError", self._template(node.msg) if node.msg is not None else None)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS:
            receiver = _name(func.value)
            if receiver and _LOGGER.match(receiver) and node.args:
                t = self._template(node.args[0])
                if len(node.args) > 1:
                    t = Template.of([q for p in t.parts for q in ([p] if p is None else printf_parts(p))])
                self._add(node, "log", func.attr, t)
        elif (isinstance(func, ast.Name) and func.id in _EXIT_CALLS) or _dotted(func) == "sys.exit":
            if node.args:
                t = self._template(node.args[0])
                if t.literal:  # sys.exit(1) or sys.exit(code): no text
                    self._add(node, "exit", "SystemExit", t)
        self.generic_visit(node)

    # -- messages -----------------------------------------------------------------------------
    def _env(self) -> dict[str, ast.expr | None]:
        return self.envs[-1] if self.envs else {}

    def _template(self, node: ast.expr) -> Template:
        return Template.of(self._parts(node, 0, set()))

    def _parts(self, node: ast.expr, depth: int, seen: set[str]) -> list[str | None]:
        if depth > _MAX_DEPTH:
            return [HOLE]
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else [HOLE]
        if isinstance(node, ast.JoinedStr):
            out: list[str | None] = []
            for v in node.values:
                out.extend(self._parts(v, depth + 1, seen) if isinstance(v, ast.Constant) else [HOLE])
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._parts(node.left, depth + 1, seen) + self._parts(node.right, depth + 1, seen)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self._parts(node.left, depth + 1, seen)
            if any(p is not None for p in left):
                return [q for p in left for q in ([p] if p is None else printf_parts(p))]
            return [HOLE]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
            return format_parts(node.func.value.value)
        if isinstance(node, ast.Name) and node.id not in seen:
            bound = self._env().get(node.id)
            if bound is not None:
                return self._parts(bound, depth + 1, seen | {node.id})
        return [HOLE]


def _bindings(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr | None]:
    """Names this function binds exactly once to a value (msg = f"..."); `msg += ...` adds a hole."""
    values: dict[str, ast.expr | None] = {}
    extended: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            values[name] = None if name in values else node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name = node.target.id
            values[name] = None if name in values else node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            extended.add(node.target.id)
    for name in extended:
        v = values.get(name)
        if v is not None:
            values[name] = ast.BinOp(left=v, op=ast.Add(), right=ast.Name(id="_", ctx=ast.Load()))
    for a in func.args.args + func.args.kwonlyargs + func.args.posonlyargs:
        values.setdefault(a.arg, None)  # a parameter is a value from elsewhere
    return values
