"""Compiled rule packs as plain data, for logsense.cache: parsing and compiling the YAML is most of a small run.

An entry is keyed by the pack file's bytes and the code that reads it (the parser's own source,
the fact names a fix may use, the taxonomy the causes are checked against). It is rebuilt into
the value types `_types()` names and nothing else, and what does not come back exactly as it
was stored is not stored: a wrong or corrupt entry costs a re-parse, never a wrong rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

from logsense import cache

_HERE = Path(__file__).resolve().parent
# The code whose behaviour an entry depends on, besides the pack: the parser, the compiler, the
# field tables, this codec, the fact names a fix template may use, and the cause ids.
_CODE = (_HERE / "loader.py", _HERE / "compile.py", _HERE / "schema.py", _HERE / "phases.py", _HERE / "cache.py",
         _HERE.parent / "facts.py", _HERE.parent / "taxonomy.yaml",
         # a whole set's entry also holds the literal index and the order `load_rules` gives the rules
         _HERE / "__init__.py", _HERE.parent / "prefilter.py",
         # a pack's scope comes from its folder's server name; fact names from each server's module
         *sorted((_HERE.parent / "servers").glob("*.py")))


def key(kind: str, data: bytes) -> str:
    """The entry name for a pack (or phase) file's bytes."""
    return cache.key(f"rules-{kind}-{_code_key()}", data)


@lru_cache(maxsize=1)
def _types() -> dict[str, Any]:
    from logsense.model import FixKind, Role, RuleStatus
    from logsense.rules.compile import CompiledRule
    from logsense.rules.loader import ExampleSpec, FixSpec, PatternSpec, RuleSpec
    from logsense.rules.phases import PhaseSpec

    return {t.__name__: t for t in (CompiledRule, PhaseSpec, RuleSpec, PatternSpec, FixSpec, ExampleSpec,
                                    Role, RuleStatus, FixKind)}


# What a tagged tuple (_TAG, kind, ...) stands for. Anything else in an entry is plain data, taken as it is.
_VALUE, _PATTERN, _TUPLE, _ENUM, _LIST, _DICT, _FROZENSET, _RULE = range(8)
_TAG = "\0logsense"
_LEAVES = (str, int, float, bool, type(None), bytes)


def encode(value: Any) -> Any:
    """Plain data (marshal can write it) for a value made of the cached value types, patterns and plain values.

    A value type's instance is (_TAG, _VALUE, its type's name, its field values in order): the field
    names are part of the entry's key (`_code_key`). A container of plain data only is kept as
    it is, so that `decode` returns it without looking inside (most of an entry: examples,
    literals, fact conditions); one holding anything else is a tagged tuple of its items.
    """
    from logsense.model import Value
    from logsense.rules.compile import CompiledRule, Pattern

    if isinstance(value, Enum):  # before the leaves: a str enum is a str, but marshal takes no subclass
        name = type(value).__name__
        if _types().get(name) is not type(value):
            raise TypeError(f"{name} is not a cached type")
        return (_TAG, _ENUM, name, value.value)
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, Pattern):
        return (_TAG, _PATTERN, encode(value.spec), *_pattern_rest(value))
    if type(value) is CompiledRule and all(p.spec is s for ps, ss in _pattern_pairs(value) for p, s in zip(ps, ss, strict=True)):
        # its patterns' specs are its spec's: kept once, as compile_rule made them
        return (_TAG, _RULE, encode(value.spec), *(tuple(_pattern_rest(p) for p in ps) for ps, _ in
                                                   _pattern_pairs(value)))
    if isinstance(value, Value):
        name = type(value).__name__
        if _types().get(name) is not type(value):
            raise TypeError(f"{name} is not a cached type")
        return (_TAG, _VALUE, name, *(encode(getattr(value, f)) for f in value._fields))
    if isinstance(value, tuple):
        items = tuple(encode(x) for x in value)
        return items if _plain(items) and not (items and items[0] == _TAG) else (_TAG, _TUPLE, *items)
    if isinstance(value, list):
        items = tuple(encode(x) for x in value)
        return list(items) if _plain(items) else (_TAG, _LIST, *items)
    if isinstance(value, dict):
        keys, values = tuple(encode(k) for k in value), tuple(encode(x) for x in value.values())
        return dict(zip(keys, values, strict=True)) if _plain(keys) and _plain(values) else (_TAG, _DICT, keys, values)
    if isinstance(value, frozenset):
        items = tuple(encode(x) for x in value)
        return frozenset(items) if _plain(items) else (_TAG, _FROZENSET, *items)
    raise TypeError(f"{type(value).__name__} cannot be cached")


