"""YAML rule packs -> RuleSpec, with every problem reported as file:line: rule: field: reason."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logsense import re_cache
from logsense.errors import RuleError
from logsense.model import FixKind, Role, RuleStatus, Value, _set
from logsense.rules.schema import (
    DEFAULTS_FIELDS,
    EXAMPLE_FIELDS,
    EXAMPLE_ITEM_FIELDS,
    FIX_FIELDS,
    MATCH_FIELDS,
    PACK_FIELDS,
    RULE_FIELDS,
    Field,
)
from logsense.servers import pack_scope
from logsense.taxonomy import causes

if TYPE_CHECKING:
    import yaml  # imported when a pack is parsed: a cached pack needs no YAML at all

_ID = re_cache.compile(r"^[a-z0-9][a-z0-9-]*$")
_EXAMPLE_NAME = re_cache.compile(r"^[a-z0-9][a-z0-9_-]*$")


class Marked:
    """A YAML value with the line it came from (1-based)."""

    __slots__ = ("value", "line", "column", "keys")

    def __init__(self, value: Any, line: int, column: int, keys: dict[str, tuple[int, int]] | None = None) -> None:
        self.value, self.line, self.column = value, line, column
        self.keys = keys or {}  # for a mapping: where each key stands


MAX_NODES = 200_000  # values, aliases expanded: more is no rule pack (the biggest bundled one holds ~2k)
_CORE_TAG = "tag:yaml.org,2002:"


@lru_cache(maxsize=1)
def _scalars() -> yaml.SafeLoader:
    """Resolves scalar nodes to Python values, as safe_load would."""
    import yaml

    return yaml.SafeLoader("")


class _Composer:
    """Node graph -> Marked values, refusing what a data file has no use for: custom tags, recursive aliases,
    and bulk (aliases count each time they are expanded: 500 bytes of nested ones would expand to gigabytes)."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.count = 0
        self.path: set[int] = set()  # the nodes being composed: meeting one again is a recursive alias

    def refuse(self, node: yaml.Node, reason: str) -> RuleError:
        return RuleError(self.display, node.start_mark.line + 1, reason, column=node.start_mark.column + 1)

    def marked(self, node: yaml.Node, depth: int = 0) -> Marked:
        if id(node) in self.path:
            raise self.refuse(node, "a YAML alias refers to a value that contains it (recursive alias)")
        self.count += 1
        if self.count > MAX_NODES or depth > 100:
            raise self.refuse(node, f"the document is too big or too deep once its aliases are expanded "
                                    f"(over {MAX_NODES} values or 100 levels)")
        self.path.add(id(node))
        try:
            return self._marked(node, depth)
        finally:
            self.path.discard(id(node))

    def _marked(self, node: yaml.Node, depth: int) -> Marked:
        import yaml

        if not node.tag.startswith(_CORE_TAG):
            raise self.refuse(node, f"YAML tag {node.tag!r} is not allowed (plain YAML only)")
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Marked] = {}
            keys: dict[str, tuple[int, int]] = {}
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise self.refuse(k, "a mapping key must be a plain value")
                key = str(self.marked(k, depth + 1).value)
                out[key] = self.marked(v, depth + 1)
                keys[key] = (k.start_mark.line + 1, k.start_mark.column + 1)
            return Marked(out, line, col, keys)
        if isinstance(node, yaml.SequenceNode):
            return Marked([self.marked(v, depth + 1) for v in node.value], line, col)
        try:
            value = _scalars().construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
            raise self.refuse(node, f"invalid value: {getattr(e, 'problem', None) or e}") from None
        return Marked(value, line, col)


def plain(m: Marked) -> Any:
    """The value without marks."""
    v = m.value
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


REQUEST_FIELD = "match.request"  # the field of a `not` pattern written as `match.request` (diff: not benign)


