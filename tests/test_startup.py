"""The start path: a command built alone says what the whole tree says; a plain command line parsed
from the generated spec (logsense/cli_spec.py) calls the command exactly as typer would."""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from logsense import cli, cli_spec

COMMANDS = [info.name for info in cli.app.registered_commands]
SMALL = Path(__file__).resolve().parent.parent / "corpora" / "constructed" / "kv-pressure-page-size-64-tp8.log"


def _run(args: list[str], whole_tree: bool) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        if whole_tree:
            mp.setattr(cli, "_command", lambda a: (typer.main.get_command(cli.app), "logsense", a))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(args)
    return code, out.getvalue(), err.getvalue()


def test_every_top_level_command_is_built_alone():
    assert {"analyze", "tail", "diff", "check"} <= set(COMMANDS)
    for name in COMMANDS:
        command, prog, rest = cli._command([name, "x"])
        assert command.name == name and prog == f"logsense {name}" and rest == ["x"]


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("extra", [["--help"], ["-h"], ["--no-such-option"], []])
def test_a_command_alone_says_what_the_tree_says(name, extra):
    assert _run([name, *extra], whole_tree=False) == _run([name, *extra], whole_tree=True)


def test_the_spec_is_generated_from_the_typer_definitions(tmp_path):
    assert cli.spec() == cli_spec.SPEC
    written = tmp_path / "cli_spec.py"
    cli.write_spec(str(written))
    assert written.read_text() == Path(cli_spec.__file__).read_text(), "stale: python3 -m logsense.cli --write-spec"
    assert {"analyze", "tail", "diff", "rules test"} <= cli_spec.SPEC.keys()


_SAMPLE = {"str": ["v"], "strs": ["a", "b"], "int": ["3"], "float": ["2.5"]}


def _command_lines(name: str) -> list[list[str]]:
    """Plain command lines that give every option of `name` once, by each of its names, around its arguments."""
    spec = cli_spec.SPEC[name]
    by_dest: dict[str, list[tuple[str, str]]] = {}
    for opt, (dest, kind) in spec["options"].items():
        by_dest.setdefault(dest, []).append((opt, kind))
    args = []
    for dest, many, _ in spec["arguments"]:
        args += [f"{dest}-1", f"{dest}-2"] if many else [f"{dest}-1"]
    lines = [[*name.split(), *args]] if not spec["required"] else []
    for which in (0, -1):  # every option by its first name, then by its last, long ones as --name=value
        given: list[list[str]] = []
        for names in by_dest.values():
            opt, kind = names[which]
            if kind in ("on", "off"):
                given.append([opt])
                continue
            for value in _SAMPLE[kind]:
                given.append([f"{opt}={value}"] if which and opt.startswith("--") else [opt, value])
        half = len(given) // 2
        lines.append([*name.split(), *sum(given[:half], []), *args, *sum(given[half:], [])])
    return lines


@pytest.mark.parametrize("name", sorted(cli_spec.SPEC))
def test_a_plain_command_line_calls_the_command_as_typer_does(name, monkeypatch):
    fn, settings = cli.COMMANDS[name]
    calls: list[tuple[str, dict]] = []

    def recorder(how: str):
        @functools.wraps(fn)
        def record(**kwargs):
            calls.append((how, inspect.signature(fn).bind(**kwargs).arguments))
            return 0
        return record

    for argv in _command_lines(name):
        calls.clear()
        monkeypatch.setitem(cli.COMMANDS, name, (recorder("plain"), settings))
        assert cli.parse_plain(argv) is not None, argv
        assert cli.run(argv) == 0
        monkeypatch.setitem(cli.COMMANDS, name, (recorder("typer"), settings))
        cli._typer_app.cache_clear()
        try:
            with monkeypatch.context() as mp:
                mp.setattr(cli, "parse_plain", lambda _args: None)
                assert cli.run(argv) == 0, argv
        finally:
            cli._typer_app.cache_clear()
        (how1, plain), (how2, typed) = calls
        assert (how1, how2) == ("plain", "typer")
        defaults = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
        assert {**defaults, **plain} == {**defaults, **typed}, argv