def _plain(items: tuple[Any, ...]) -> bool:
    """Whether encoded items are plain data that decodes as itself (no tagged tuple anywhere in them)."""
    for x in items:
        t = type(x)
        if t in _LEAVES:
            continue
        if t is tuple:
            if (x and x[0] == _TAG) or not _plain(x):
                return False
        elif t is list or t is frozenset:
            if not _plain(tuple(x)):
                return False
        elif t is dict:
            if not (_plain(tuple(x)) and _plain(tuple(x.values()))):
                return False
        else:
            return False
    return True


def _pattern_rest(p: Any) -> tuple[Any, ...]:
    return (tuple(p.literals), bool(p.icase), p.freeze())


def _pattern_pairs(rule: Any) -> tuple[tuple[Any, Any], ...]:
    """A compiled rule's patterns beside the specs they were compiled from."""
    return ((rule.any, rule.spec.any), (rule.all, rule.spec.all), (rule.not_, rule.spec.not_))


def decode(value: Any) -> Any:
    """The value `encode` was given; TypeError/ValueError/KeyError/IndexError on anything else."""
    from logsense.rules.compile import CompiledRule, Pattern
    from logsense.rules.loader import PatternSpec, RuleSpec

    builders = _builders()
    enums = _enums()
    lazy = _lazy()

    def pattern(spec: Any, literals: Any, icase: Any, frozen: Any) -> Pattern:
        if type(spec) is not PatternSpec or type(literals) is not tuple or type(icase) is not bool \
                or type(frozen) is not bytes:
            raise TypeError("not a pattern")
        return Pattern(spec, literals, icase, frozen=frozen)

    def walk(v: Any) -> Any:
        if type(v) is not tuple or not v or v[0] != _TAG:
            if type(v) in _LEAVES or type(v) in (tuple, list, dict, frozenset):
                return v  # plain data: encode tagged whatever was not
            raise TypeError(f"{type(v).__name__} is not plain data")
        kind = v[1]
        if kind == _VALUE:
            later = lazy.get(v[2])
            if later is None:
                return builders[v[2]](*[walk(x) if type(x) is tuple and x and x[0] == _TAG else x for x in v[3:]])
            fields = list(v[3:])
            pending = {}
            for i, name in later:
                pending[name] = _later(fields[i], name, walk)
                fields[i] = None  # decoded when first read
            obj = builders[v[2]](*[walk(x) if type(x) is tuple and x and x[0] == _TAG else x for x in fields])
            obj.decode_later(pending)
            return obj
        if kind == _RULE:
            spec = walk(v[2])
            if type(spec) is not RuleSpec or len(v) != 6:
                raise TypeError("not a rule")
            return CompiledRule(spec, *(tuple(pattern(s, *rest) for s, rest in zip(specs, kept, strict=True))
                                        for specs, kept in zip((spec.any, spec.all, spec.not_), v[3:], strict=True)))
        if kind == _PATTERN:
            return pattern(walk(v[2]), *v[3:])
        if kind == _TUPLE:
            return tuple([walk(x) for x in v[2:]])
        if kind == _ENUM:
            return enums[v[2]][v[3]]
        if kind == _LIST:
            return [walk(x) for x in v[2:]]
        if kind == _DICT:
            return dict(zip([walk(k) for k in v[2]], [walk(x) for x in v[3]], strict=True))
        if kind == _FROZENSET:
            return frozenset([walk(x) for x in v[2:]])
        raise ValueError(f"unknown tag {kind!r}")

    return walk(value)


@lru_cache(maxsize=1)
def _builders() -> dict[str, Callable[..., Any]]:
    """For each cached value type, what makes one from its field values in order: its constructor, which
    only stores them (the value types' __init__ is written out field by field, nothing else)."""
    return {name: t for name, t in _types().items() if not issubclass(t, Enum)}


# Fields decoded when first read (RuleSpec.__getattr__ asks): the examples, which only `rules test`,
# `check` and `rules show` read. A field that cannot be decoded then is read again from its pack.
_LAZY = {"RuleSpec": ("examples",)}


@lru_cache(maxsize=1)
def _lazy() -> dict[str, tuple[tuple[int, str], ...]]:
    """Each lazy field's place among its type's fields."""
    return {t: tuple((_layout(_types()[t]).index(name), name) for name in names) for t, names in _LAZY.items()}


