"""Which literals a line holds: the cheap first test before any regex runs."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from logsense.memo import text_memo

K = TypeVar("K", bound=Hashable)


class LiteralIndex(Generic[K]):
    """Maps literals to keys; `keys_in(text)` returns the keys of every literal the text contains.

    One combined alternation answers "does the line hold any literal at all?" (almost every
    line does not); only lines that pass it are checked literal by literal. The answer is
    remembered per text: a log repeats its lines (each rank prints each one).
    """

    def __init__(self, entries: Iterable[tuple[str, bool, K]], always: Iterable[K] = (),
                 tables: tuple[dict[str, list[K]], dict[str, list[K]]] | None = None) -> None:
        """`tables`: the (case-sensitive, case-blind) maps another index's `tables` gave, instead of `entries`."""
        self._cs: dict[str, list[K]] = {}
        self._ci: dict[str, list[K]] = {}
        if tables is not None:
            self._cs, self._ci = tables
        for lit, icase, key in entries:
            (self._ci if icase else self._cs).setdefault(lit.lower() if icase else lit, []).append(key)
        self.always = tuple(dict.fromkeys(always))
        self._ac_cs = _automaton(self._cs)
        self._ac_ci = _automaton(self._ci)
        self._gates: tuple[re.Pattern | None, re.Pattern | None] | None = None  # built on first use, without the automata
        self._keys_in = text_memo(self._lookup)

    @property
    def literals(self) -> tuple[list[str], list[str]]:
        """(case-sensitive, case-blind) literals."""
        return list(self._cs), list(self._ci)

    @property
    def tables(self) -> tuple[dict[str, list[K]], dict[str, list[K]]]:
        """The (case-sensitive, case-blind) literal -> keys maps, for an index built again without its entries."""
        return self._cs, self._ci

    def keys_in(self, text: str) -> tuple[K, ...]:
        return self._keys_in(text)

    def _lookup(self, text: str) -> tuple[K, ...]:
        if self._ac_cs is not False and self._ac_ci is not False:
            return self._keys_ac(text)
        if self._gates is None:
            # a 700-literal alternation takes ~0.1 s to compile: only a run with no automaton pays it
            self._gates = (_gate(self._cs, 0), _gate(self._ci, re.IGNORECASE))
        gate_cs, gate_ci = self._gates
        found: list[K] = list(self.always)
        if gate_cs is not None and gate_cs.search(text):
            for lit, keys in self._cs.items():
                if lit in text:
                    found.extend(keys)
        if gate_ci is not None and gate_ci.search(text):
            low = text.lower()
            for lit, keys in self._ci.items():
                if lit in low:
                    found.extend(keys)
        return tuple(found)

    def _keys_ac(self, text: str) -> tuple[K, ...]:
        found: list[K] = list(self.always)
        for ac, hay in ((self._ac_cs, text), (self._ac_ci, None)):
            if ac is None:
                continue
            automaton, lists = ac
            seen = set()
            for i, _, _ in automaton.find_matches_as_indexes(text.lower() if hay is None else hay, overlapping=True):
                if i not in seen:
                    seen.add(i)
                    found.extend(lists[i])
        return tuple(found)


def _automaton(lits: dict[str, list[K]]):
    """An Aho-Corasick automaton over the literals (None: no literals; False: the package is missing)."""
    if not lits:
        return None
    try:
        import ahocorasick_rs
    except ImportError:
        return False
    names = list(lits)
    # built in half the default's time; only the lines the block scanner feeds are searched
    return ahocorasick_rs.AhoCorasick(names, implementation=ahocorasick_rs.Implementation.NoncontiguousNFA), \
        [lits[n] for n in names]


def _gate(lits: dict[str, list[K]], flags: int) -> re.Pattern | None:
    if not lits:
        return None
    # Longest first, so a literal that is a prefix of another does not hide it from search().
    return re.compile("|".join(re.escape(x) for x in sorted(lits, key=len, reverse=True)), flags)
