"""The verdict apart from the cause rules: ready, failed (named or unknown), incomplete."""

from __future__ import annotations

from conftest import HEALTHY
from logsense.model import Diagnosis, Status
from logsense.pipeline import Pipeline, Reading, run

READY_LINE = "[2026-11-20 10:00:23] The server is fired up and ready to roll!"
UNKNOWN_TRACEBACK = """\
[2026-11-20 10:00:04 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 12, in run
    self.widget.spin()
FrobnicationError: the widget would not spin
"""


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_a_fatal_line_no_rule_knows_is_a_failure_of_unknown_cause(rules):
    report = run(_lines(HEALTHY.split("[2026-11-20 10:00:12")[0] + UNKNOWN_TRACEBACK), rules)
    assert report.status is Status.FAILED
    root = report.root
    assert root is not None and root.cause == "unknown" and root.rule is None
    assert root.kind == "exception"
    assert "Scheduler" in root.title and "Scheduler" in root.explanation
    assert any("FrobnicationError: the widget would not spin" in e.text for e in root.evidence)
    assert report.to_json()["diagnoses"][0]["kind"] == "exception"


def test_indentation_lost_by_pasting_and_headless_tracebacks_still_fail(rules):
    pasted = ["Traceback (most recent call last):", 'File "/app/x.py", line 3, in <module>', "main()",
              "WeirdError: gone"]
    headless = ['  File "/app/x.py", line 3, in <module>', "    main()", "WeirdError: gone"]
    for lines in (pasted, headless):
        report = run(lines, rules)
        assert report.status is Status.FAILED and report.root is not None and report.root.cause == "unknown"


def test_what_the_startup_survived_is_not_fatal(rules):
    survived = HEALTHY.replace(READY_LINE, UNKNOWN_TRACEBACK + READY_LINE)
    report = run(_lines(survived), rules)
    assert report.status is Status.READY and report.root is None


def test_a_crash_after_ready_is_a_failure(rules):
    report = run(_lines(HEALTHY + UNKNOWN_TRACEBACK), rules)
    assert report.status is Status.FAILED and report.root is not None and report.root.cause == "unknown"


REQUEST_TRACEBACK = """\
[2026-11-20 10:01:00] ERROR:    Exception in ASGI application
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py", line 500, in v1_chat
    return await raw_request.json()
ValueError: The provided JSON schema contains features not supported by xgrammar.
[2026-11-20 10:01:01] INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK
"""


def test_a_requests_traceback_after_ready_is_not_a_failure(rules):
    """Once ready, a traceback alone is a request's (the server logs it and serves on); a crash still fails."""
    report = run(_lines(HEALTHY + REQUEST_TRACEBACK), rules)
    assert report.status is Status.READY and report.root is None
    report = run(_lines(HEALTHY + REQUEST_TRACEBACK + UNKNOWN_TRACEBACK), rules)
    assert report.status is Status.FAILED and report.root is not None and report.root.cause == "unknown"


def test_a_log_that_ends_before_ready_with_nothing_fatal_is_incomplete(rules):
    cut = "\n".join(_lines(HEALTHY)[:5])
    report = run(_lines(cut), rules)
    assert report.status is Status.INCOMPLETE and report.root is None


class _Inventor:
    """A fallback that always claims a cause."""

    reading = Reading()

    def watch(self, timeline):
        return self

    def record(self, rec, phase):
        pass

    def event(self, event):
        pass

    def revise(self, diagnoses: list[Diagnosis], facts) -> list[Diagnosis]:
        base = Diagnosis("cuda_oom_weight_loading", None, True, diagnoses[0].origin if diagnoses else "classifier",
                         0.99, "t", "", None, (), ())
        return [base] + [d for d in diagnoses if not d.root]


def test_a_fallback_names_an_unknown_failure_but_never_invents_one(rules):
    p = Pipeline(rules, _Inventor())
    for i, line in enumerate(_lines(HEALTHY)[:5], 1):
        p.feed_line(i, line)
    report = p.finish()
    assert report.status is Status.INCOMPLETE and report.root is None
    p = Pipeline(rules, _Inventor())
    for i, line in enumerate(_lines(UNKNOWN_TRACEBACK), 1):
        p.feed_line(i, line)
    report = p.finish()
    assert report.status is Status.FAILED and report.root is not None
    assert report.root.cause == "cuda_oom_weight_loading"


def test_only_rules_keeps_the_fatal_signals(tmp_path):
    from logsense import load_rules

    pack = tmp_path / "pack.yaml"
    pack.write_text("rules: []\n")
    rs = load_rules(None, [str(pack)])
    assert any(r.spec.role == "fatal" for r in rs.rules)
    report = run(_lines(UNKNOWN_TRACEBACK), rs)
    assert report.status is Status.FAILED


def test_no_output_says_no_failure_found(rules, tmp_path, capsys):
    from logsense.commands.analyze import main

    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(_lines(HEALTHY)[:5]) + "\n")
    ok = tmp_path / "ok.log"
    ok.write_text(HEALTHY)
    assert main([str(cut), str(ok)], classifier=False) == 0
    out = capsys.readouterr().out
    assert "no failure found" not in out.lower()
    assert "ends before the server is ready" in out and "nothing fatal" in out


def test_label_fields_and_their_meaning(tmp_path):
    from logsense.corpus import read_label

    def label(text: str):
        p = tmp_path / "x.label.yaml"
        p.write_text(text)
        return read_label(p)

    lab, problems = label("cause: unknown\nreported_cause: gpu_arch_unsupported\nserver: vllm\n")
    assert lab is not None and not problems
    assert lab.failure and lab.expected_status() == (Status.FAILED,)
    lab, _ = label("cause: unknown\noutcome: incomplete\n")
    assert lab is not None and lab.expected_status() == (Status.INCOMPLETE,)
    lab, _ = label("cause: healthy\n")
    assert lab is not None and set(lab.expected_status()) == {Status.READY, Status.INCOMPLETE}
    for bad, field in (("cause: unknown\nserver: tgi\n", "server"), ("cause: unknown\nreported_cause: nope\n",
                                                                     "reported_cause"),
                       ("cause: gpu_arch_unsupported\noutcome: ready\n", "outcome")):
        lab, problems = label(bad)
        assert lab is None and problems[0].message.startswith(field), problems
