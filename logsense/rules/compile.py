"""RuleSpec -> CompiledRule: regexes with a timeout, and the literals a line must contain first.

Every pattern gets the longest literal that any match of it must contain (or one per
top-level alternative). A line is only tried against the rules whose literals it holds,
which is what keeps the engine near the speed of grep.
"""

from __future__ import annotations

import re as _re
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from logsense.errors import RuleError
from logsense.model import Value, _set
from logsense.rules.loader import PatternSpec, RuleSpec

if TYPE_CHECKING:
    import regex  # imported when a pattern is first compiled: most runs compile few, some none

MIN_LITERAL = 3
MATCH_TIMEOUT = 0.25  # seconds per search: a pathological pattern is stopped, reported and disabled
RULE_BUDGET = 2.0  # seconds of search per rule per log: a pattern slow on every line is disabled too

_CLASS_ESCAPES = set("dDwWsSbBAZzGnrtfv0123456789xuUNpPXhHKkR")


def _split_top(p: str) -> list[str]:
    out, depth, cur, i = [], 0, [], 0
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            cur.append(p[i : i + 2])
            i += 2
            continue
        if ch == "[":
            j = _class_end(p, i)
            cur.append(p[i:j])
            i = j
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _class_end(p: str, i: int) -> int:
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p) and p[j] != "]":
        j += 2 if p[j] == "\\" else 1
    return j + 1


