"""The command line: every command's options and help (typer), the entry point and its error boundary.

typer (with its click) costs more to import than a short run takes, so this module does not import
it: the annotations below are strings (PEP 563) that typer evaluates only when it builds the
commands (`_typer_app`), and a plain command line of a command in logsense/cli_spec.py (the
options as typer defines them here, generated) is parsed from that spec and calls the same
function. Anything else (help, a typo, `--`, a missing value) goes to typer, which says it best.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Optional

from logsense import __version__
from logsense.report import formats
from logsense.servers import SERVERS

if TYPE_CHECKING:
    import typer
    from typer._click import Command as ClickCommand  # the click that typer carries

    from logsense.cli_options import OnlyOpt, RulesFormatOpt, RulesOpt

# What the app and a command built alone (see `_command`) share.
_SETTINGS = {
    "add_completion": False,
    "rich_markup_mode": None,
    "pretty_exceptions_enable": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},  # every subcommand inherits -h
}
# Every command's function by its full name ("analyze", "rules list"), with what typer's
# `command()` is to be given for it: the one registry both typer and the spec's parser use.
COMMANDS: dict[str, tuple[Callable[..., int], dict[str, Any]]] = {}


def _command_def(name: str | None = None, group: str | None = None, **settings: Any) -> Callable:
    def register(fn: Callable[..., int]) -> Callable[..., int]:
        full = name or fn.__name__.replace("_", "-")
        COMMANDS[f"{group} {full}" if group else full] = (fn, settings)
        return fn

    return register


def _version(value: bool) -> None:
    if value:
        import typer

        print(f"logsense {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    """logsense reads startup logs from files, stdin or journald; fixes are advice: it never runs them."""


@_command_def()
def analyze(
    paths: Annotated[list[str], typer.Argument(help="Log files (plain or .gz); '-' reads stdin.", metavar="FILE|-")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats.DIAGNOSIS.help())] = "text",
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
    no_rules: Annotated[bool, typer.Option("--no-rules", help="Use no rules: the learned classifier alone.")] = False,
    no_classifier: Annotated[bool, typer.Option("--no-classifier", help="Never consult the learned classifier.")] = False,
    baseline: Annotated[
        Optional[str], typer.Option("--baseline", help="Healthy logs (dir): show lines never seen in them when no rule knows.")
    ] = None,
) -> int:
    """Diagnose a recorded startup log: root cause, evidence, fix. Exit 1 when a failure is found."""
    formats.DIAGNOSIS.check(fmt)
    from logsense.commands import analyze as cmd

    return cmd.main(paths, fmt, rules, only_rules, no_rules, not no_classifier, baseline)


@_command_def(context_settings={"help_option_names": ["-h", "--help"]})
def tail(
    target: Annotated[Optional[str], typer.Argument(help="A systemd unit, or a log file path to follow.")] = None,
    unit: Annotated[Optional[str], typer.Option("--unit", "-u", help="The systemd unit (as journalctl -u).")] = None,
    until_ready: Annotated[bool, typer.Option("--until-ready", help="Exit 0 at ready, 1 on failure, 3 at --timeout.")] = False,
    timeout: Annotated[Optional[str], typer.Option("--timeout", help="Give up after this long, exit 3: e.g. 20m, 90s, 1h.")] = None,
    fmt: Annotated[str, typer.Option("--format", help=formats.LIVE.help())] = "text",
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep following (the default; as journalctl -f).")] = False,
    file: Annotated[Optional[list[str]], typer.Option("--file", help="Read this journal file (as journalctl --file).")] = None,
    directory: Annotated[Optional[str], typer.Option("--directory", "-D", help="Read journal files in this dir.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", "-S", help="Start at this time (journalctl syntax).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", "-U", help="Stop at this time (journalctl syntax).")] = None,
    boot: Annotated[Optional[str], typer.Option("--boot", "-b", help="Only this boot (journalctl syntax).")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="State file: continue where the last run stopped.")] = None,
    from_start: Annotated[bool, typer.Option("--from-start", help="Read every startup (the whole file or journal), not only the latest.")] = False,
    no_follow: Annotated[bool, typer.Option("--no-follow", help="Read what is there and stop.")] = False,
    probe: Annotated[Optional[str], typer.Option("--probe", help="With --until-ready: ready only when this server answers (e.g. http://127.0.0.1:30000).")] = None,
    probe_api: Annotated[str, typer.Option("--probe-api", help="chat (/v1/chat/completions) or generate (/generate).")] = "chat",
    probe_timeout: Annotated[str, typer.Option("--probe-timeout", help="Timeout of each probe request.")] = "10s",
    probe_tries: Annotated[int, typer.Option("--probe-tries", help="Probe at most this many times before exit 4.")] = 8,
    probe_every: Annotated[str, typer.Option("--probe-every", help="Time between two probes.")] = "15s",
    probe_any_host: Annotated[bool, typer.Option("--probe-any-host", help="Allow a --probe address that is not loopback.")] = False,
    no_classifier: Annotated[bool, typer.Option("--no-classifier", help="Never consult the learned classifier.")] = False,
    baseline: Annotated[
        Optional[str], typer.Option("--baseline", help="Healthy logs (dir): show lines never seen in them when no rule knows.")
    ] = None,
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Say which journal reader is used, and file rotations.")] = False,
) -> int:
    """Follow a unit's journal (from its latest start) or a file, showing the startup live.

    Exit: 0 ready (--until-ready), 1 failure or the unit stopped, 2 bad input, 3 --timeout or
    the input ended first, 4 the log says ready but --probe gets no answer, 130 Ctrl-C.
    LOGSENSE_JOURNAL_BACKEND=systemd|journalctl picks the journal reader (default: systemd-python if installed).
    """
    formats.LIVE.check(fmt)
    if follow and no_follow:
        from logsense.errors import UsageError

        raise UsageError("-f/--follow and --no-follow: give one")
    from logsense.commands import tail as cmd

    return cmd.main(target=target, until_ready=until_ready, timeout=timeout, fmt=fmt, files=file or [],
                    directory=directory, since=since, until=until, boot=boot, resume=resume,
                    from_start=from_start, follow=not no_follow, rules=rules, only_rules=only_rules,
                    verbose=verbose, unit=unit, probe=probe, probe_api=probe_api,
                    probe_timeout=probe_timeout, probe_tries=probe_tries, probe_every=probe_every,
                    probe_any_host=probe_any_host, classifier=not no_classifier, baseline=baseline)


@_command_def(context_settings={"help_option_names": ["-h", "--help"]})
def history(
    target: Annotated[Optional[str], typer.Argument(help="A systemd unit, or a log file.")] = None,
    unit: Annotated[Optional[str], typer.Option("--unit", "-u", help="The systemd unit (as journalctl -u).")] = None,
    file: Annotated[Optional[list[str]], typer.Option("--file", help="Read this journal file (as journalctl --file).")] = None,
    directory: Annotated[Optional[str], typer.Option("--directory", "-D", help="Read journal files in this dir.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", "-S", help="Only startups from this time (journalctl syntax).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", "-U", help="Up to this time (journalctl syntax).")] = None,
    boot: Annotated[Optional[str], typer.Option("--boot", "-b", help="Only this boot (journalctl syntax).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats.HISTORY.help())] = "table",
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
) -> int:
    """One row per startup attempt: when, outcome, phase, root cause, time taken, flags changed since the previous one.

    Exit 0 when the latest attempt became ready, 1 when it failed or stopped, 3 when it is not ready yet, 2 bad input.
    """
    formats.HISTORY.check(fmt)
    from logsense.commands import history as cmd

    return cmd.main(target=target, unit=unit, files=file or [], directory=directory, since=since,
                    until=until, boot=boot, fmt=fmt, rules=rules, only_rules=only_rules)


@_command_def()
def check(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Incident logs, label files, rule packs or dirs of them.")] = None,
    rules: Annotated[
        Optional[list[str]],
        typer.Option("--rules", help="A rule pack (dir/file) to check; loaded beside the bundled ones (repeatable)."),
    ] = None,
    corpus: Annotated[Optional[list[str]], typer.Option("--corpus", help="A corpus dir of labelled incident logs.")] = None,
    only_rules: OnlyOpt = None,
    precision: Annotated[bool, typer.Option("--precision", help="Then one line a rule: how often it named a root "
                                            "cause on the incidents, and how often that was the labelled one.")] = False,
) -> int:
    """Prove the knowledge holds: incidents diagnosed as labelled, rule examples pass, no false alarms.

    Prints one `path:line: message` line a problem, then a summary; exit 1 on any problem,
    2 on unreadable input.
    """
    from logsense.commands import check as cmd

    return cmd.main(paths or [], rules or [], corpus or [], only_rules, precision)


@_command_def()
def label(
    incident: Annotated[str, typer.Argument(help="The incident log to label.")],
    cause: Annotated[str, typer.Option("--cause", help="A cause id from the taxonomy.")],
    fix: Annotated[Optional[list[str]], typer.Option("--fix", help="A token the suggested fix must contain (repeatable).")] = None,
    phase: Annotated[Optional[str], typer.Option("--phase", help="The phase the failure happened in.")] = None,
    source: Annotated[Optional[str], typer.Option("--source", help="Where the log came from (URL or words).")] = None,
    origin: Annotated[str, typer.Option("--origin", help="recorded or constructed.")] = "recorded",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing label file.")] = False,
) -> int:
    """Write the label file for an incident log, checking the cause id exists."""
    from logsense.commands import label as cmd

    return cmd.main(incident, cause, fix or [], phase, source, origin, force)


@_command_def()
def train(
    corpus: Annotated[list[str], typer.Argument(help="Corpus dirs of labelled logs.")],
    output: Annotated[str, typer.Option("--output", "-o", help="Model directory to write.")] = "model",
    readme: Annotated[str | None, typer.Option(
        "--readme", help="Also rewrite the held-out table between the generated-table markers of this file.")] = None,
) -> int:
    """Fit the learned classifier on a labelled corpus, printing cross-validated metrics."""
    _needs_extra("learn", "numpy", "sklearn")
    from logsense.commands import learn as cmd

    return cmd.train(corpus, output, readme=readme)


@_command_def("eval")
def eval_(
    corpus: Annotated[list[str], typer.Argument(help="Corpus dirs of labelled logs.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats.EVALUATION.help()[:-1] + " (the README's table).")] = "text",
) -> int:
    """Per-cause precision / recall and the confusion matrix, split by incident source."""
    formats.EVALUATION.check(fmt)
    _needs_extra("learn", "numpy", "sklearn")
    from logsense.commands import learn as cmd

    return cmd.evaluate(corpus, fmt)


@_command_def()
def stats(
    paths: Annotated[list[str], typer.Argument(help="Logs: files, dirs, globs or archives.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats.STATS.help())] = "table",
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Worker processes (0: one per core).")] = 0,
) -> int:
    """One row per log (source, host, cause, phase, time to failure or ready, rule, fix) via pandas."""
    formats.STATS.check(fmt)
    from logsense.commands import stats as cmd

    return cmd.main(paths, fmt, output, jobs)


@_command_def()
def diff(
    good: Annotated[str, typer.Argument(help="A startup log that worked (plain or .gz).", metavar="GOOD")],
    bad: Annotated[str, typer.Argument(help="A startup log that failed; '-' reads stdin, <(command) works.",
                                       metavar="BAD")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats.DIFF.help())] = "text",
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
) -> int:
    """Where a good and a bad startup part ways: phases, new lines, differing facts, diagnoses.

    Exit 1 when the bad run failed or printed error-like lines the good one never did, else 0.
    """
    formats.DIFF.check(fmt)
    from logsense.commands import diff as cmd

    return cmd.main(good, bad, fmt, rules, only_rules)


@_command_def(group="rules", name="list")
def rules_list(rules: RulesOpt = None, only_rules: OnlyOpt = None, fmt: RulesFormatOpt = "text") -> int:
    """Every rule with its cause, role, priority and source."""
    formats.RULES.check(fmt)
    from logsense.commands import rules as cmd

    return cmd.list_rules(rules, only_rules, fmt)


@_command_def(group="rules", name="show")
def rules_show(rule_id: str, rules: RulesOpt = None, only_rules: OnlyOpt = None, fmt: RulesFormatOpt = "text") -> int:
    """What a rule matches, why, its fixes and its examples."""
    formats.RULES.check(fmt)
    from logsense.commands import rules as cmd

    return cmd.show(rule_id, rules, only_rules, fmt)


@_command_def(group="rules", name="test")
def rules_test(
    rule_id: Annotated[Optional[str], typer.Argument(help="Only this rule.")] = None,
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List passing examples too.")] = False,
) -> int:
    """Run every rule's own examples (and the phase examples); exit 1 on any failure."""
    from logsense.commands import rules as cmd

    return cmd.test(rules, only_rules, rule_id, verbose)


