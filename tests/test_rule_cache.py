"""The compiled-pack cache can only make loading slower, never wrong: whatever its state, the rules are the same."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from logsense import cache as store
from logsense.rules import cache, load_rules
from logsense.taxonomy import causes


def _plain(rs) -> tuple:
    return [cache.encode(r) for r in rs.rules], [cache.encode(p) for p in rs.phases], rs.sources


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> Path:
    """A copy of the bundled packs: what the tests compare stays put while the packs are being edited."""
    import shutil

    from logsense.rules import bundled_rules_dir

    copy = tmp_path_factory.mktemp("packs") / "rules"
    shutil.copytree(bundled_rules_dir(), copy)
    return copy


@pytest.fixture(autouse=True)
def _bundled(packs, monkeypatch):
    monkeypatch.setattr("logsense.rules.bundled_rules_dir", lambda: packs)


@pytest.fixture
def reference(_bundled):
    """The rules as parsed from the YAML, no cache involved."""
    old = os.environ.get("LOGSENSE_NO_CACHE")
    os.environ["LOGSENSE_NO_CACHE"] = "1"
    try:
        return _plain(load_rules())
    finally:
        if old is None:
            del os.environ["LOGSENSE_NO_CACHE"]
        else:
            os.environ["LOGSENSE_NO_CACHE"] = old


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("LOGSENSE_NO_CACHE", raising=False)
    return tmp_path / "logsense" / "entries"


def _entries(home: Path) -> list[Path]:
    return sorted(home.glob("*.bin"))


def test_a_warm_cache_gives_the_same_rules(home, reference):
    assert _plain(load_rules()) == reference  # cold: parses and stores
    assert len(_entries(home)) >= 10
    assert _plain(load_rules()) == reference  # warm: every pack from the cache


def test_the_cache_is_used(home, reference, monkeypatch):
    load_rules()
    import logsense.rules.loader as loader

    def refuse(*_a, **_k):
        raise AssertionError("a cached pack was parsed again")

    monkeypatch.setattr(loader, "read_yaml", refuse)
    monkeypatch.setattr("logsense.rules.load_pack", refuse)
    assert _plain(load_rules()) == reference


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "flipped", "other-entry", "old-schema"])
def test_a_damaged_entry_is_a_miss(home, reference, damage):
    import marshal

    load_rules()
    files = _entries(home)
    for f in files:
        blob = f.read_bytes()
        if damage == "garbage":
            f.write_bytes(os.urandom(len(blob)))
        elif damage == "truncated":
            f.write_bytes(blob[: len(blob) // 2])
        elif damage == "empty":
            f.write_bytes(b"")
        elif damage == "flipped":
            f.write_bytes(blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:])
        elif damage == "other-entry":  # a well-formed entry under the wrong name (a wrong hash)
            f.write_bytes(files[(files.index(f) + 1) % len(files)].read_bytes() if len(files) > 1 else b"")
        elif damage == "old-schema":
            (_schema, name), value = marshal.loads(blob[32:])
            body = marshal.dumps(((store.SCHEMA - 1, name), value))
            f.write_bytes(store.digest_of(body) + body)
    assert _plain(load_rules()) == reference
    assert _plain(load_rules()) == reference  # and the entries were rewritten good


def test_a_well_formed_entry_of_wrong_content_is_refused(home, reference):
    """An entry that marshal reads but that holds other types than the codec's is a miss, not a rule."""
    load_rules()
    for f in _entries(home):
        import marshal

        (header, _value) = marshal.loads(f.read_bytes()[32:])
        body = marshal.dumps((header, [("\0logsense", 0, "NotAType", 1, 2)]))
        f.write_bytes(store.digest_of(body) + body)
    assert _plain(load_rules()) == reference


