"""`logsense check`: incidents against their labels, rule packs, false alarms, conflicts, output and exit codes.

Each test builds its own small corpus and rule pack in a temp dir and checks it with only
that pack (`only_rules`), so the tests do not move when the bundled packs change; the last
tests run the check on this project's own corpora/ and rules/.
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import HEALTHY, MODULE_MISSING, ROOT, run_cli
from logsense.check import check, label_for, load_ruleset, logs_for, plan, read_label
from logsense.commands import check as check_cmd

MODULE_LINE = 6  # the line the diagnosis points at

MODULE_RULE = {
    "id": "module-missing",
    "cause": "python_module_missing",
    "role": "root",
    "priority": 60,
    "match": {"any": [r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'"]},
    "fixes": [{"kind": "package", "value": "pip install {module}"}],
    "examples": {
        "match": ["ModuleNotFoundError: No module named 'widget'", "ModuleNotFoundError: No module named 'a.b'"],
        "no_match": ["import widget", "[2026-11-20 10:00:03 TP0] Load weight begin."],
    },
}


def write_pack(root: Path, *rules: dict, name: str = "pack.yaml") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_text(yaml.safe_dump({"rules": list(rules)}, sort_keys=False, width=1000), encoding="utf-8")
    return path


def write_incident(root: Path, name: str, log: str, gz: bool = False, **label) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / (name + (".log.gz" if gz else ".log"))
    if gz:
        path.write_bytes(gzip.compress(log.encode()))
    else:
        path.write_text(log, encoding="utf-8")
    if label:
        (root / (name + ".label.yaml")).write_text(yaml.safe_dump(label, sort_keys=False), encoding="utf-8")
    return path


def line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A temp dir as the working directory, with a one-rule pack in pack/."""
    monkeypatch.chdir(tmp_path)
    write_pack(tmp_path / "pack", MODULE_RULE)
    return tmp_path


def run(*paths, rules=(), corpus=(), only=("pack",)):
    return check(paths, rules, corpus, list(only) if only else None)


def messages(result) -> list[str]:
    return [p.render() for p in result.problems]


# ---------------------------------------------------------------- incidents


def test_a_correct_corpus_is_clean(work):
    write_incident(work / "corpus", "ok", HEALTHY, cause="healthy", origin="constructed")
    write_incident(work / "corpus", "mod", MODULE_MISSING, cause="python_module_missing",
                   fix_any=["widget_kernels"], phase="weight_loading")
    write_incident(work / "corpus", "modgz", MODULE_MISSING, gz=True, cause="python_module_missing")
    r = run("corpus")
    assert messages(r) == []
    assert (r.incidents, r.exit_code) == (3, 0)
    assert r.summary() == "3 incidents, 0 rules checked: 0 problems"


def test_a_mislabelled_incident_names_the_log_and_the_line(work):
    write_incident(work / "corpus", "mod", MODULE_MISSING, cause="python_headers_missing")
    r = run("corpus")
    assert r.exit_code == 1
    [msg] = messages(r)
    assert msg.startswith(f"corpus/mod.log:{MODULE_LINE}: diagnosed python_module_missing (rule module-missing")
    assert "labelled python_headers_missing (corpus/mod.label.yaml)" in msg


def test_a_failure_labelled_healthy_is_a_false_alarm_and_the_reverse_a_miss(work):
    write_incident(work / "c", "fail", MODULE_MISSING, cause="healthy")
    write_incident(work / "c", "ok", HEALTHY, cause="python_module_missing")
    msgs = messages(run("c"))
    assert any(m.startswith(f"c/fail.log:{MODULE_LINE}: false alarm on a healthy startup") for m in msgs), msgs
    assert any(m.startswith("c/ok.log:1: diagnosed no failure (status ready)") and "labelled python_module_missing" in m
               for m in msgs), msgs


def test_healthy_with_outcome_ready_must_reach_ready(work):
    cut = "".join(HEALTHY.splitlines(keepends=True)[:5])
    write_incident(work / "c", "cut", cut, cause="healthy", outcome="ready")
    [msg] = messages(run("c"))
    assert "never reached ready (status incomplete, last phase kv_cache_alloc)" in msg


def test_an_excerpt_cut_before_its_failure_expects_no_guess(work):
    cut = "".join(HEALTHY.splitlines(keepends=True)[:5])
    write_incident(work / "c", "hang", cut, cause="unknown", outcome="incomplete")
    write_incident(work / "c", "guess", MODULE_MISSING, cause="unknown", outcome="incomplete")
    msgs = messages(run("c"))
    assert len(msgs) == 1 and msgs[0].startswith("c/guess.log:") and "ends before any failure shows" in msgs[0]