def _later(encoded: Any, name: str, walk: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def decode_field(spec: Any) -> Any:
        try:
            value = walk(encoded)
            if encode(value) != encoded:
                raise ValueError(f"{name} does not come back as it was kept")
            return value
        except (ValueError, TypeError, KeyError, IndexError, RecursionError):
            return _from_pack(spec, name)

    return decode_field


def _from_pack(spec: Any, name: str) -> Any:
    """Field `name` of rule `spec` as its pack file gives it now (a kept field that cannot be read back)."""
    from logsense.rules.loader import load_pack

    specs, _errors = load_pack(Path(spec.path), spec.path)
    found = next((s for s in specs if s.id == spec.id), None)
    if found is None:
        raise LookupError(f"{spec.path}: rule {spec.id!r} is no longer in its pack: load the rules again")
    return getattr(found, name)


@lru_cache(maxsize=1)
def _enums() -> dict[str, dict[Any, Enum]]:
    """Each cached enum's members by value (what `Role(value)` finds, without the enum machinery's call)."""
    return {name: {m.value: m for m in t} for name, t in _types().items() if issubclass(t, Enum)}


def _layout(t: Any) -> tuple[str, ...]:
    """A cached type's shape: an enum's values, a value type's field names."""
    return tuple(m.value for m in t) if issubclass(t, Enum) else tuple(t._fields)


@lru_cache(maxsize=1)
def _code_key() -> str:
    """The reading code's source and each cached type's field names (an enum's values): other code, other entries."""
    layout = {name: _layout(t) for name, t in sorted(_types().items())}
    return cache.source_digest(_CODE) + cache.digest_of(repr(layout).encode()).hex()[:16]


def load(name: str) -> Any:
    """The compiled value stored as `name`, or None."""
    value = cache.load(name)
    if value is None:
        return None
    try:
        return decode(value)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None


def store(name: str, value: Any) -> None:
    """Keep `value` as entry `name` when it comes back the same; quietly not otherwise."""
    try:
        plain = encode(value)
        if encode(decode(plain)) != plain:
            return  # something that does not come back the same: parse it each time
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return
    cache.store(name, plain)


class LazyRules(Sequence[Any]):
    """A kept rule set's rules, each decoded when first used: an analysis reaches a third of them.

    Each is kept as its own marshal bytes, a part of the entry checked when the rule is first used:
    a start reads and checks the rules it uses, not all of them.

    A rule that cannot be decoded is read from its pack again (`reread(i)`): a wrong entry costs
    that pack's parse, never a wrong rule.
    """

    def __init__(self, encoded: cache.Parts, ids: list[str], paths: list[str],
                 reread: Callable[[int], Any]) -> None:
        self._encoded = encoded
        self._rules: list[Any] = [None] * len(encoded)
        self.ids = ids
        self._paths = paths
        self._reread = reread

    def __len__(self) -> int:
        return len(self._rules)

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        rule = self._rules[i]
        if rule is None:
            rule = self._rules[i] = self._decode(i if i >= 0 else i + len(self))
        return rule

    def _decode(self, i: int) -> Any:
        import marshal

        from logsense.rules.compile import CompiledRule

        try:
            rule = decode(marshal.loads(self._encoded[i]))
            if type(rule) is not CompiledRule or rule.spec.id != self.ids[i]:
                raise TypeError("not the rule kept here")
        except (ValueError, TypeError, KeyError, IndexError, EOFError, RecursionError):
            return self._reread(i)
        object.__setattr__(rule.spec, "path", self._paths[i])  # seen by no one yet: given its path as __init__ would
        return rule

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))  # sent elsewhere whole, as the list it stands for


def load_set(name: str) -> tuple[list[Any], list[int], list[str], cache.Parts, tuple[dict, dict], tuple] | None:
    """A kept rule set: (phases, each rule's pack index, rule ids, each rule's bytes, literal tables, always), or None."""
    kept = cache.load_parts(name)
    if kept is None:
        return None
    value, rules = kept
    try:
        phases_plain, owners, ids, (cs, ci), always = value
        phases = decode(phases_plain)
        if not (type(phases) is list and type(owners) is list and type(ids) is list
                and len(owners) == len(ids) == len(rules) and type(cs) is dict and type(ci) is dict
                and type(always) is tuple):
            return None
        return phases, owners, ids, rules, (cs, ci), always
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None


def drop_set(name: str) -> None:
    """Forget a kept rule set (one of its rules did not come back as kept)."""
    cache.drop(name)


def store_set(name: str, phases: list[Any], owners: list[int], rules: list[Any], tables: tuple[dict, dict],
              always: tuple) -> None:
    """Keep a whole rule set (see `load_set`) when each part comes back the same; quietly not otherwise."""
    import marshal

    try:
        plain_phases = encode(phases)
        plain_rules = [encode(r) for r in rules]
        if encode(decode(plain_phases)) != plain_phases or any(encode(decode(r)) != r for r in plain_rules):
            return
        value = (plain_phases, owners, [r.spec.id for r in rules], tables, always)
        parts = [marshal.dumps(r) for r in plain_rules]
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return
    cache.store_parts(name, value, parts)