class PatternSpec(Value):
    """One pattern of a rule as written, with where it stands in its pack."""

    __slots__ = ("text", "line", "column", "field")
    text: str
    line: int
    column: int
    field: str

    def __init__(self, text: str, line: int, column: int, field: str) -> None:
        _set(self, "text", text)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "field", field)


class FixSpec(Value):
    """One fix of a rule as written: a template, filled from captures and facts when the rule fires."""

    __slots__ = ("kind", "value", "note", "when", "fallback")
    kind: FixKind
    value: str
    note: str | None
    when: dict[str, tuple[Any, ...]]
    fallback: str | None

    def __init__(self, kind: FixKind, value: str, note: str | None, when: dict[str, tuple[Any, ...]],
                 fallback: str | None) -> None:
        _set(self, "kind", kind)
        _set(self, "value", value)
        _set(self, "note", note)
        _set(self, "when", when)
        _set(self, "fallback", fallback)


class ExampleSpec(Value):
    """One example log of a rule: one it must fire on (match) or must not (no_match)."""

    __slots__ = ("kind", "index", "log", "captures", "line", "name")
    kind: str  # match | no_match | todo_match | todo_no_match
    index: int
    log: str
    captures: dict[str, str]
    line: int
    name: str | None  # `name:` of the example: its test id, stable when examples are inserted

    def __init__(self, kind: str, index: int, log: str, captures: dict[str, str], line: int,
                 name: str | None = None) -> None:
        _set(self, "kind", kind)
        _set(self, "index", index)
        _set(self, "log", log)
        _set(self, "captures", captures)
        _set(self, "line", line)
        _set(self, "name", name)

    @property
    def label(self) -> str:
        """`kind[name]`, or `kind[index]` for an unnamed example."""
        return f"{self.kind}[{self.name if self.name is not None else self.index}]"


class RuleSpec(Value):
    """One rule as its pack gives it, checked: what compile_rule turns into a CompiledRule."""

    __slots__ = ("id", "cause", "role", "priority", "confidence", "title", "explanation", "any", "all", "within",
                 "not_", "when_phase", "when_facts", "fixes", "references", "examples", "status", "path", "line",
                 "kind", "once_ready", "_pending")
    id: str
    cause: str
    role: Role
    priority: int
    confidence: float
    title: str | None
    explanation: str
    any: tuple[PatternSpec, ...]
    all: tuple[PatternSpec, ...]
    within: int
    not_: tuple[PatternSpec, ...]
    when_phase: frozenset[str] | None
    when_facts: dict[str, tuple[Any, ...]]
    fixes: tuple[FixSpec, ...]
    references: tuple[str, ...]
    examples: tuple[ExampleSpec, ...]
    status: RuleStatus
    path: str
    line: int
    kind: str | None  # role fatal: the kind of failure (schema.FATAL_KINDS)
    once_ready: bool  # role fatal: False when the sign means nothing once the server is ready

    def __init__(self, id: str, cause: str, role: Role, priority: int, confidence: float,
                 title: str | None, explanation: str, any: tuple[PatternSpec, ...],
                 all: tuple[PatternSpec, ...], within: int, not_: tuple[PatternSpec, ...],
                 when_phase: frozenset[str] | None, when_facts: dict[str, tuple[Any, ...]],
                 fixes: tuple[FixSpec, ...], references: tuple[str, ...], examples: tuple[ExampleSpec, ...],
                 status: RuleStatus, path: str, line: int, kind: str | None = None, once_ready: bool = True) -> None:
        _set(self, "id", id)
        _set(self, "cause", cause)
        _set(self, "role", role)
        _set(self, "priority", priority)
        _set(self, "confidence", confidence)
        _set(self, "title", title)
        _set(self, "explanation", explanation)
        _set(self, "any", any)
        _set(self, "all", all)
        _set(self, "within", within)
        _set(self, "not_", not_)
        _set(self, "when_phase", when_phase)
        _set(self, "when_facts", when_facts)
        _set(self, "fixes", fixes)
        _set(self, "references", references)
        _set(self, "examples", examples)
        _set(self, "status", status)
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "kind", kind)
        _set(self, "once_ready", once_ready)
        _set(self, "_pending", None)

    if not TYPE_CHECKING:  # to a type checker, a RuleSpec has its fields and nothing else

        def __getattr__(self, name: str) -> Any:
            """A field the rule-pack cache left to decode until first read (the examples: an analysis never
            reads them, and they are a third of what a warm start decodes)."""
            pending = self._pending
            if not pending or name not in pending:
                raise AttributeError(f"'RuleSpec' object has no attribute {name!r}")
            value = pending[name](self)
            _set(self, name, value)
            del pending[name]
            return value

    def decode_later(self, pending: dict[str, Callable[[RuleSpec], Any]]) -> None:
        """Leave the fields `pending` names unset, each decoded by its function when first read."""
        for name in pending:
            object.__delattr__(self, name)
        _set(self, "_pending", pending)