def test_an_edited_pack_is_read_again(home, tmp_path):
    pack = tmp_path / "extra.yaml"
    pack.write_text(_PACK.format(title="first"))
    assert load_rules(only=[str(pack)]).get("cache-test-rule").spec.title == "first"
    pack.write_text(_PACK.format(title="second"))
    assert load_rules(only=[str(pack)]).get("cache-test-rule").spec.title == "second"


def _parts(entry: Path) -> Path:
    """The parts file an entry names (a path that does not exist when it has none)."""
    return next(entry.parent.glob(f"{entry.stem}.*.parts"), entry.with_suffix(".none.parts"))


def _set_entry(home: Path) -> tuple[Path, tuple, tuple]:
    """The whole-set entry (the one with parts beside it): its file, header and value."""
    import marshal

    f = next(e for e in _entries(home) if _parts(e).exists())
    header, value = marshal.loads(f.read_bytes()[32:])
    return f, header, value


def test_a_kept_rule_set_alone_is_enough_and_decodes_rules_when_used(home, reference, monkeypatch):
    """A warm start reads one entry; a rule is decoded when the analysis first reaches it."""
    load_rules()
    f, _header, _value = _set_entry(home)
    for other in _entries(home):
        if other != f:
            other.unlink()
    import logsense.rules.loader as loader

    def refuse(*_a, **_k):
        raise AssertionError("a pack was parsed again")

    monkeypatch.setattr(loader, "read_yaml", refuse)
    monkeypatch.setattr("logsense.rules.load_pack", refuse)
    rs = load_rules()
    assert isinstance(rs.rules, cache.LazyRules) and all(r is None for r in rs.rules._rules)
    some = rs.rules.ids[len(rs.rules) // 2]
    assert rs.get(some).id == some and sum(r is not None for r in rs.rules._rules) == 1
    assert _plain(rs) == reference


def test_a_kept_rule_that_does_not_decode_is_read_from_its_pack(home, reference):
    """A part whose bytes are damaged, and one well formed but not the rule kept there: each is read again."""
    import marshal

    load_rules()
    f, header, (kept, token, index) = _set_entry(home)
    parts = _parts(f)
    data = bytearray(parts.read_bytes())
    data[3] ^= 0xFF  # in the first rule's bytes: its digest no longer matches
    first = index[0][0]
    wrong = marshal.dumps(("\0logsense", 0, "NotAType", 1))  # the second rule's place, with a good digest
    data[first : first + index[1][0]] = wrong
    index = [index[0], (len(wrong), store.digest_of(wrong)), *index[2:]]
    parts.write_bytes(bytes(data))
    body = marshal.dumps((header, (kept, token, index)))
    f.write_bytes(store.digest_of(body) + body)
    rs = load_rules()
    assert isinstance(rs.rules, cache.LazyRules)
    assert _plain(rs) == reference


def _first_part_damaged(home: Path) -> tuple[Path, Path]:
    """A kept set whose first rule's bytes no longer match their digest: its entry and parts files."""
    load_rules()
    f, _header, _value = _set_entry(home)
    parts = _parts(f)
    data = bytearray(parts.read_bytes())
    data[3] ^= 0xFF
    parts.write_bytes(bytes(data))
    return f, parts


def test_a_damaged_part_drops_the_entry_for_the_next_start(home, reference):
    f, parts = _first_part_damaged(home)
    rs = load_rules()
    rs.rules[0]  # read from its pack; the entry is dropped
    assert not f.exists() and not parts.exists()
    assert _plain(rs) == reference
    load_rules()
    assert _set_entry(home)[0].exists()  # kept again, whole


def test_a_damaged_part_of_a_pack_edited_since_is_an_error_not_another_rule(home, packs):
    """The set's other rules and its literal index are the pack as it was loaded: a rule read from the pack as
    it is now could be another one."""
    from logsense.errors import RuleErrors

    _first_part_damaged(home)
    rs = load_rules()
    pack = Path(next(p for p in (packs / "common").glob("*.yaml") if rs.rules.ids[0] in p.read_text()))
    original = pack.read_bytes()
    try:
        pack.write_bytes(original + b"\n")
        with pytest.raises(RuleErrors, match="changed since the rules were loaded"):
            rs.rules[0]
    finally:
        pack.write_bytes(original)


def test_the_code_a_kept_set_depends_on_is_in_its_key():
    import logsense.prefilter
    import logsense.rules

    assert {Path(logsense.rules.__file__), Path(logsense.prefilter.__file__)} <= set(cache._CODE)


def test_missing_parts_are_a_miss(home, reference):
    load_rules()
    f, _header, _value = _set_entry(home)
    _parts(f).unlink()
    rs = load_rules()
    assert _plain(rs) == reference


def test_a_kept_rule_set_shows_where_its_packs_are_now(home, packs, tmp_path, monkeypatch):
    """The same bytes elsewhere: the kept set names the files it was loaded from this time."""
    import shutil

    load_rules()
    moved = tmp_path / "moved" / "rules"
    shutil.copytree(packs, moved)
    monkeypatch.setattr("logsense.rules.bundled_rules_dir", lambda: moved)
    rs = load_rules()
    assert isinstance(rs.rules, cache.LazyRules)
    assert all(s.startswith(str(moved)) for s in rs.sources)
    assert {r.spec.path for r in rs.rules} <= set(rs.sources) and rs.rules[0].spec.path.startswith(str(moved))


def test_the_path_is_the_one_read_now(home, tmp_path):
    """The same bytes in two places: each rule names the file it was loaded from."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(_PACK.format(title="x"))
    b.write_text(_PACK.format(title="x"))
    assert load_rules(only=[str(a)]).get("cache-test-rule").spec.path.endswith("a.yaml")
    assert load_rules(only=[str(b)]).get("cache-test-rule").spec.path.endswith("b.yaml")


def test_a_pack_with_problems_is_never_cached(home, tmp_path):
    from logsense.errors import RuleErrors

    pack = tmp_path / "bad.yaml"
    pack.write_text(_PACK.format(title="x").replace("cause: cuda_oom_weight_loading", "cause: no_such_cause"))
    for _ in range(2):  # reported each time, not only the first
        with pytest.raises(RuleErrors, match="no_such_cause"):
            load_rules(only=[str(pack)])


def test_no_cache_writes_nothing(home, reference, monkeypatch):
    monkeypatch.setenv("LOGSENSE_NO_CACHE", "1")
    assert _plain(load_rules()) == reference
    assert not home.exists()


def test_an_unwritable_cache_dir_only_costs_time(tmp_path, monkeypatch, reference):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # logsense/ cannot be made under a file
    monkeypatch.delenv("LOGSENSE_NO_CACHE", raising=False)
    assert _plain(load_rules()) == reference


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes")
def test_a_read_only_cache_dir_only_costs_time(tmp_path, monkeypatch, reference):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("LOGSENSE_NO_CACHE", raising=False)
    tmp_path.chmod(0o500)
    try:
        assert _plain(load_rules()) == reference
    finally:
        tmp_path.chmod(0o700)


def test_the_taxonomy_is_the_same_from_the_cache(home):
    causes.cache_clear()
    try:
        cold = causes()
        causes.cache_clear()
        assert causes() == cold
        assert "cuda_oom_weight_loading" in cold
    finally:
        causes.cache_clear()


def test_values_the_codec_cannot_keep_are_not_stored(home):
    import datetime

    from logsense.rules.loader import FixSpec

    fix = FixSpec("flag", "--x", None, {"since": (datetime.date(2026, 1, 1),)}, None)
    cache.store("odd", [fix])
    assert cache.load("odd") is None


_PACK = """\
rules:
  - id: cache-test-rule
    cause: cuda_oom_weight_loading
    role: root
    title: {title}
    explanation: A test rule.
    match:
      any: ['CUDA out of memory\\. Tried to allocate']
    fixes:
      - kind: flag
        value: --mem-fraction-static 0.8
    examples:
      match: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB']
      no_match: ['all good']
"""


def test_a_kept_regex_is_used_only_for_its_own_text_and_regex_version():
    import marshal

    import regex

    from logsense.rules.compile import Pattern
    from logsense.rules.loader import PatternSpec

    def spec(text: str) -> PatternSpec:
        return PatternSpec(text, 1, 1, "match.any[0]")

    kept = Pattern(spec(r"CUDA out of (?P<what>memory)"), (), False).freeze()
    assert Pattern(spec(r"CUDA out of (?P<what>memory)"), (), False, frozen=kept).regex.search("CUDA out of memory")
    other_text = Pattern(spec(r"NCCL error"), (), False, frozen=kept)  # a kept form of another pattern
    assert other_text.regex.pattern == "NCCL error"
    _version, data = marshal.loads(kept)
    old = Pattern(spec(r"CUDA out of (?P<what>memory)"), (), False, frozen=marshal.dumps(("0.0", data)))
    assert old.regex.search("CUDA out of memory")["what"] == "memory"
    for junk in (b"", b"junk", marshal.dumps((regex.__version__, ("x",)))):
        assert Pattern(spec("abc"), (), False, frozen=junk).regex.search("xabc")


# The stdlib-regex table (logsense/re_cache.py): a kept pattern is the very one re.compile makes.

_PATTERNS = [(r"\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] (?P<msg>.*)", 0), (r"error|fail(?:ed|ure)", 2),
             (r"(?<=_)(?:DP|TP)\d+", 0), (r"\b(TP|DP)\d+\b|\b(rank|gpu)([ =:_]?)\d+\b", 2)]


@pytest.fixture
def re_table(home, monkeypatch):
    """A fresh process's view of the table: nothing read yet, nothing made."""
    from logsense import re_cache

    def fresh():
        monkeypatch.setattr(re_cache, "_table", None)
        monkeypatch.setattr(re_cache, "_folder", None)
        monkeypatch.setattr(re_cache, "_used", {})
        monkeypatch.setattr(re_cache, "_added", False)
        monkeypatch.setattr("atexit.register", lambda fn: None)  # the test writes the table itself

    fresh()
    return re_cache, fresh


def _same(a, b) -> None:
    import re

    assert a == b and a.groupindex == b.groupindex and a.groups == b.groups and isinstance(a, re.Pattern)
    for text in ("[2026-01-02 03:04:05] TP3 failed", "x_DP12 rank 4 ERROR", "nothing"):
        assert [m.groups() for m in a.finditer(text)] == [m.groups() for m in b.finditer(text)]


def test_a_kept_re_pattern_is_the_one_re_compiles(re_table, monkeypatch):
    import re

    re_cache, fresh = re_table
    for p, f in _PATTERNS:
        _same(re_cache.compile(p, f), re.compile(p, f))
    re_cache._store()
    fresh()
    monkeypatch.setattr(re, "compile", lambda *_a: pytest.fail("a kept pattern was compiled again"))
    built = [re_cache.compile(p, f) for p, f in _PATTERNS]
    monkeypatch.undo()
    for (p, f), b in zip(_PATTERNS, built, strict=True):
        _same(b, re.compile(p, f))


@pytest.mark.parametrize("damage", ["code", "other-text", "not-a-tuple", "bad-groups"])
def test_a_wrong_re_entry_is_compiled_afresh(re_table, damage):
    import re

    from logsense import cache as store

    re_cache, fresh = re_table
    for p, f in _PATTERNS:
        re_cache.compile(p, f)
    re_cache._store()
    name = re_cache._name()
    table = store.load(name)
    for key, form in list(table.items()):
        if damage == "code":
            table[key] = (form[0], form[1], [99999] * len(form[2]), *form[3:])
        elif damage == "other-text":  # the form of another pattern under this key
            table[key] = table[(_PATTERNS[0][0], _PATTERNS[0][1])] if key[0] != _PATTERNS[0][0] else \
                table[(_PATTERNS[1][0], _PATTERNS[1][1])]
        elif damage == "not-a-tuple":
            table[key] = list(form)
        elif damage == "bad-groups":
            table[key] = (*form[:3], 10**9, *form[4:])
    store.store(name, table)
    fresh()
    for p, f in _PATTERNS:
        _same(re_cache.compile(p, f), re.compile(p, f))


def test_no_cache_keeps_no_re_table(re_table, monkeypatch):
    import re

    re_cache, fresh = re_table
    monkeypatch.setenv("LOGSENSE_NO_CACHE", "1")
    for p, f in _PATTERNS:
        _same(re_cache.compile(p, f), re.compile(p, f))
    assert re_cache._used == {}


def test_examples_kept_for_later_are_the_parsed_ones(home, reference):
    """A rule's examples are decoded when first read; those that cannot be are read from the pack again."""
    import marshal

    load_rules()
    warm = load_rules()
    assert all("examples" in r.spec._pending for r in warm.rules)  # not decoded yet
    assert _plain(warm) == reference  # reading them decodes them
    for f in _entries(home):  # every kept examples tuple replaced by one that does not decode
        (header, value) = marshal.loads(f.read_bytes()[32:])
        body = marshal.dumps((header, _spoil_examples(value)))
        f.write_bytes(store.digest_of(body) + body)
    assert _plain(load_rules()) == reference


def _spoil_examples(value):
    """An entry whose rules' examples are a tagged tuple of an unknown kind."""
    from logsense.rules.loader import RuleSpec

    at = 3 + RuleSpec._fields.index("examples")

    def walk(v):
        if isinstance(v, tuple) and len(v) > at and v[:3] == (cache._TAG, cache._VALUE, "RuleSpec"):
            return (*v[:at], (cache._TAG, cache._TUPLE, (cache._TAG, 99)), *v[at + 1:])
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


def test_the_re_table_goes_back_only_where_it_came_from(re_table, tmp_path, monkeypatch):
    """At exit the environment may name another cache dir (a test run restores the user's): nothing is written there."""
    re_cache, _fresh = re_table
    re_cache.compile(*_PATTERNS[0])
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("XDG_CACHE_HOME", str(elsewhere))
    re_cache._store()
    assert not elsewhere.exists()


def test_few_entries_with_parts_are_kept(home):
    """A whole rule set is ~1 MB: only the newest few are kept, each with its entry."""
    for i in range(store.KEEP_PARTS + 3):
        store.store_parts(f"set{i}", i, [b"x" * 10])
        os.utime(_parts(home / f"set{i}.bin"), (i, i))
    store.store_parts("last", 0, [b"y"])
    kept = sorted(p.name.split(".")[0] for p in home.glob("*.parts"))
    assert len(kept) == store.KEEP_PARTS and "last" in kept and "set0" not in kept
    assert sorted(p.stem for p in home.glob("*.bin")) == kept
    assert store.load_parts("last")[1][0] == b"y" and store.load_parts("set0") is None


def test_two_processes_keeping_one_entry_each_pair_their_own_parts(home):
    """Parts written by one process, the entry by another: the entry names the parts it was written with."""
    store.store_parts("same", "a", [b"from a"])
    a_entry = (home / "same.bin").read_bytes()
    store.store_parts("same", "b", [b"from b"])  # b's parts and entry
    (home / "same.bin").write_bytes(a_entry)  # a's entry lands last, after b removed a's parts
    assert store.load_parts("same") is None  # a miss, not b's parts under a's digests
    store.store_parts("same", "c", [b"from c"])
    value, parts = store.load_parts("same")
    assert value == "c" and parts[0] == b"from c" and len(list(home.glob("same.*.parts"))) == 1
