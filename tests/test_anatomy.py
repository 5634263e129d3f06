"""Exception anatomy: with the cause rules hidden, the area a failure was raised in agrees with the cause's family.

Every corpus incident whose cause a rule names is analyzed again with the fatal signals alone, so that
it becomes an unknown failure; the anatomy's family (where it gives one) must be the taxonomy group of
the labelled cause. Anatomy places a failure, it does not name its cause: it may abstain, and it may be
wrong on a few (a CUDA-graph capture or a server module fails for every kind of reason), so the test
holds the share that agrees, not each case.
"""

from __future__ import annotations

from functools import cache

import pytest

from conftest import CORPORA, ROOT
from logsense import analyze, anatomy, load_rules
from logsense.corpus import corpus_entries, read_label
from logsense.taxonomy import causes

MIN_AGREEMENT = 0.9
MIN_PLACED = 60


@cache
def _fatal_only():
    return load_rules(only=[str(ROOT / "rules" / "common" / "fatal.yaml")])


def _named_incidents():
    out = []
    known = causes()
    for inc in corpus_entries(CORPORA):
        if inc.log is None or inc.label is None or inc.log.name.endswith(".gz"):
            continue
        label, _ = read_label(inc.label)
        if label and label.failure and label.cause in known and label.cause != "unknown":
            out.append((inc.log, known[label.cause].group))
    return out


def test_anatomy_family_agrees_with_the_named_cause():
    placed = agree = 0
    wrong = []
    for log, family in _named_incidents():
        report = analyze(log.read_text(encoding="utf-8", errors="replace").splitlines(), _fatal_only(), str(log))
        roots = [d for d in report.diagnoses if d.root]
        likely = roots[0].likely if roots else None
        if likely is None or likely.family is None:
            continue
        placed += 1
        if likely.family == family:
            agree += 1
        else:
            wrong.append(f"{log.relative_to(CORPORA)}: {likely.area} ({likely.family}), labelled {family}")
    assert placed >= MIN_PLACED, f"anatomy placed only {placed} incidents"
    assert agree / placed >= MIN_AGREEMENT, f"{agree}/{placed} agree; disagreeing:\n" + "\n".join(wrong)


def test_every_area_names_a_taxonomy_group():
    groups = {c.group for c in causes().values()}
    for area in anatomy.areas():
        assert area.family is None or area.family in groups, area.id
        assert area.types or area.frames or area.functions, area.id


@pytest.mark.parametrize("log, area, family", [
    ('Traceback (most recent call last):\n'
     '  File "/usr/lib/python3/dist-packages/torch/_inductor/compile_fx.py", line 1, in compile_fx\n'
     '    raise X\n'
     'torch._dynamo.exc.BackendCompilerFailed: backend=\'inductor\' raised: something new\n',
     "compile", "build_environment"),
    ('Traceback (most recent call last):\n'
     '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 10, in run\n'
     '    x()\n'
     '  File "/opt/venv/lib/python3.12/site-packages/transformers/tokenization_utils_base.py", line 2, in from_pretrained\n'
     '    raise OSError("no")\n'
     'OSError: something no rule knows\n',
     "tokenizer", "model_and_config"),
    ('Traceback (most recent call last):\n'
     '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 10, in run_engine_core\n'
     '    x()\n'
     'ValueError: something no rule knows\n',
     "vllm_code", None),
])
def test_anatomy_places_an_unnamed_exception(log, area, family):
    report = analyze(log.splitlines(), _fatal_only())
    likely = report.diagnoses[0].likely
    assert report.diagnoses[0].cause == "unknown"
    assert (likely.area, likely.family) == (area, family)
    assert "Likely" in report.diagnoses[0].explanation
    assert report.diagnoses[0].to_json()["likely"]["area"] == area
    exc = log.rstrip().rsplit("\n", 1)[-1].split(":")[0]  # "an OSError", "a ValueError"
    assert f"{'an' if exc[0] in 'AEIOU' else 'a'} {exc} raised in" in report.diagnoses[0].explanation


def test_a_config_validation_error_names_the_flag():
    log = ("(APIServer pid=1) Traceback (most recent call last):\n"
           '(APIServer pid=1)   File "/usr/lib/python3/dist-packages/vllm/engine/arg_utils.py", line 1, in create_engine_config\n'
           "(APIServer pid=1)     x()\n"
           "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n"
           "(APIServer pid=1) swap_space_gib\n"
           "(APIServer pid=1)   Input should be greater than or equal to 0 [type=greater_than_equal, input_value=-1]\n")
    report = analyze(log.splitlines(), _fatal_only())
    likely = report.diagnoses[0].likely
    assert likely.area == "arguments" and likely.flag == "--swap-space-gib"
    assert "--swap-space-gib" in report.diagnoses[0].explanation


def test_no_anatomy_without_a_traceback():
    report = analyze(["[2026-01-01 10:00:00] Killed"], _fatal_only())
    assert all(d.likely is None for d in report.diagnoses)


def test_an_oom_in_no_known_step_offers_no_part_of_the_code():
    """Memory that ran out is not a part of the code failing: no likely part, no guess outside memory."""
    log = ("Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 9, in get_response\n'
           "    raise RuntimeError(f\"Worker failed with error '{e}'\")\n"
           "RuntimeError: Worker failed with error 'CUDA error: out of memory'\n")
    d = analyze(log.splitlines()).diagnoses[0]
    assert (d.cause, d.kind, d.likely) == ("unknown", "out_of_memory", None)
    assert "out of memory" in d.title
    from logsense.taxonomy import OUT_OF_MEMORY

    assert OUT_OF_MEMORY <= set(causes())  # ids of the taxonomy, never renamed
    offered = [c for c in causes() if f"Maybe {c}:" in d.explanation]
    assert all(c in OUT_OF_MEMORY for c in offered)