def _group_end(p: str, i: int) -> int:
    depth, j = 0, i
    while j < len(p):
        ch = p[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            j = _class_end(p, j)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(p)


def _optional_after(p: str, j: int) -> bool:
    return j < len(p) and (p[j] in "?*" or (p[j] == "{" and p[j + 1 : j + 2] in ("0", ",")))


def _branch_literals(p: str, alt_sets: list[tuple[str, ...]] | None = None) -> list[str]:
    """Runs of literal text that every match of this (alternation-free at top) branch contains.

    A required group with alternatives, `(?:ValueError|RuntimeError)`, goes to `alt_sets`
    (every match holds one of them) when each alternative has a literal of its own.
    """
    runs: list[str] = []
    cur: list[str] = []
    i = 0

    def end_run() -> None:
        if cur:
            runs.append("".join(cur))
            cur.clear()

    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            nxt = p[i + 1]
            j = i + 2
            if nxt in _CLASS_ESCAPES:
                end_run()
            elif _optional_after(p, j):
                end_run()
            else:
                cur.append(nxt)
            i = j
            continue
        if ch == "[":
            end_run()
            i = _class_end(p, i)
            continue
        if ch == "(":
            j = _group_end(p, i)
            inner = p[i + 1 : j - 1]
            end_run()
            optional = _optional_after(p, j)
            if inner.startswith("?"):
                if inner[1:2] in ("=", "!", "<") and inner[1:3] not in ("<P",) or inner[1:2] == "#":
                    i = j
                    continue
                if inner[1:2] == "P" and inner[2:3] == "<":
                    inner = inner[inner.index(">") + 1 :]
                elif inner[1:2] == ":":
                    inner = inner[2:]
                elif inner[1:2] == "<":
                    inner = inner[inner.index(">") + 1 :]
                else:
                    i = j
                    continue
            if not optional:
                alts = _split_top(inner)
                if len(alts) == 1:
                    runs.extend(_branch_literals(inner, alt_sets))
                elif alt_sets is not None:
                    best = []
                    for alt in alts:
                        got = [r for r in _branch_literals(alt) if len(r.strip()) >= MIN_LITERAL]
                        if not got:
                            break
                        best.append(max(got, key=len))
                    else:
                        alt_sets.append(tuple(best))
            i = j
            if i < len(p) and p[i] in "+*?{":
                i = _skip_quant(p, i)
            continue
        if ch in ".^$":
            end_run()
            i += 1
            continue
        if ch in "?*":
            if cur:
                cur.pop()
            end_run()
            i = _skip_quant(p, i)
            continue
        if ch == "{":
            if p[i + 1 : i + 2] in ("0", ","):
                if cur:
                    cur.pop()
            end_run()
            i = _skip_quant(p, i)
            continue
        if ch == "+":
            end_run()
            i = _skip_quant(p, i)
            continue
        if _optional_after(p, i + 1):
            end_run()
            i += 1
            continue
        cur.append(ch)
        i += 1
    end_run()
    return runs


def _skip_quant(p: str, i: int) -> int:
    if p[i] == "{":
        j = p.find("}", i)
        i = j + 1 if j > 0 else i + 1
    else:
        i += 1
    if i < len(p) and p[i] in "?+":
        i += 1
    return i


def required_literals(pattern: str) -> tuple[tuple[str, ...], bool]:
    """Literals of which every match contains at least one (empty: no prefilter), and whether case-blind."""
    icase = False
    body = pattern
    flags = _re.match(r"^\(\?([aiLmsux]+)\)", body)
    if flags:
        icase = "i" in flags.group(1)
        body = body[flags.end() :]
    lits: list[str] = []
    for branch in _split_top(body):
        alt_sets: list[tuple[str, ...]] = []
        runs = [r for r in _branch_literals(branch, alt_sets) if len(r.strip()) >= MIN_LITERAL]
        if runs:
            chosen: tuple[str, ...] = (max(runs, key=len),)
        elif alt_sets:
            chosen = max(alt_sets, key=lambda alts: min(len(a) for a in alts))
        else:
            return (), icase
        lits.extend(x.lower() if icase else x for x in chosen)
    return tuple(dict.fromkeys(lits)), icase


class Pattern:
    """A rule pattern: its literals now, its regex compiled on first use (most never meet a candidate).

    `frozen` is the compiled regex as the rule-pack cache keeps it (see `freeze`): building the
    regex from it skips the `regex` module's parser, which costs ~0.4 ms a pattern.
    """

    __slots__ = ("spec", "literals", "icase", "_regex", "_text", "frozen")

    def __init__(self, spec: PatternSpec, literals: tuple[str, ...], icase: bool, compiled=None,
                 frozen: bytes | None = None) -> None:
        self.spec, self.literals, self.icase = spec, literals, icase
        self._regex = compiled
        self._text = spec.text
        self.frozen = frozen

    @property
    def regex(self) -> regex.Pattern:
        if self._regex is None:
            self._regex = _thaw(self.frozen, self._text)
        if self._regex is None:
            import regex

            self._regex = regex.compile(self._text, regex.VERSION0)
        return self._regex

    def freeze(self) -> bytes:
        """The compiled regex as plain data: what `regex` itself pickles it as, with its engine's build (b"": none)."""
        if self.frozen is None:
            import marshal

            engine = _engine()
            try:
                if engine is None:
                    raise ImportError("regex's engine not found")
                self.frozen = marshal.dumps((engine[1], self.regex._pickled_data))  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - no kept form: the text is compiled at first use, and fails there
                self.frozen = b""
        return self.frozen


def _thaw(frozen: bytes | None, text: str) -> regex.Pattern | None:
    """The regex `Pattern.freeze` kept, when this build of `regex` made it from this text; None: compile it again."""
    if not frozen:
        return None
    import marshal

    engine = _engine()
    try:
        build, data = marshal.loads(frozen)
        if engine is None or build != engine[1] or data[0] != text:
            return None
        return engine[0].compile(*data)  # how regex unpickles a pattern: the compiled form, no parsing
    except Exception:  # noqa: BLE001 - whatever is wrong with a kept form, compiling the text is right
        return None


@lru_cache(maxsize=1)
def _engine() -> tuple[Any, tuple[Any, ...]] | None:
    """regex's C engine alone and what identifies its build (None: not found).

    A kept pattern needs only the engine: the Python half of `regex` (its parser) takes ~30x
    longer to import. The build is the engine file's size and time with its own format
    constants, so another install of regex never reads a kept form it did not make.
    """
    import importlib.machinery
    import importlib.util
    import os

    try:
        engine = sys.modules.get("regex._regex")
        if engine is None:
            spec = importlib.util.find_spec("regex")
            folder = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
            paths = [os.path.join(folder, "_regex" + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES
                     if folder]
            path = next((p for p in paths if os.path.isfile(p)), None)
            if path is None:
                return None
            loader = importlib.machinery.ExtensionFileLoader("regex._regex", path)
            engine_spec = importlib.util.spec_from_loader("regex._regex", loader)
            if engine_spec is None:
                return None
            engine = importlib.util.module_from_spec(engine_spec)
            loader.exec_module(engine)
            sys.modules["regex._regex"] = engine  # the same module `import regex` loads, then finds already here
        if engine.__file__ is None:
            return None
        st = os.stat(engine.__file__)
        return engine, (st.st_size, st.st_mtime_ns, engine.MAGIC, engine.get_code_size())
    except Exception:  # noqa: BLE001 - no engine alone: patterns are compiled from their text
        return None


class CompiledRule(Value):
    """A rule ready to run: its spec and each of its patterns compiled."""

    __slots__ = ("spec", "any", "all", "not_")
    spec: RuleSpec
    any: tuple[Pattern, ...]
    all: tuple[Pattern, ...]
    not_: tuple[Pattern, ...]

    def __init__(self, spec: RuleSpec, any: tuple[Pattern, ...], all: tuple[Pattern, ...],
                 not_: tuple[Pattern, ...]) -> None:
        _set(self, "spec", spec)
        _set(self, "any", any)
        _set(self, "all", all)
        _set(self, "not_", not_)

    @property
    def id(self) -> str:
        return self.spec.id



def _column_of(source: str | None, column: int, text: str, pos: int | None) -> int:
    """The column of character `pos` of a pattern written at `column`, when the line shows it verbatim
    (plain or single-quoted); else the pattern's own column."""
    if source is None or pos is None or not 0 <= pos <= len(text):
        return column
    written = source[column - 1:]
    quoted = text.replace("'", "''")
    if written.startswith("'" + quoted):
        return column + 1 + len(text[:pos].replace("'", "''"))
    if written.startswith(text) and not written.startswith(("'", '"')):
        return column + pos
    return column


def compile_pattern(spec: PatternSpec, path: str, rule: str, validate: bool = True) -> Pattern:
    """Check the pattern (stdlib `re` parses the common syntax fast) and find its literals."""
    rx = None
    try:
        if validate:
            _re.compile(spec.text)
    except _re.error:
        # `regex` accepts more than `re` (possessive quantifiers, \p{..}): only its verdict counts
        import regex

        try:
            rx = regex.compile(spec.text, regex.VERSION0)
        except regex.error as e:
            err = RuleError(path, spec.line, f"not a valid regular expression: {e}", rule=rule, field=spec.field,
                            column=spec.column)
            column = _column_of(err.source, spec.column, spec.text, getattr(e, "pos", None))
            if column != spec.column:
                err = RuleError(path, spec.line, err.reason, rule=rule, field=spec.field, column=column,
                                source=err.source)
            raise err from None
    lits, icase = required_literals(spec.text)
    return Pattern(spec, lits, icase, rx)


def compile_rule(spec: RuleSpec, validate: bool = True) -> CompiledRule:
    def comp(ps: tuple[PatternSpec, ...]) -> tuple[Pattern, ...]:
        return tuple(compile_pattern(p, spec.path, spec.id, validate) for p in ps)

    return CompiledRule(spec, comp(spec.any), comp(spec.all), comp(spec.not_))

