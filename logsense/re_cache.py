"""Stdlib `re` patterns rebuilt from the code `re` compiled them to, kept in the user's cache (logsense.cache).

`re.compile` parses a pattern and generates its matching code in Python, ~0.15 ms a pattern,
and a short run meets ~70 of them (normalize's, framing's, the facts', the classifier's):
a tenth of its start. That code is a list of numbers; `_sre.compile` builds the pattern from
it in microseconds, as `re` itself does as its last step. So a table of them is kept, one per
Python build: a pattern found there is built from its code, any other is compiled by `re` and
added to the table when the process exits.

It can only be slower, never wrong: an entry is added only when the pattern it builds equals
the one `re.compile` made (patterns compare by flags, text and code; groups are compared too),
and the table comes through logsense.cache (digest-checked, under a name that holds the Python
build and `_sre`'s format). Reading it, an entry is used only for its own text and flags, its
group count must fit its group names, and `_sre` refuses code that is not well-formed; any
entry it cannot build is a miss. For fixed patterns only: a pattern made from input would
grow the table with every run.
"""

from __future__ import annotations

import re
from typing import Any

MAX_ENTRIES = 2048  # past this the table keeps only what the last process used

_table: dict[tuple[str, int], tuple[Any, ...]] | None = None  # the kept table, read on first use
_folder: Any = None  # the cache dir it was read from: the only one it is written back to
_used: dict[tuple[str, int], tuple[Any, ...]] = {}  # the forms this process built or found
_added = False  # a form not in the kept table was made: the table is written at exit


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`: the same pattern, built from its kept code when the table has it."""
    flags = int(flags)
    key = (pattern, flags)
    form = _kept().get(key)
    if form is not None:
        try:
            compiled = _build(form, pattern)
            _used[key] = form
            return compiled
        except (TypeError, ValueError, RuntimeError, OverflowError, IndexError):
            pass  # not a form this Python can build: compiled afresh below, and replaced
    compiled = re.compile(pattern, flags)
    if _table is not None and not flags & re.DEBUG:
        form = _form(pattern, flags, compiled)
        if form is not None:
            _remember(key, form)
    return compiled


def _build(form: tuple[Any, ...], pattern: str) -> re.Pattern[str]:
    import _sre  # type: ignore[import-not-found]  # re's own engine, without stubs

    if type(form) is not tuple or len(form) != 6 or form[0] != pattern:
        raise TypeError("not this pattern's form")
    _, _, _, groups, groupindex, indexgroup = form
    # _sre checks the code against the group count, not the count against the names: the names must fit
    if (type(indexgroup) is not tuple or groups != len(indexgroup) - 1 or type(groupindex) is not dict
            or any(type(i) is not int or not 0 < i <= groups or indexgroup[i] != name for name, i in groupindex.items())
            or sum(name is not None for name in indexgroup) != len(groupindex)):
        raise ValueError("groups that do not fit the pattern's names")
    return _sre.compile(*form)


def _form(pattern: str, flags: int, compiled: re.Pattern[str]) -> tuple[Any, ...] | None:
    """The arguments `re` gives `_sre.compile` for this pattern (as `re._compiler.compile` makes them), when
    they build the very pattern `re.compile` made; None when they do not or this Python's `re` differs."""
    try:
        from re import _compiler, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern, flags)
        code = [int(c) for c in _compiler._code(parsed, flags)]
        groupindex = dict(parsed.state.groupdict)
        indexgroup = [None] * parsed.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        form = (pattern, int(flags | parsed.state.flags), code, parsed.state.groups - 1, groupindex,
                tuple(indexgroup))
        rebuilt = _build(form, pattern)
    except Exception:  # noqa: BLE001 - another Python's `re` internals: nothing is kept, `re` compiles each time
        return None
    same = (rebuilt == compiled and rebuilt.groups == compiled.groups
            and dict(rebuilt.groupindex) == dict(compiled.groupindex))
    return form if same else None


def _kept() -> dict[tuple[str, int], tuple[Any, ...]]:
    global _table, _folder
    if _table is None:
        from logsense import cache

        _folder = cache.cache_dir()
        if _folder is None:
            return {}  # no cache: nothing to read, nothing worth making forms for
        kept = cache.load(_name())
        _table = kept if isinstance(kept, dict) else {}
    return _table


def _name() -> str:
    import _sre

    from logsense import cache

    return cache.key("re", f"sre {_sre.MAGIC} {_sre.CODESIZE} {_sre.MAXREPEAT} {_sre.MAXGROUPS}".encode())


def _remember(key: tuple[str, int], form: tuple[Any, ...]) -> None:
    global _added
    _used[key] = form
    if not _added:
        import atexit

        atexit.register(_store)
        _added = True


def _store() -> None:
    """Write the table: the kept one (as another process may have left it meanwhile) with this process's forms.

    Only into the cache dir it was read from: at exit the environment may name another (a test
    run's private dir is gone by then, and the user's own must not get what the tests made)."""
    from logsense import cache

    if cache.cache_dir() != _folder:
        return
    name = _name()
    kept = cache.load(name)
    table = kept if isinstance(kept, dict) else {}
    table.update(_used)
    if len(table) > MAX_ENTRIES:
        table = dict(_used)
    cache.store(name, table)