def test_fix_and_phase_come_from_the_label(work):
    write_incident(work / "c", "fix", MODULE_MISSING, cause="python_module_missing", fix_any=["apt install"])
    write_incident(work / "c", "phase", MODULE_MISSING, cause="python_module_missing", phase="warmup",
                   check_phase=True)
    write_incident(work / "c", "informational", MODULE_MISSING, cause="python_module_missing", phase="warmup")
    msgs = messages(run("c"))
    assert len(msgs) == 2, msgs
    assert "c/fix.log:6: no suggested fix contains any of ['apt install'] (fixes: pip install widget_kernels)" in msgs[0]
    assert "c/phase.log:6: failed in phase weight_loading, labelled phase warmup" in msgs[1]


def test_a_log_without_a_label_and_a_label_without_a_log(work):
    write_incident(work / "c", "orphan", HEALTHY)
    (work / "c" / "lonely.label.yaml").write_text("cause: healthy\n")
    msgs = messages(run("c"))
    assert "c/orphan.log:1: no label: run `logsense label c/orphan.log --cause X`" in msgs
    assert "c/lonely.label.yaml:1: no log beside the label (expected c/lonely.log or c/lonely.log.gz)" in msgs


def test_label_files_are_validated_with_lines(work):
    lab = work / "c" / "bad.label.yaml"
    write_incident(work / "c", "bad", HEALTHY)
    lab.write_text("origin: found\ncause: python_header_missing\nfix-any: [x]\nphase: capture\n")
    msgs = messages(run("c"))
    assert "c/bad.label.yaml:1: origin: must be one of: recorded, constructed" in msgs
    assert any(m.startswith("c/bad.label.yaml:2: cause: unknown cause 'python_header_missing' (close: "
                            "python_headers_missing") for m in msgs), msgs
    assert "c/bad.label.yaml:3: fix-any: unknown field (did you mean 'fix_any'?)" in msgs
    assert any(m.startswith("c/bad.label.yaml:4: phase: unknown phase 'capture'") for m in msgs), msgs
    lab.write_text("cause: healthy\nfix_any: --skip-server-warmup\n")
    assert messages(run("c")) == ["c/bad.label.yaml:2: fix_any: must be a list of strings (a suggested fix must "
                                  "contain one of them)"]
    lab.write_text("cause: healthy\nnotes: 'unterminated\n")
    [msg] = messages(run("c"))
    assert msg.startswith("c/bad.label.yaml:2: invalid YAML")


def test_unreadable_input_exits_2(work):
    (work / "c").mkdir()
    (work / "c" / "trunc.log.gz").write_bytes(gzip.compress(HEALTHY.encode())[:40])
    (work / "c" / "trunc.label.yaml").write_text("cause: healthy\n")
    r = run("c")
    assert r.exit_code == 2
    assert [p.kind for p in r.problems] == ["unreadable"]
    assert "Compressed file ended" in r.problems[0].message
    r = run("missing.log")
    assert (r.exit_code, messages(r)) == (2, ["missing.log:1: no such file or directory"])


# ---------------------------------------------------------------- what the paths mean


def test_precommit_style_file_lists_bring_the_partner_file(work):
    write_incident(work / "c", "a", MODULE_MISSING, cause="python_headers_missing")
    write_incident(work / "c", "b", HEALTHY, cause="healthy")
    write_incident(work / "c", "z", MODULE_MISSING, gz=True, cause="python_module_missing")
    pl = plan(["c/a.label.yaml", "c/b.log", "c/z.log.gz", "c/a.log", "pack/pack.yaml"])
    got = {(i.log.name if i.log else None, i.label.name if i.label else None) for i in pl.incidents}
    assert got == {("a.log", "a.label.yaml"), ("b.log", "b.label.yaml"), ("z.log.gz", "z.label.yaml")}
    assert [p.name for p in pl.rule_files] == ["pack.yaml"]
    r = run("c/a.label.yaml")  # only the label changed: its log is checked with it
    assert r.incidents == 1 and messages(r)[0].startswith("c/a.log:6: diagnosed python_module_missing")


def test_label_and_log_names():
    assert label_for(Path("c/x.log")) == Path("c/x.label.yaml")
    assert label_for(Path("c/x.log.gz")) == Path("c/x.label.yaml")
    assert label_for(Path("c/x.journal.log")) == Path("c/x.journal.label.yaml")
    assert logs_for(Path("/nonexistent/x.label.yaml")) == []