def _type_name(t: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "a whole number", float: "a number", list: "a list", dict: "a mapping",
             bool: "true or false"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t if x is not int or float not in t) or "a number"
    return names.get(t, t.__name__)


class _Checker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[RuleError] = []

    def err(self, m: Marked | None, reason: str, rule: str | None = None, field: str | None = None) -> None:
        self.errors.append(RuleError(self.path, m.line if m else None, reason, rule=rule, field=field,
                                     column=m.column if m else None))

    def fields(self, m: Marked, table: dict[str, Field], rule: str | None, prefix: str) -> dict[str, Any] | None:
        if not isinstance(m.value, dict):
            self.err(m, f"must be a mapping, not {type(m.value).__name__}", rule, prefix.rstrip(".") or None)
            return None
        out: dict[str, Any] = {}
        for key in m.value:
            if key not in table:
                known = ", ".join(table)
                kl, kc = m.keys.get(key, (m.line, m.column))
                self.err(Marked(None, kl, kc), f"unknown field (known: {known})", rule, prefix + key)
        for name, f in table.items():
            if name not in m.value:
                if f.required:
                    self.err(m, f"missing required field '{name}' ({f.help})", rule, prefix + name)
                out[name] = f.default
                continue
            val = m.value[name]
            ok_types = f.type if isinstance(f.type, tuple) else (f.type,)
            if isinstance(val.value, bool) and bool not in ok_types:
                ok = False
            else:
                ok = isinstance(val.value, ok_types) or (val.value is None and not f.required)
            if not ok:
                self.err(val, f"must be {_type_name(f.type)}", rule, prefix + name)
                out[name] = f.default
                continue
            if f.choices and val.value not in f.choices:
                self.err(val, f"'{val.value}' is not one of: {', '.join(f.choices)}", rule, prefix + name)
            out[name] = val
        return out


def _text(m: Any) -> Any:
    return m.value if isinstance(m, Marked) else m


def _patterns(c: _Checker, m: Marked | None, rule: str | None, name: str) -> tuple[PatternSpec, ...]:
    if m is None or not isinstance(m, Marked):
        return ()
    out = []
    for i, p in enumerate(m.value or []):
        if not isinstance(p.value, str) or not p.value:
            c.err(p, "must be a non-empty string (a regular expression)", rule, f"{name}[{i}]")
            continue
        out.append(PatternSpec(p.value, p.line, p.column, f"{name}[{i}]"))
    return tuple(out)


_GROUP = re_cache.compile(r"\(\?P?<(\w+)>")
# {name} is filled from a capture or a fact; {name|flag} writes a config field or class the message
# names (max_model_len, KVTransfer) as its command-line flag (--max-model-len, --kv-transfer);
# {name|pip} writes an imported module (zmq, cv2) as the package pip installs (pyzmq, opencv-python-headless)
TEMPLATE_NAME = re_cache.compile(r"\{(\w+)(?:\|(flag|pip))?\}")


