"""The message miner and the coverage report, on a small fixture package with its own rule pack."""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from logsense.coverage import Status, measure, mine
from logsense.coverage.config import load_config
from logsense.coverage.extract import ParseProblem, extract
from logsense.coverage.report import render_csv, render_json, render_text
from logsense.coverage.sources import open_distribution
from logsense.coverage.template import Template, format_parts, printf_parts
from logsense.errors import UsageError
from logsense.rules import load_rules

FIXTURE = Path(__file__).parent / "fixtures" / "coverage"
CONFIG = FIXTURE / "fakesrv.yaml"


@pytest.fixture(scope="module")
def rules():
    return load_rules(only=[str(FIXTURE / "rules")])


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    """The fixture package plus a file that is not valid Python."""
    dst = tmp_path / "fakesrv"
    shutil.copytree(FIXTURE / "fakesrv", dst)
    (dst / "broken.py").write_text("def f(:\n    raise ValueError('never seen')\n")
    return dst


def _wheel(src: Path, dst: Path) -> Path:
    whl = dst / "fakesrv-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for f in sorted(src.rglob("*.py")):
            z.write(f, f.relative_to(src.parent).as_posix())
    return whl


EXPECTED_SITES = [
    ("fakesrv/loader.py", 14, "Loader.load", "log", "error", "Scheduler hit an exception while loading {*}"),
    ("fakesrv/loader.py", 15, "Loader.load", "log", "critical", "Weights at {*} are corrupt: 100% useless"),
    ("fakesrv/loader.py", 16, "Loader.load", "log", "exception", "Load failed; retrying"),
    ("fakesrv/loader.py", 21, "Loader.give_up", "exit", "SystemExit", "Fatal: cannot read the model config"),
    ("fakesrv/loader.py", 26, "main", "exit", "SystemExit", "fakesrv exited: code {*}"),
    ("fakesrv/server_args.py", 11, "ServerArgs.check_memory", "raise", "ValueError",
     "Not enough memory for the KV pool. Please increase --mem-fraction-static. Current value: {*}"),
    ("fakesrv/server_args.py", 17, "ServerArgs.check_tp", "raise", "ValueError",
     "heads ({*}) must be divisible by tp size ({*})"),
    ("fakesrv/server_args.py", 20, "ServerArgs.check_port", "raise", "RuntimeError", "Port {*} is in use, try {*}"),
    ("fakesrv/server_args.py", 24, "ServerArgs.check_name", "raise", "KeyError", "Unknown model name: {*}"),
    ("fakesrv/server_args.py", 27, "ServerArgs.check_dtype", "assert", "AssertionError", "dtype {*} is not supported"),
    ("fakesrv/server_args.py", 28, "ServerArgs.check_dtype", "assert", "AssertionError", None),
    ("fakesrv/server_args.py", 31, "ServerArgs.abstract", "raise", "NotImplementedError", None),
    ("fakesrv/serving.py", 6, "handle", "raise", "ValueError", "The prompt is longer than {*} tokens"),
]


def _sites(path: Path):
    problems: list[str] = []
    got = [(s.file, s.line, s.scope, s.kind, s.exc, s.template.text if s.template else None)
           for s, _ in mine(path, load_config(path=CONFIG), problems)]
    return sorted(got), problems


def test_extracts_every_message_kind_on_the_startup_path(pkg):
    got, problems = _sites(pkg)
    assert got == EXPECTED_SITES  # no warning, no `raise e`, no sys.exit(1), nothing excluded or off the path
    assert len(problems) == 1 and problems[0].startswith("fakesrv/broken.py: SyntaxError")


def test_a_wheel_gives_the_same_sites_as_the_tree(pkg, tmp_path):
    whl = _wheel(pkg, tmp_path)
    assert _sites(whl) == _sites(pkg)
    d = open_distribution(whl)
    assert (d.name, d.version) == ("fakesrv", "1.2.3")
    assert open_distribution(pkg).version == "1.2.3"