def test_dirs_are_corpora_or_rule_packs(work):
    write_incident(work / "c" / "sub", "ok", HEALTHY, cause="healthy")
    write_incident(work / "c" / ".hidden", "skip", HEALTHY)
    pl = plan(["c", "pack"])
    assert [i.log.name for i in pl.incidents if i.log] == ["ok.log"]
    assert [p.name for p in pl.rule_files] == ["pack.yaml"]
    pl = plan([], rules=["pack"], corpus=["c"])
    assert len(pl.incidents) == 1 and len(pl.rule_files) == 1


def test_read_label_gives_the_lines(work):
    p = work / "x.label.yaml"
    p.write_text("# a comment\ncause: healthy\nphase: serving\n")
    label, problems = read_label(p)
    assert problems == [] and label is not None
    assert (label.cause, label.phase, label.lines["phase"]) == ("healthy", "serving", 3)


# ---------------------------------------------------------------- rule packs


def test_a_good_pack_is_clean(work):
    r = run("pack")
    assert (messages(r), r.rules, r.exit_code) == ([], 1, 0)
    assert r.summary() == "0 incidents, 1 rule checked: 0 problems"


def test_schema_errors_are_reported_with_file_and_line(work):
    bad = dict(MODULE_RULE, id="bad-regex", match={"any": ["No module named ((?P<m>"]})
    path = write_pack(work / "pack", MODULE_RULE, bad)
    r = run("pack")
    [msg] = messages(r)
    line = line_of(path, "No module named ((")
    assert msg.startswith(f"pack/pack.yaml:{line}: rule 'bad-regex': match.any[0]: ")
    assert r.exit_code == 1


@pytest.mark.parametrize("case", sorted((ROOT / "tests" / "bad-rules").glob("*.yaml")), ids=lambda p: p.stem)
def test_the_loaders_errors_become_problems_and_nothing_more(case, monkeypatch):
    """The same file:line messages as the loader (without the column and the caret under it); a broken rule adds
    no example noise."""
    monkeypatch.chdir(case.parent)
    expected = {re.sub(r"^([^:]+:\d+):\d+:", r"\1:", ln) for ln in case.with_suffix(".err").read_text().splitlines()
                if not ln.startswith(" ")}
    r = check([case.name], only_rules=[case.name])
    assert set(messages(r)) == expected
    assert r.exit_code == 1


def test_failing_examples_and_too_few_examples(work):
    leaky = dict(MODULE_RULE, id="leaky", examples={
        "match": ["ModuleNotFoundError: No module named 'x'", "something else entirely"],
        "no_match": ["ModuleNotFoundError: No module named 'y'"],
    })
    path = write_pack(work / "pack", leaky)
    msgs = messages(run("pack"))
    assert f"pack/pack.yaml:{line_of(path, 'something else')}: rule 'leaky': examples.match[1]: did not fire" in msgs
    y_line = line_of(path, "''y''")
    assert (f"pack/pack.yaml:{y_line}: rule 'leaky': examples.no_match[0]: "
            "fired on a no_match example") in msgs
    assert (f"pack/pack.yaml:{line_of(path, 'id: leaky')}: rule 'leaky': examples.no_match: has 1 no_match "
            "example(s); at least 2 are required") in msgs


def test_two_rules_claiming_one_example_is_a_conflict(work):
    kernel = {
        "id": "kernel-import", "cause": "kernel_abi_mismatch", "role": "root", "priority": 40,
        "match": {"any": ["No module named 'sgl_kernel'"]},
        "examples": {"match": ["ModuleNotFoundError: No module named 'sgl_kernel'", "No module named 'sgl_kernel'"],
                     "no_match": ["import sgl_kernel", "sgl_kernel 0.3.1"]},
    }
    path = write_pack(work / "pack", MODULE_RULE, kernel)
    msgs = messages(run("pack"))
    line = line_of(path, "- 'ModuleNotFoundError: No module named ''sgl_kernel''")
    assert msgs == [f"pack/pack.yaml:{line}: rule 'kernel-import': examples.match[0] is also claimed by rule "
                    f"'module-missing' (python_module_missing, priority 60 >= 40) at pack/pack.yaml:2"]
    # the higher-priority rule wins there on purpose: not a conflict the other way round, nor at a higher priority
    write_pack(work / "pack", MODULE_RULE, dict(kernel, priority=61))
    assert messages(run("pack")) == []
    # a symptom may share its examples with a root cause: roots outrank symptoms by design
    write_pack(work / "pack", MODULE_RULE, dict(kernel, role="symptom", priority=10))
    assert messages(run("pack")) == []