def capture_names(patterns: tuple[PatternSpec, ...]) -> set[str]:
    """The named groups of these patterns: what a fix template can fill from the matched line."""
    return {name for p in patterns for name in _GROUP.findall(p.text)}


def _compiles(patterns: tuple[PatternSpec, ...]) -> bool:
    import regex

    try:
        for p in patterns:
            regex.compile(p.text, regex.VERSION0)
    except regex.error:
        return False
    return True


def _check_template(c: _Checker, m: Any, rule: str, field: str, patterns: tuple[PatternSpec, ...]) -> None:
    """A {name} that nothing fills would drop the fix at run time, silently: it is a load error here."""
    if not isinstance(m, Marked) or not isinstance(m.value, str):
        return
    from logsense.facts import FACT_NAMES

    text = m.value
    if "{{" in text or "}}" in text:
        c.err(m, "write a name as {name}, not {{name}}", rule, field)
        return
    captures = capture_names(patterns)
    for name, _ in TEMPLATE_NAME.findall(text):
        if name in captures or name in FACT_NAMES or name == "phase" or name.startswith("arg_"):
            continue
        if not _compiles(patterns):
            return  # the broken pattern is the problem to report (when the rule compiles), not its captures
        known = ", ".join(sorted(captures)) or "none"
        c.err(m, f"{{{name}}} is neither a capture of this rule's patterns (captures: {known}) nor a fact "
                 "(see logsense/facts.py FACT_NAMES, or arg_<server flag>)", rule, field)


def _fixes(c: _Checker, m: Any, rule: str, patterns: tuple[PatternSpec, ...]) -> tuple[FixSpec, ...]:
    if not isinstance(m, Marked):
        return ()
    out = []
    for i, fm in enumerate(m.value or []):
        f = c.fields(fm, FIX_FIELDS, rule, f"fixes[{i}].")
        if f is None or not isinstance(_text(f["value"]), str) or _text(f["kind"]) not in tuple(FixKind):
            continue
        for key in ("value", "note", "fallback"):
            _check_template(c, f[key], rule, f"fixes[{i}].{key}", patterns)
        when: dict[str, tuple[Any, ...]] = {}
        cond = f.get("if")
        if isinstance(cond, Marked) and isinstance(cond.value, dict):
            for k, v in plain(cond).items():
                when[k] = tuple(v) if isinstance(v, list) else (v,)
        out.append(FixSpec(FixKind(_text(f["kind"])), _text(f["value"]), _text(f["note"]), when, _text(f["fallback"])))
    return tuple(out)


def _examples(c: _Checker, m: Any, rule: str) -> tuple[ExampleSpec, ...]:
    if not isinstance(m, Marked):
        return ()
    ex = c.fields(m, EXAMPLE_FIELDS, rule, "examples.")
    if ex is None:
        return ()
    out = []
    names: set[str] = set()
    for kind in ("match", "no_match", "todo_match", "todo_no_match"):
        lst = ex.get(kind)
        if not isinstance(lst, Marked):
            continue
        for i, e in enumerate(lst.value or []):
            where = f"examples.{kind}[{i}]"
            if isinstance(e.value, str):
                out.append(ExampleSpec(kind, i, e.value, {}, e.line))
                continue
            if not isinstance(e.value, dict):
                c.err(e, "an example is a string or a mapping with 'log' (and optional 'captures', 'name')", rule,
                      where)
                continue
            f = c.fields(e, EXAMPLE_ITEM_FIELDS, rule, where + ".")
            if f is None or not isinstance(f["log"], Marked):
                continue
            caps = plain(f["captures"]) if isinstance(f["captures"], Marked) else None
            name = _text(f["name"])
            if name is not None:
                if not _EXAMPLE_NAME.match(name):
                    c.err(f["name"], "must be lowercase letters, digits, '_' and '-'", rule, where + ".name")
                elif name in names:
                    c.err(f["name"], f"another example of this rule is named '{name}'", rule, where + ".name")
                names.add(name)
            out.append(ExampleSpec(kind, i, f["log"].value, {k: str(x) for k, x in (caps or {}).items()}, e.line,
                                   name))
    return tuple(out)