def test_an_installed_package_takes_its_own_dist_info_version(tmp_path):
    for dist, version in (("aaa", "9.9"), ("fakesrv", "2.0")):
        info = tmp_path / f"{dist}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Name: {dist}\nVersion: {version}\n")
    shutil.copytree(FIXTURE / "fakesrv", tmp_path / "fakesrv")
    d = open_distribution(tmp_path / "fakesrv")
    assert (d.name, d.version) == ("fakesrv", "2.0")


def test_templates_turn_every_placeholder_into_a_hole():
    assert Template.of(printf_parts("a %s b %5.2f c 100%% d %(name)r")).text == "a {*} b {*} c 100% d {*}"
    assert Template.of(format_parts("x {} y {0!r:>3} z {{lit}}")).text == "x {*} y {*} z {lit}"
    assert Template.of(format_parts("bad {")).text == "bad {"  # malformed: kept as it is
    t = Template.of(["Current value: ", None, None, " (", None, ")"])
    assert t.text == "Current value: {*} ({*})"
    assert t.regex == r"Current\ value:\ .*?\ \(.*?\)"
    assert t.fill("0") == "Current value: 0 (0)"
    src = "def f(a, b):\n    raise ValueError('x=' + str(a) + ' y=%d' % b)\n"
    assert extract("m.py", src)[0].template.text == "x={*} y={*}"


def test_a_message_built_elsewhere_is_a_site_without_text():
    src = "def f(msg):\n    raise ValueError(msg)\n\ndef g():\n    m = 'a'\n    m = 'b'\n    raise ValueError(m)\n"
    assert [s.template.text for s in extract("m.py", src)] == ["{*}", "{*}"]
    grown = "def f(x):\n    m = 'bad: '\n    m += x\n    raise ValueError(m)\n"
    assert extract("m.py", grown)[0].template.text == "bad: {*}"


def test_unparsable_input_is_a_parse_problem():
    for bad in ("def f(:\n", b"x = 1\x00\n", "(" * 5000):
        with pytest.raises(ParseProblem):
            extract("bad.py", bad)


EXPECTED_STATUS = {
    11: Status.COVERED,  # a root rule names the cause
    14: Status.GENERIC,  # only the rules/common pack fires: failed, cause unknown
    15: Status.UNCOVERED,  # a logged line no rule knows
    16: Status.UNCOVERED,
    17: Status.GENERIC,  # a traceback no cause rule knows
    20: Status.GENERIC,
    21: Status.UNCOVERED,
    24: Status.GENERIC,
    26: Status.UNCOVERED,
    27: Status.GENERIC,
    28: Status.NO_TEXT,
    31: Status.NO_TEXT,
    6: Status.TRIAGED,  # reviewed: request-time
}


def test_each_site_is_covered_triaged_generic_or_uncovered(pkg, rules):
    report = measure(pkg, rules, config_path=CONFIG)
    assert {v.site.line: v.status for v in report.verdicts} == EXPECTED_STATUS
    by_line = {v.site.line: v for v in report.verdicts}
    assert (by_line[11].rule, by_line[11].cause) == ("fake-kv-pool-too-small", "kv_cache_insufficient")
    assert by_line[14].rule == "fake-scheduler-exception"
    triaged = next(v for v in report.verdicts if v.status is Status.TRIAGED)
    assert triaged.reason.startswith("request-time validation")
    c = report.counts()
    assert (c[Status.COVERED], c[Status.TRIAGED], c[Status.GENERIC], c[Status.UNCOVERED], c[Status.NO_TEXT]) == \
        (1, 1, 5, 4, 2)
    assert report.areas == ["server_args", "model_loading", "entrypoints"]
    assert report.counts("server_args")[Status.COVERED] == 1
    assert report.unfinished is None