@_command_def(group="rules", name="export")
def rules_export(
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
) -> int:
    """Write the rule and phase patterns, one grep -E pattern a line (a `grep -E -f` file)."""
    from logsense.commands import rules as cmd

    return cmd.export(rules, only_rules)


@_command_def(group="rules", name="lint")
def rules_lint(rules: RulesOpt = None, only_rules: OnlyOpt = None) -> int:
    """Flag patterns the literal prefilter cannot narrow, and root rules without a fix."""
    from logsense.commands import rules as cmd

    return cmd.lint_cmd(rules, only_rules)


@_command_def(group="rules", name="coverage")
def rules_coverage(
    source: Annotated[str, typer.Argument(help="A wheel (.whl), an installed package or a source dir.")],
    package: Annotated[Optional[str], typer.Option("--package", help="Which package's startup-path data to use "
                                                   "(default: read from the wheel or dir name).")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="Startup-path and triage data (YAML) to use instead.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats.COVERAGE.help())] = "text",
    uncovered: Annotated[bool, typer.Option("--uncovered", help="List only messages no rule names a cause for.")] = False,
    budget: Annotated[float, typer.Option("--budget", help="Stop after this many seconds, saying what is left.")] = 900.0,
    rules: RulesOpt = None,
    only_rules: OnlyOpt = None,
) -> int:
    """Which rule knows each failure message on a package's startup path (read from its source, never imported)."""
    formats.COVERAGE.check(fmt)
    from logsense.commands import rules as cmd

    return cmd.coverage(source, package, config, fmt, uncovered, budget, rules, only_rules)


def _needs_extra(extra: str, *modules: str) -> None:
    """Say which pip extra a command needs, rather than fail on its first import."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        from logsense.errors import UsageError, install_hint

        raise UsageError(f"this command needs {', '.join(missing)}: {install_hint(extra)}")


def main() -> None:
    """Entry point: one error boundary, so the operator sees a message and an exit code, never a traceback."""
    import gc

    # The collector runs every 700 new objects; a start-up makes ~100k that live as long as the process
    # (modules, rules), and each collection scans them all again: every 20k, it scans them a few times.
    gc.set_threshold(20_000, 10, 10)
    if sys.stdout is None:  # started with descriptor 1 closed (`>&-`): the output goes nowhere, the exit code stays
        sys.stdout = open(os.devnull, "w")  # lives as long as the process
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    _exit(run(sys.argv[1:]))


def run(args: list[str]) -> int:
    """Run the command line `args` and return its exit code; every error ends here, as a message.

    The command runs inside this boundary, not inside Typer's: Typer would turn Ctrl-C into
    exit 130 and a closed pipe into exit 1 before the boundary ever saw them.
    """
    from logsense.errors import ExitCode, LogsenseError, verdict

    try:
        plain = parse_plain(list(args))
        if plain is not None:
            fn, kwargs = plain
            return fn(**kwargs)
        command, name, rest = _command(list(args))
        with command.make_context(name, rest) as ctx:
            command.invoke(ctx)
        return int(ExitCode.OK)
    except LogsenseError as e:
        _stderr(f"logsense: {e}")
        return int(e.exit_code)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        return verdict()  # the reader (`| head`) has all it wanted; a failure is still one
    except OSError as e:
        if e.errno in _WRITE_ERRNOS:
            _output_lost(e)
        elif e.errno in _PATH_ERRNOS and e.filename is not None:
            _stderr(f"logsense: cannot open {e.filename}: {e.strerror or e}")  # an output path (-o) or a file named in one
        else:
            return _crash(e)
        return max(verdict(), int(ExitCode.BAD_INPUT))
    except EOFError as e:
        _stderr(f"logsense: the input ended before it should have ({e or 'EOF'})")
        return int(ExitCode.BAD_INPUT)
    except Exception as e:  # noqa: BLE001 - the one place that turns a bug into a report, not a traceback
        code = _click_errors(e)  # typer's Exit (every command's end) and click's usage errors
        return code if code is not None else _crash(e)


def parse_plain(args: list[str]) -> tuple[Callable[..., int], dict[str, Any]] | None:
    """The command function and its keyword arguments for a plain command line, or None: typer's to parse.

    Plain: a command logsense/cli_spec.py lists, then its options (`--name value`, `--name=value`,
    `-x value`, flags) and arguments in any order, each single option once. The function's own
    defaults stand for what is not given, as they do when typer calls it.
    """
    from logsense.cli_spec import SPEC

    name = " ".join(args[:2])
    if name not in SPEC:
        name = args[0] if args else ""
    if name not in SPEC:
        return None
    spec: dict[str, Any] = SPEC[name]  # type: ignore[assignment]  # a literal of mixed values
    options: dict[str, tuple[str, str]] = spec["options"]
    rest = args[len(name.split()):]
    kwargs: dict[str, Any] = {}
    given: list[str] = []
    i = 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if token == "-" or not token.startswith("-"):
            given.append(token)
            continue
        opt, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if opt not in options:
            return None  # --help, --, a typo, -xVALUE: typer's messages
        dest, kind = options[opt]
        if kind in ("on", "off"):
            if eq or dest in kwargs:
                return None
            kwargs[dest] = kind == "on"
            continue
        if not eq:
            if i == len(rest) or (rest[i].startswith("-") and rest[i] != "-"):
                return None  # no value, or one that looks like an option: typer decides
            value = rest[i]
            i += 1
        try:
            converted: Any = {"str": str, "strs": str, "int": int, "float": float}[kind](value)
        except ValueError:
            return None
        if kind == "strs":
            kwargs.setdefault(dest, []).append(converted)
        elif dest in kwargs:
            return None
        else:
            kwargs[dest] = converted
    for dest, many, required in spec["arguments"]:
        if many:
            if given:
                kwargs[dest] = given
            given = []
        elif given:
            kwargs[dest] = given.pop(0)
        if required and dest not in kwargs:
            return None
    if given or not set(spec["required"]) <= kwargs.keys():
        return None
    return COMMANDS[name][0], kwargs


def __getattr__(name: str) -> Any:
    # `logsense.cli.app`: the typer app, built on first use (tests and tools read it)
    if name == "app":
        return _typer_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=1)
def _typer_app() -> typer.Typer:
    """The whole command tree as typer builds it from the definitions above."""
    import typer

    from logsense import cli_options

    # typer reads the string annotations in this module's namespace: give it what they name
    globals().update(typer=typer, **{n: getattr(cli_options, n) for n in cli_options.__all__})
    app = typer.Typer(
        name="logsense",
        help=f"Tells why an LLM inference server ({', '.join(s.title for s in SERVERS)}) failed to start, and how to fix it.",
        no_args_is_help=True,
        **_SETTINGS,  # type: ignore[arg-type]
    )
    app.callback()(_root)
    groups = {"rules": typer.Typer(help="List, show, test and export the rule packs.", no_args_is_help=True)}
    for title, group in groups.items():
        app.add_typer(group, name=title)
    for full, (fn, settings) in COMMANDS.items():
        *within, name = full.split()
        (groups[within[0]] if within else app).command(name, **settings)(_exits(fn))
    return app


def _exits(fn: Callable[..., int]) -> Callable[..., None]:
    """`fn` as typer runs it: its exit code raised, so that `app(...)` (click's standalone mode) exits with it."""
    import functools

    import typer

    @functools.wraps(fn)  # typer reads the parameters of `fn` through __wrapped__
    def command(**kwargs: Any) -> None:
        raise typer.Exit(fn(**kwargs))

    return command


def _command(args: list[str]) -> tuple[ClickCommand, str, list[str]]:
    """The click command for `args`, its name and its arguments.

    A top-level command is built alone from its own definition: building every command's
    options costs as much again as importing typer, and a run uses one. Anything else (a
    group, --help, --version, a typo) gets the whole tree, whose messages list the commands.
    """
    import typer

    app = _typer_app()
    name = args[0] if args else ""
    for info in app.registered_commands:
        if name and info.name == name:
            alone = typer.Typer(**_SETTINGS)  # type: ignore[arg-type]
            alone.registered_commands.append(info)
            return typer.main.get_command(alone), f"logsense {name}", args[1:]
    return typer.main.get_command(app), "logsense", args


def spec() -> dict[str, dict[str, Any]]:
    """What `parse_plain` needs of each command, read from the click commands typer builds: cli_spec.py's SPEC.

    A command with anything the plain parser does not do (a callback, an environment variable,
    a prompt, options of two values, a list argument before another) is left out: typer parses it.
    """
    import typer

    tree = typer.main.get_command(_typer_app())
    out: dict[str, dict[str, Any]] = {}
    for full in COMMANDS:
        command = tree
        for part in full.split():
            command = command.commands[part]  # type: ignore[attr-defined]
        entry: dict[str, Any] = {"options": {}, "arguments": [], "required": []}
        plain = True
        params: list[Any] = command.params  # click's Option and Argument
        for p in params:
            if p.callback is not None or p.envvar or getattr(p, "prompt", None) or p.nargs not in (1, -1):
                plain = False
            if p.param_type_name == "argument":
                if entry["arguments"] and entry["arguments"][-1][1]:
                    plain = False
                entry["arguments"].append((p.name, p.nargs == -1, p.required))
                continue
            if p.is_flag:
                plain = plain and p.is_bool_flag and not p.multiple
                kinds = [(p.opts, "on"), (p.secondary_opts, "off")]
            else:
                kind = {"text": "str", "str": "str", "integer": "int", "int": "int", "float": "float"}.get(p.type.name)
                if kind is None or p.nargs != 1 or p.count:
                    plain = False
                kinds = [(p.opts, "strs" if p.multiple else str(kind))]
            for names, kind in kinds:
                entry["options"].update({n: (p.name, kind) for n in names})
            if p.required:
                entry["required"].append(p.name)
        if plain:
            out[full] = entry
    return out


def write_spec(path: str) -> None:
    """Write logsense/cli_spec.py from `spec()` (`python3 -m logsense.cli --write-spec` does)."""
    from pprint import pformat

    text = f'"""{SPEC_DOC}"""\n\nSPEC = {pformat(spec(), width=108, sort_dicts=False)}\n'
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


SPEC_DOC = """Each command's options as typer defines them in logsense/cli.py, read by `parse_plain`: generated.

`python3 -m logsense.cli --write-spec` writes it again; tests/test_startup.py fails when it is stale.
"""


def _click_errors(e: Exception) -> int | None:
    # typer carries its own copy of click: recognise its errors by shape
    names = {c.__name__ for c in type(e).__mro__}
    if "Exit" in names and isinstance(getattr(e, "exit_code", None), int):
        return e.exit_code  # type: ignore[attr-defined]
    if "Abort" in names:
        return 130
    if "ClickException" in names and hasattr(e, "show"):
        e.show()
        return int(getattr(e, "exit_code", 2))
    return None


# errno values only a write gives: the output (a full disk, a quota, /dev/full) cannot take the report
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# errno values of a path the operator gave that cannot be opened (inputs say so as SourceError before this)
_PATH_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS})