def _valid_default(c: _Checker, p: PatternSpec) -> bool:
    """A broken pack default is reported once, here, not once for every rule it would be merged into."""
    import regex

    try:
        regex.compile(p.text, regex.VERSION0)
    except regex.error as e:
        c.errors.append(RuleError(c.path, p.line, f"not a valid regular expression: {e}", field=p.field,
                                  column=p.column))
        return False
    return True


def parse_rule(c: _Checker, m: Marked, default_not: tuple[PatternSpec, ...] = ()) -> RuleSpec | None:
    """One rule; `default_not` are the pack's `defaults: not:` patterns, added unless `use_defaults: false`."""
    rid = _text(m.value.get("id")) if isinstance(m.value, dict) else None
    rid = rid if isinstance(rid, str) else None
    before = len(c.errors)
    f = c.fields(m, RULE_FIELDS, rid, "")
    if f is None or rid is None:
        if rid is None and f is not None:
            c.err(m, "missing required field 'id'", None, "id")
        return None
    if not _ID.match(rid):
        c.err(f["id"], "must be lowercase letters, digits and '-'", rid, "id")
    cause = _text(f["cause"])
    if isinstance(cause, str) and cause not in causes():
        c.err(f["cause"], f"unknown cause '{cause}' (see logsense/taxonomy.yaml)", rid, "cause")
    prio = _text(f["priority"])
    if isinstance(prio, int) and not 0 <= prio <= 100:
        c.err(f["priority"], "must be between 0 and 100", rid, "priority")
    conf = _text(f["confidence"])
    if isinstance(conf, (int, float)) and not 0 <= conf <= 1:
        c.err(f["confidence"], "must be between 0 and 1", rid, "confidence")
    role, kind = _text(f["role"]), _text(f["kind"])
    if role == "fatal" and kind is None:
        c.err(f["role"], "a fatal rule needs 'kind:' (the kind of failure it shows)", rid, "kind")
    if kind is not None and role != "fatal":
        c.err(f["kind"], "only a fatal rule has a 'kind:'", rid, "kind")
    once_ready = _text(f["once_ready"])
    if once_ready is False and role != "fatal":
        c.err(f["once_ready"], "only a fatal rule has a 'once_ready:'", rid, "once_ready")
    match = f["match"]
    pats_any: tuple[PatternSpec, ...] = ()
    pats_all: tuple[PatternSpec, ...] = ()
    pats_not: tuple[PatternSpec, ...] = ()
    within = 0
    if isinstance(match, Marked):
        mf = c.fields(match, MATCH_FIELDS, rid, "match.")
        if mf is not None:
            pats_any = _patterns(c, mf["any"], rid, "match.any")
            pats_all = _patterns(c, mf["all"], rid, "match.all")
            pats_not = _patterns(c, mf["not"], rid, "match.not") + _patterns(c, mf["request"], rid, REQUEST_FIELD)
            if _text(f["use_defaults"]) is not False:
                pats_not = default_not + pats_not
            within = _text(mf["within"]) or 0
            if not pats_any and not pats_all:
                c.err(match, "needs at least one pattern in 'any' or 'all'", rid, "match")
    phases = None
    wp = f["when_phase"]
    if isinstance(wp, Marked):
        phases = frozenset(plain(wp) or [])  # checked against the phase file in use: phases.unknown_phases
    when_facts: dict[str, tuple[Any, ...]] = {}
    wf = f["when_facts"]
    if isinstance(wf, Marked) and isinstance(wf.value, dict):
        for k, v in plain(wf).items():
            when_facts[k] = tuple(v) if isinstance(v, list) else (v,)
    fixes = _fixes(c, f["fixes"], rid, pats_any + pats_all)
    examples = _examples(c, f["examples"], rid)
    if len(c.errors) > before:
        return None
    return RuleSpec(
        id=rid,
        cause=cause,
        role=Role(_text(f["role"])),
        priority=prio if isinstance(prio, int) else 50,
        confidence=float(conf),
        title=_text(f["title"]),
        explanation=(_text(f["explanation"]) or "").strip(),
        any=pats_any,
        all=pats_all,
        within=int(within),
        not_=pats_not,
        when_phase=phases,
        when_facts=when_facts,
        fixes=fixes,
        references=tuple(plain(f["references"]) if isinstance(f["references"], Marked) else ()),
        examples=examples,
        status=RuleStatus(_text(f["status"]) or RuleStatus.STABLE),
        path=c.path,
        line=m.line,
        kind=kind,
        once_ready=once_ready is not False,
    )