def test_the_report_in_three_formats(pkg, rules):
    report = measure(pkg, rules, config_path=CONFIG)
    text = render_text(report)
    assert text.startswith("fakesrv 1.2.3: 1 of 11 startup raise-sites with message text covered by a rule, "
                           "1 triaged as not startup failures, 5 caught only as a failure of unknown cause, "
                           "4 uncovered")
    assert "fakesrv/broken.py: SyntaxError" in text
    assert text.index("[UNCOVERED]") < text.index("[generic failure") < text.index("[covered by")
    doc = json.loads(render_json(report, uncovered_only=True))
    assert doc["counts"]["covered"] == 1 and doc["version"] == "1.2.3"
    assert {s["status"] for s in doc["sites"]} == {"uncovered", "generic"}
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert len(rows) == 13 and rows[0]["status"] == "uncovered"
    assert any(r["regex"] == r"Not\ enough\ memory\ for\ the\ KV\ pool\.\ Please\ increase\ \-\-mem\-fraction\-static\.\ Current\ value:\ "
               for r in rows)


def test_a_spent_budget_says_so(pkg, rules):
    report = measure(pkg, rules, config_path=CONFIG, budget=0)
    assert report.unfinished and "time budget" in report.unfinished
    assert "UNFINISHED" in render_text(report)


def test_bad_input_is_a_usage_error(tmp_path, rules):
    with pytest.raises(UsageError, match="no such file"):
        measure(tmp_path / "nope.whl", rules)
    (tmp_path / "x.whl").write_text("not a zip")
    with pytest.raises(UsageError, match="not a wheel"):
        measure(tmp_path / "x.whl", rules)
    with pytest.raises(UsageError, match="no startup-path data for package 'nosuch'"):
        load_config("nosuch")
    bad = tmp_path / "bad.yaml"
    bad.write_text("startup_paths: {a: [x]}\ntriage: [{files: '*', message: '(', reason: r}]\n")
    with pytest.raises(UsageError, match=r"triage\[0\]\.message"):
        load_config(path=bad)
    bad.write_text("startup_paths: {a: [x]}\ntriage: [{files: '*', reason: r, why: typo}]\n")
    with pytest.raises(UsageError, match=r"triage\[0\]: needs files and reason"):
        load_config(path=bad)


def test_bundled_package_data_loads():
    for name in ("sglang", "vllm", "sgl_kernel", "flashinfer_python"):
        cfg = load_config(name)
        assert cfg.areas and all(t.reason for t in cfg.triage)
    assert load_config("sglang").area("sglang/srt/server_args.py") == "server_args"
    assert load_config("sglang").area("sglang/test/test_utils.py") is None


def test_cli(pkg, capsys):
    from logsense.cli import app

    with pytest.raises(SystemExit) as e:
        app(["rules", "coverage", str(pkg), "--config", str(CONFIG), "--only-rules", str(FIXTURE / "rules"),
             "--format", "json", "--uncovered"])
    assert e.value.code == 0
    assert json.loads(capsys.readouterr().out)["counts"]["uncovered"] == 4
    with pytest.raises(SystemExit) as e:
        app(["rules", "coverage", str(pkg), "--config", str(CONFIG), "--budget", "0"])
    assert e.value.code == 3  # cut short: not a complete figure
    assert "UNFINISHED" in capsys.readouterr().out


def test_messages_are_fed_as_the_log_shows_them():
    from logsense.coverage.classify import SITE_PACKAGES, log_lines
    from logsense.coverage.extract import Site

    def site(kind, exc):
        return Site("pkg/m.py", 7, "C.f", kind, exc, None)

    assert log_lines(site("raise", "ValueError"), "bad 0\nhint", "P ") == [
        "Traceback (most recent call last):", f'  File "{SITE_PACKAGES}pkg/m.py", line 7, in f',
        "ValueError: bad 0", "hint"]
    assert log_lines(site("raise", "KeyError"), "w.x", "P ")[-1] == "KeyError: 'w.x'"
    assert log_lines(site("raise", "NotImplementedError"), "", "P ")[-1] == "NotImplementedError"
    assert log_lines(site("raise", "SystemExit"), "bye", "P ") == ["bye"]
    assert log_lines(site("exit", "SystemExit"), "bye", "P ") == ["bye"]
    assert log_lines(site("log", "error"), "oops\nmore", "P ") == ["P oops", "more"]