def _output_lost(e: OSError) -> None:
    _stderr(f"logsense: cannot write the output: {e.strerror or e}")


def _stderr(msg: str) -> None:
    from logsense.normalize import clean

    try:
        sys.stderr.write(clean(msg.rstrip("\n")) + "\n")  # names and text from files: nothing a terminal obeys
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _crash(e: Exception) -> int:
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix="logsense-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(f"logsense {__version__}, python {sys.version.split()[0]}\nargv: {sys.argv}\n\n")
            traceback.print_exc(file=fh)
        _stderr(f"logsense: internal error: {type(e).__name__}: {e}\n  a report was written to {path}")
    except OSError:
        _stderr(f"logsense: internal error: {type(e).__name__}: {e}")
    return 70


def _exit(code: int) -> None:
    # A closed stdout (`| head`) must not turn into a traceback at interpreter exit.
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as e:
        if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
            from logsense.errors import ExitCode

            _output_lost(e)
            code = code or int(ExitCode.BAD_INPUT)  # the report is lost: never a silent success
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                     if t is not threading.main_thread()):
        sys.exit(code)  # the interpreter's own exit waits for them
    import atexit

    atexit._run_exitfuncs()  # what is registered to run at exit (the regex table, temporary files) still runs
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    # Tearing down every module and the thousands of rule objects (~7 ms) does nothing a finished run needs.
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-spec"]:
        write_spec(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_spec.py"))
    else:
        main()
