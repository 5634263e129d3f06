"""The start path: a command built alone says exactly what the whole command tree would."""

from __future__ import annotations

import contextlib
import io

import pytest
import typer

from logsense import cli

COMMANDS = [info.name or info.callback.__name__.replace("_", "-") for info in cli.app.registered_commands]


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