def test_a_root_rule_firing_on_a_healthy_log_is_a_false_alarm(work):
    alarm = {
        "id": "uvicorn-alarm", "cause": "port_in_use", "role": "root",
        "match": {"any": ["Uvicorn running on"]},
        "examples": {"match": ["INFO:     Uvicorn running on http://0.0.0.0:30000", "Uvicorn running on x"],
                     "no_match": ["Uvicorn stopped", "uvicorn"]},
    }
    path = write_pack(work / "pack", MODULE_RULE, alarm)
    # before the ready line the server went on past it: survived, not an alarm
    write_incident(work / "c", "ok", HEALTHY, cause="healthy")
    assert messages(run(rules=["pack"], corpus=["c"])) == []
    write_incident(work / "c", "ok", HEALTHY + "[2026-11-20 10:00:30] INFO:     Uvicorn running on http://0.0.0.0:30001\n",
                   cause="healthy")
    msgs = messages(run(rules=["pack"], corpus=["c"]))
    rule_line = line_of(path, "id: uvicorn-alarm")
    assert (f"pack/pack.yaml:{rule_line}: rule 'uvicorn-alarm' (port_in_use) fires on a healthy startup: "
            "c/ok.log:10") in msgs
    assert any(m.startswith("c/ok.log:10: false alarm on a healthy startup") for m in msgs), msgs
    # without the pack among the paths only the incident is checked
    assert [m for m in messages(run("c")) if m.startswith("pack/")] == []


def test_a_pack_given_with_rules_is_loaded_beside_the_bundled_ones(work):
    write_pack(work / "mine", dict(MODULE_RULE, id="my-module-missing"))
    r = check([], ["mine"], [], None)
    assert r.rules == 1
    # the bundled dir given again is not loaded twice (no duplicate ids); loading is what decides it, so the
    # examples, conflicts and false alarms of every bundled rule (test_rule_examples, test_corpora) are not rerun
    rs, problems = load_ruleset([ROOT / "rules"])
    assert len(rs.rules) > 1 and not [p for p in problems if "duplicate rule id" in p.message]


def test_phase_files_are_checked(work):
    shutil.copy(ROOT / "rules" / "sglang" / "phases.yaml", work / "phases.yaml")
    assert messages(run("phases.yaml")) == []
    text = (work / "phases.yaml").read_text().replace("- 'Init nccl begin'\n", "- 'Init nccl start'\n")
    (work / "phases.yaml").write_text(text)
    msgs = messages(run("phases.yaml"))
    assert msgs == [f"phases.yaml:{line_of(work / 'phases.yaml', 'phase: distributed_init')}: "
                    "phase:distributed_init: examples[1]: hits no marker of its phase"]


# ---------------------------------------------------------------- the command


def test_command_prints_one_line_a_problem_then_the_summary(work, capsys):
    write_incident(work / "c", "mod", MODULE_MISSING, cause="python_headers_missing")
    write_incident(work / "c", "ok", HEALTHY, cause="healthy")
    code = check_cmd.main(["c"], [], [], ["pack"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert len(out) == 2 and out[0].startswith("c/mod.log:6: diagnosed python_module_missing")
    assert out[1] == "2 incidents, 0 rules checked: 1 problem"


def test_the_cli_wires_paths_and_options(work):
    write_incident(work / "c", "ok", HEALTHY, cause="healthy")
    p = run_cli("check", "--only-rules", "pack", "--rules", "pack", "--corpus", "c", text=True)
    assert (p.returncode, p.stdout) == (0, "1 incident, 1 rule checked: 0 problems\n"), p.stderr
    p = run_cli("check", text=True)
    assert p.returncode == 2 and "nothing to check" in p.stderr


# ---------------------------------------------------------------- this project


@pytest.mark.slow
def test_project_corpora_and_rules_pass(monkeypatch):
    """`logsense check corpora/ rules/` on this repository, as CI and the pre-commit hook run it.

    Slow: the incidents also run one by one in test_corpora.py (the same `check_incident`).
    """
    monkeypatch.chdir(ROOT)
    r = check(["corpora", "rules"])
    assert r.rules > 0
    assert not r.problems, "\n".join(messages(r) + [r.summary()])