@pytest.mark.parametrize("argv", [
    [], ["--version"], ["--help"], ["analyze"], ["analyze", "-h"], ["analyze", "x", "--help"],
    ["analyze", "--", "x"], ["analyze", "--format"], ["analyze", "--format", "--rules", "x"],
    ["analyze", "--bogus", "x"], ["analyze", "-fjson", "x"], ["analyze", "--format", "json", "-f", "text", "x"],
    ["analyze", "--no-rules=1", "x"], ["tail", "a", "b"], ["tail", "-v", "-v", "x"], ["stats", "--jobs", "two", "p"],
    ["stats", "--jobs", "-1", "p"], ["label", "x.log"], ["diff", "good.log"], ["rules"], ["rules", "nope"],
])
def test_anything_else_is_typers_to_parse(argv):
    assert cli.parse_plain(argv) is None


def test_analyze_json_imports_no_typer_rich_or_parser():
    """`analyze --format json` imports neither the CLI framework nor the terminal drawing nor the rule parsers."""
    code = ("import sys\nfrom logsense.cli import run\n"
            f"code = run(['analyze', '--format', 'json', {str(SMALL)!r}])\n"
            "heavy = ('typer', 'click', 'rich', 'yaml', 'regex._regex_core', 'subprocess')\n"
            "print(code, sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n")
    run = [sys.executable, "-c", code]
    subprocess.run(run, capture_output=True, check=False)  # the rule packs' cache
    out = subprocess.run(run, capture_output=True, text=True, check=False).stdout.splitlines()[-1]
    assert out == "1 []"


@pytest.mark.parametrize("argv, code", [
    (["analyze", str(SMALL)], 1),
    (["tail", "--until-ready", str(SMALL.parent.parent / "healthy" / "k26-ddtree-ready.log")], 0),
])
def test_the_text_report_and_tails_view_import_no_rich(argv, code):
    """analyze's text report and tail's view are drawn without rich (nor the CLI framework, nor the rule parsers)."""
    program = ("import sys\nfrom logsense.cli import run\n"
               f"code = run({argv!r})\n"
               "heavy = ('typer', 'click', 'rich', 'yaml', 'regex._regex_core', 'subprocess')\n"
               "print(code, sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy), file=sys.stderr)\n")
    run = [sys.executable, "-c", program]
    subprocess.run(run, capture_output=True, check=False, timeout=120)  # the rule packs' cache
    p = subprocess.run(run, capture_output=True, text=True, check=False, timeout=120)
    assert p.stderr.splitlines()[-1] == f"{code} []", p.stderr
    assert p.stdout.strip()  # the report was drawn


def test_the_value_types_behave_as_frozen_dataclasses():
    """model's value types are written out, not generated: equal, hashed, shown, copied and pickled by their fields."""
    import pickle

    import pytest

    from logsense.model import Diagnosis, Evidence, FrozenError, Match, Origin, Record, Role, RuleProblem

    r = Record(3, "raw", "msg", rank="TP0")
    assert r == Record(3, "raw", "msg", rank="TP0") and hash(r) == hash(Record(3, "raw", "msg", rank="TP0"))
    assert r != Record(4, "raw", "msg", rank="TP0") and r != (3, "raw", "msg")
    assert repr(Evidence(1, "x")) == "Evidence(line=1, text='x')"
    assert pickle.loads(pickle.dumps(r)) == r
    with pytest.raises(FrozenError):
        r.line = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del r.raw  # type: ignore[misc]
    d = Diagnosis("c", "rule", True, Origin.RULE, 0.5, "t", "e", None, (Evidence(1, "x"),), ())
    changed = d.replace(confidence=0.9, explains=("s",))
    assert (changed.confidence, changed.explains, changed.title, d.confidence) == (0.9, ("s",), "t", 0.5)
    m = Match("r", "c", Role.ROOT, 1, 0.5, None, ())  # type: ignore[arg-type]
    assert m.captures == {} and m.captures is not Match("r", "c", Role.ROOT, 1, 0.5, None, ()).captures  # type: ignore[arg-type]
    assert RuleProblem("r", 1, "x") == RuleProblem("r", 1, "x") and RuleProblem.__hash__ is None