def read_yaml(path: Path, display: str) -> Marked | None:
    """Compose a YAML file into marked values; syntax errors name the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RuleError(display, None, f"not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise RuleError(display, None, f"cannot read: {e.strerror or e}") from None
    import yaml

    try:
        # libyaml's composer is ~10x faster than the pure-Python one and keeps the same marks.
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.MarkedYAMLError as e:
        # "while scanning a quoted scalar" points where the trouble starts; the problem mark is often EOF
        mark = e.context_mark or e.problem_mark
        reason = f"{e.context}: {e.problem}" if e.context else str(e.problem)
        raise RuleError(display, mark.line + 1 if mark else None, f"invalid YAML: {reason}",
                        column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise RuleError(display, None, f"invalid YAML: {e}") from None
    return _Composer(display).marked(node) if node is not None else None


def load_yaml(path: Path, display: str | None = None) -> Any:
    """Read a YAML data file (labels, packs, configs) as plain values: no custom tags, bounded size.

    Raises RuleError (file:line: reason) on anything else; an empty file is None.
    """
    doc = read_yaml(path, display or str(path))
    return plain(doc) if doc is not None else None


def load_pack(path: Path, display: str | None = None) -> tuple[list[RuleSpec], list[RuleError]]:
    """Parse one pack; returns the rules that are valid and the problems found."""
    display = display or str(path)
    c = _Checker(display)
    try:
        doc = read_yaml(path, display)
    except RuleError as e:
        return [], [e]
    if doc is None:
        return [], []
    if not isinstance(doc.value, dict) or "rules" not in doc.value:
        c.err(doc, "a rule pack is a mapping with a 'rules:' list", None, None)
        return [], c.errors
    pack = c.fields(doc, PACK_FIELDS, None, "")
    rules_m = doc.value["rules"]
    if pack is None or not isinstance(rules_m.value, list):
        if pack is not None:
            c.err(rules_m, "must be a list of rules", None, "rules")
        return [], c.errors
    default_not: tuple[PatternSpec, ...] = ()
    if isinstance(pack["defaults"], Marked):
        defaults = c.fields(pack["defaults"], DEFAULTS_FIELDS, None, "defaults.")
        if defaults is not None:
            default_not = _patterns(c, defaults["not"], None, "defaults.not")
            default_not = tuple(p for p in default_not if _valid_default(c, p))
    out = []
    # a pack under rules/<server>/ is about that server's code: it fires on that server's logs, or on
    # a log whose server nothing tells (a short paste), never on the other server's (Sigma's logsource)
    scope = pack_scope(path)
    for i, rm in enumerate(rules_m.value):
        if not isinstance(rm.value, dict):
            c.err(rm, "a rule is a mapping", None, f"rules[{i}]")
            continue
        spec = parse_rule(c, rm, default_not)
        if spec is not None and spec.status is not RuleStatus.DEPRECATED:  # checked above, never run
            if scope is not None and "server" not in spec.when_facts:
                spec = spec.replace(when_facts={**spec.when_facts, "server": (scope, None)})
            out.append(spec)
    return out, c.errors
