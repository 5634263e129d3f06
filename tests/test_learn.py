"""The learned classifier: features, the JSON model, the pipeline hook, the shipped model being current."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import CORPORA, ROOT
from logsense.learn import corpus, features
from logsense.learn.decide import decide
from logsense.learn.features import Doc, mask
from logsense.learn.hook import shipped_model_path
from logsense.learn.linear import LinearModel

pytest.importorskip("sklearn")

REBUILD = "logsense train corpora/ -o logsense/data/ --readme README.md"


@pytest.fixture(scope="session")
def incidents():
    found = corpus.find([CORPORA])
    if len(found) < 4:
        pytest.skip("the corpus has fewer than 4 labelled logs")
    return found


@pytest.fixture(scope="session")
def docs(incidents):
    return corpus.documents(incidents, jobs=corpus.default_jobs())


@pytest.fixture(scope="session")
def fitted(incidents, docs):
    from logsense.learn import train

    warnings.filterwarnings("ignore", module="sklearn")
    texts = [d.text for d in docs]
    y = [i.cause for i in incidents]
    cfg = train.Config()
    f = train.fit(texts, y, cfg)
    data = train.export(f, texts, [i.name for i in incidents], y, cfg, 1.0, {})
    return f, LinearModel(data), texts


@pytest.fixture(scope="session")
def shipped():
    path = shipped_model_path()
    if not path.is_file():
        pytest.fail(f"no shipped model at logsense/data/{path.name}: build it with `{REBUILD}`")
    return LinearModel.load(path)


# --- features ---


def test_mask_hides_what_differs_between_two_logs_of_one_incident():
    a = mask('[TP3] File "/home/alice/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 284, '
             "at 0x7f3a2c00 on cuda:3 from 10.0.0.7:29500")
    b = mask('[TP6] File "/opt/conda/lib/python3.12/site-packages/torch/cuda/__init__.py", line 301, '
             "at 0x55d1e000 on cuda:6 from 192.168.1.20:40000")
    assert a == b
    assert "__init__.py" in a and "alice" not in a and "0x" not in a


def test_documents_come_from_the_pipeline_events(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(
        "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=79.1 GB\n"
        "[2026-01-01 00:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/managers/scheduler.py", line 10, in run\n'
        "    raise ValueError('bad')\n"
        "ValueError: weight model.layers.7.mlp not found in checkpoint\n"
        "[2026-01-01 00:00:06] Received sigquit from a child process. It usually means the child failed.\n"
    )
    doc = features.doc_of_file(str(log))
    assert "ValueError: weight model.layers.N.mlp not found in checkpoint" in doc.text
    assert "scheduler.py" in doc.text
    assert "zzphaseweightloading" in doc.text and "zznotready" in doc.text
    assert not doc.ready and doc.failure_signs


def test_replayed_document_equals_the_attached_digest(incidents, shipped):
    """analyze's block scanner and a pipeline fed every line (tail, stdin) give the model the same document."""
    from logsense.commands.common import rules_from_options
    from logsense.learn.classifier import Classifier
    from logsense.pipeline import Pipeline
    from logsense.sources.recorded import open_recorded, read_lines

    rs = rules_from_options(None, None, True)
    for inc in incidents[:: max(1, len(incidents) // 12)]:
        p = Pipeline(rs, fallback=Classifier(shipped_model_path()))
        fp, name = open_recorded(str(inc.log))
        with fp:
            for n, t in read_lines(fp, name):
                p.feed_line(n, t)
        p.flush()
        assert p.watcher.doc(p.facts.snapshot()).text == features.doc_of_file(str(inc.log)).text, inc.name


def test_the_digest_reads_its_events_in_order_whenever_it_reads_them(monkeypatch):
    """Events wait unread until the document is asked for (or until UNREAD wait): the document is the
    one read event by event, on every corpus log."""
    logs = sorted(CORPORA.rglob("*.log"))
    late = [features.doc_of_file(str(p)) for p in logs]
    monkeypatch.setattr(features, "UNREAD", 1)
    assert [features.doc_of_file(str(p)) for p in logs] == late


def test_the_server_is_a_feature():
    doc = features.build_doc([], [], "import", False, 0, 0, server="vllm")
    assert "zzservervllm" in doc.text.split("\n", 1)[0]
    assert "zzserver" not in features.build_doc([], [], "import", False, 0, 0).text


# --- the model file ---


def test_pure_python_prediction_equals_scikit_learn(fitted):
    f, model, texts = fitted
    proba = f.lr.predict_proba(f.matrix(texts))
    for i, text in enumerate(texts):
        got = dict(model.predict(text).probs)
        want = dict(zip(f.classes, proba[i].tolist(), strict=True))
        assert max(abs(got[c] - want[c]) for c in want) < 2e-3


def test_the_model_file_is_data_not_code(tmp_path):
    import pickle

    from logsense.errors import ModelError

    bad = tmp_path / "classifier.json"
    bad.write_bytes(pickle.dumps({"format": "x"}))
    with pytest.raises(ModelError):
        LinearModel.load(bad)
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ModelError):
        LinearModel.load(bad)


def _small_model(**changes) -> dict:
    """A valid two-class model by hand: 'no space left' pushes toward disk_full."""
    from logsense.learn.features import FEATURE_VERSION
    from logsense.learn.linear import FORMAT, FORMAT_VERSION

    data = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "meta": {"feature_version": FEATURE_VERSION},
        "classes": ["disk_full", "healthy"],
        "blocks": [{"analyzer": "word", "terms": ["space", "left", "ready"], "idf": [1.0, 1.0, 1.0],
                    "sublinear_tf": True, "weight": 1.0}],
        "coef": [[3.0, -3.0], [3.0, -3.0], [-3.0, 3.0]], "intercept": [0.0, 0.0],
        "temperature": 1.0, "threshold": 0.5,
        "held_out": {"disk_full": {"precision": 0.5, "right": 1, "said": 2, "support": 2}},
        "incidents": [{"name": "corpora/x.log", "cause": "disk_full", "norm": 1.0, "terms": [[0, 0.7], [1, 0.7]]}],
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not DROP}


DROP = object()  # a key _small_model leaves out


def _write(tmp_path: Path, data, name: str = "classifier.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


MALFORMED = {
    "missing key": ({"coef": DROP}, "coef"),
    "wrong type": ({"classes": "disk_full"}, "classes"),
    "short idf": ({"blocks": [{"analyzer": "word", "terms": ["space", "left", "ready"], "idf": [1.0]}]}, "blocks[0].idf"),
    "short coef row": ({"coef": [[3.0, -3.0], [3.0], [-3.0, 3.0]]}, "coef[1]"),
    "short coef": ({"coef": [[3.0, -3.0]]}, "coef"),
    "NaN": ({"coef": [[3.0, -3.0], [float("nan"), -3.0], [-3.0, 3.0]]}, "coef[1][0]"),
    "string number": ({"intercept": [0.0, "0"]}, "intercept[1]"),
    "weight that overflows a score": ({"coef": [[1e300, -3.0], [3.0, -3.0], [-3.0, 3.0]]}, "coef[0][0]"),
    "threshold -1": ({"threshold": -1}, "threshold"),
    "temperature 0": ({"temperature": 0}, "temperature"),
    "no held-out record": ({"held_out": DROP}, "held_out"),
    "more right than said": ({"held_out": {"disk_full": {"right": 3, "said": 2, "support": 2}}}, "held_out.disk_full.right"),
    "unknown analyzer": ({"blocks": [{"analyzer": "pickle", "terms": [], "idf": []}]}, "blocks[0].analyzer"),
    "incident term out of range": ({"incidents": [{"name": "x", "cause": "disk_full", "terms": [[9, 1.0]]}]},
                                   "incidents[0].terms[0]"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_model_names_the_field(tmp_path, case):
    from logsense.errors import ExitCode, ModelError

    changes, field = MALFORMED[case]
    data = _small_model(**changes)
    with pytest.raises(ModelError) as e:
        LinearModel.load(_write(tmp_path, data))
    assert f"field `{field}`" in str(e.value), str(e.value)
    assert e.value.exit_code == ExitCode.BAD_INPUT


def test_the_small_model_is_valid_and_capped(tmp_path):
    model = LinearModel.load(_write(tmp_path, _small_model()))
    raw = model.predict("no space left on device")
    assert raw.cause == "disk_full" and raw.p > 0.9
    capped = model.capped(raw)
    assert capped.prob("disk_full") == 0.5  # right on 1 of the 2 held-out logs it called disk_full
    assert capped.prob("healthy") == raw.prob("healthy")  # "no failure" is never capped


def _failed_unknown():
    from logsense.model import Diagnosis, Origin

    return Diagnosis(cause="unknown", rule=None, root=True, origin=Origin.RULE, confidence=0.3, title="unknown",
                     explanation="Something fatal happened.", phase="weight_loading", evidence=(), fixes=())


@pytest.mark.parametrize(("right", "said", "said_as"), [(0, 3, "nothing"), (0, 0, "nothing"), (3, 4, "maybe"),
                                                     (9, 10, "named")])
def test_a_cause_is_stated_only_as_sure_as_it_earned(tmp_path, right, said, said_as):
    """p(disk_full) is above 0.99 here; the held-out record decides what is said: named, a maybe, or nothing."""
    from logsense.learn.classifier import Classifier

    held = {"disk_full": {"right": right, "said": said, "support": 3}}
    clf = Classifier(_write(tmp_path, _small_model(held_out=held)))
    doc = features.build_doc([], [], "weight_loading", False, 0, 1)
    doc = Doc(doc.text + "\nOSError: no space left on device", tracebacks=1)
    root = clf.consult(doc, [_failed_unknown()], phase="weight_loading")[0]
    if said_as == "named":  # its record lets it say at least 0.9 (NAME_AT)
        assert root.cause == "disk_full" and root.origin.value == "classifier"
        assert root.confidence == 0.9  # min(p, 9 / 10)
        assert "right on 9 of 10 logs it called disk_full" in root.explanation
        return
    assert root.cause == "unknown" and root.origin.value == "rule"  # the failure stays unnamed
    if said_as == "maybe":  # right at least half the time held out: offered, at its record
        assert "Maybe disk_full" in root.explanation and "p=0.75" in root.explanation
        assert root.nearest == "corpora/x.log"
    else:  # right less often than not, or never called: no maybe at all
        assert "Maybe" not in root.explanation and root.nearest is None
        assert "no likely guess" in root.explanation


def test_model_size_and_gzip_are_capped(tmp_path, monkeypatch):
    import gzip

    from logsense.errors import ModelError
    from logsense.learn import linear

    good = json.dumps(_small_model()).encode()
    gz = tmp_path / "m.json.gz"
    gz.write_bytes(gzip.compress(good))
    assert LinearModel.load(gz).classes == ["disk_full", "healthy"]
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(good)[:-30])
    with pytest.raises(ModelError, match="truncated or corrupt"):
        LinearModel.load(cut)
    monkeypatch.setattr(linear, "MAX_MODEL_BYTES", len(good) - 1)
    with pytest.raises(ModelError, match="inflates past"):
        LinearModel.load(gz)
    with pytest.raises(ModelError, match="larger than"):
        LinearModel.load(_write(tmp_path, _small_model()))


def test_a_malformed_model_is_exit_2_on_the_command_line(tmp_path):
    log = CORPORA / "constructed" / "unknown-segfault-attention-init.log"
    for name, data in (("nan.json", _small_model(coef=[[3.0, -3.0], [float("nan"), 1.0], [0.0, 0.0]])),
                       ("short.json", _small_model(intercept=[0.0]))):
        p = _logsense("analyze", str(log), env={"LOGSENSE_MODEL": str(_write(tmp_path, data, name))})
        assert p.returncode == 2, p.stdout + p.stderr
        assert "field `" in p.stderr and "nan" not in p.stdout.lower()
    import gzip

    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps(_small_model()).encode())[:-30])
    p = _logsense("analyze", str(log), env={"LOGSENSE_MODEL": str(cut)})
    assert p.returncode == 2 and "truncated" in p.stderr, p.stderr


def test_shipped_model_is_current(incidents, shipped):
    """The shipped model was built from the corpus as it is: rebuild it after changing corpora/."""
    want = corpus.corpus_hash(incidents)
    got = shipped.meta.get("corpus_hash")
    assert got == want, (
        f"logsense/data/classifier.json was trained on another corpus ({shipped.meta.get('logs')} logs; "
        f"corpora/ now has {len(incidents)}): rebuild it with `{REBUILD}`"
    )


def test_readme_table_is_the_shipped_models(shipped):
    """The README's held-out figures are the ones the shipped model was trained with."""
    from logsense.commands.learn import markdown_table, readme_table

    want = markdown_table(shipped.meta["cross_validation"])
    got = readme_table((ROOT / "README.md").read_text(encoding="utf-8"))
    assert got == want, f"README.md's classifier table is not the shipped model's: rebuild both with `{REBUILD}`"


@pytest.mark.slow
def test_readme_table_is_what_eval_prints():
    from logsense.commands.learn import readme_table

    p = subprocess.run([sys.executable, "-m", "logsense", "eval", "corpora/", "--format", "markdown"],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"}, timeout=600)
    assert p.returncode == 0, p.stderr
    assert readme_table((ROOT / "README.md").read_text(encoding="utf-8")) == p.stdout, f"rebuild with `{REBUILD}`"


def test_shipped_model_speaks_taxonomy(shipped):
    from logsense.taxonomy import causes

    assert set(shipped.classes) <= set(causes()), set(shipped.classes) - set(causes())
    assert "healthy" in shipped.classes
    assert 0 < shipped.threshold < 1 and shipped.temperature > 0
    text = shipped_model_path().read_text(encoding="utf-8")
    assert "/home/" not in text and "/work/" not in text and "/root/" not in text


# --- deciding ---


def test_decide():
    probs = {"kv_cache_insufficient": 0.82, "healthy": 0.1, "disk_full": 0.08}
    assert decide(probs, 0.5, failed=True) == ("kv_cache_insufficient", 0.82, "kv_cache_insufficient")
    assert decide(probs, 0.9, failed=True)[0] == "unknown"
    assert decide(probs, 0.9, failed=True)[2] == "kv_cache_insufficient"  # the best guess is kept
    assert decide(probs, 0.5, failed=False)[0] == "healthy"  # the model never makes a log fail
    assert decide({"healthy": 0.7, "disk_full": 0.2}, 0.5, failed=True)[:2] == ("unknown", 0.2)  # nor undoes one
    assert decide({"unknown": 0.6, "disk_full": 0.3}, 0.5, failed=True)[0] == "unknown"


def test_a_held_out_log_is_capped_by_the_other_folds_records():
    from logsense.learn.train import capped_verdicts, held_out_records

    probs = [{"a": 0.9, "b": 0.05, "healthy": 0.05}] * 4
    y, folds = ["b", "b", "a", "a"], [0, 0, 1, 1]
    uncapped, capped, p = capped_verdicts(probs, [True] * 4, y, folds, 0.5)
    assert uncapped == ["a"] * 4
    # fold 0 is judged by fold 1's record (a: 2 of 2 right), fold 1 by fold 0's (a: 0 of 2)
    assert capped == ["a", "a", "unknown", "unknown"] and p[:2] == [0.9, 0.9]
    rec = held_out_records(y, uncapped, ["a", "b", "healthy"])
    assert (rec["a"].right, rec["a"].said, rec["a"].support, rec["a"].precision) == (2, 4, 2, 0.5)
    assert rec["b"].said == 0 and rec["b"].cap == 0.0


# --- evaluation splits ---


def test_variants_share_a_group(incidents, docs):
    groups = corpus.groups(incidents, docs)
    by_stem: dict[str, set[str]] = {}
    for inc, g in zip(incidents, groups, strict=True):
        by_stem.setdefault(inc.log.name.split(".", 1)[0], set()).add(g)
    assert all(len(gs) == 1 for gs in by_stem.values()), {s: gs for s, gs in by_stem.items() if len(gs) > 1}


def test_group_kfold_never_splits_a_group(incidents, docs):
    import numpy as np
    from sklearn.model_selection import GroupKFold

    from logsense.learn.train import n_splits_for

    groups = corpus.groups(incidents, docs)
    for tr, te in GroupKFold(n_splits=n_splits_for(groups)).split(np.zeros(len(groups)), groups=groups):
        assert not {groups[i] for i in tr} & {groups[i] for i in te}


# --- commands ---


def _tiny_corpus(tmp_path: Path, incidents) -> Path:
    """A few corpus logs of a few causes, copied: fast to train on."""
    out = tmp_path / "tiny"
    picked: dict[str, int] = {}
    for inc in incidents:
        if picked.get(inc.cause, 0) >= 2 or (len(picked) >= 4 and inc.cause not in picked):
            continue
        picked[inc.cause] = picked.get(inc.cause, 0) + 1
        d = out / inc.log.parent.name
        d.mkdir(parents=True, exist_ok=True)
        (d / inc.log.name).write_bytes(inc.log.read_bytes())
        (d / inc.label_path.name).write_bytes(inc.label_path.read_bytes())
    return out


def _logsense(*args: str, env: dict | None = None):
    """`logsense ARGS` in this process (its exit code and output), with `env` set while it runs."""
    from conftest import run_cli

    return run_cli(*args, env={"NO_COLOR": "1", **(env or {})}, text=True)


def test_train_is_reproducible_and_eval_reports(tmp_path, incidents, capsys):
    from logsense.commands import learn

    tiny = _tiny_corpus(tmp_path, incidents)
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert learn.train([str(tiny)], str(out)) == 0
        printed = capsys.readouterr().out
        assert "held out" in printed and "wrote" in printed
    assert (a / "classifier.json").read_bytes() == (b / "classifier.json").read_bytes()
    assert learn.evaluate([str(tiny)], "json") == 0
    ev = json.loads(capsys.readouterr().out)
    assert set(ev["methods"]) == {"model", "nearest-neighbour", "majority"}
    assert "macro_f1" in ev["methods"]["model"]["all"] and ev["confusion"]["labels"]
    assert learn.evaluate([str(tiny)]) == 0
    printed = capsys.readouterr().out
    assert "per cause" in printed and "confusion matrix" in printed


_MODULES = (
    "import sys, atexit, json\n"
    "atexit.register(lambda: sys.stderr.write('MODULES ' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})) + '\\n'))\n"
    "sys.argv = ['logsense'] + sys.argv[1:]\n"
    "from logsense.cli import main\n"
    "main()\n"
)


def _modules_after(*args: str) -> tuple[set[str], subprocess.CompletedProcess]:
    p = subprocess.run([sys.executable, "-c", _MODULES, *args], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "NO_COLOR": "1"}, timeout=60)
    line = next(x for x in p.stderr.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line[len("MODULES "):])), p


def test_analyze_imports_no_sklearn_nor_pandas(incidents, shipped):
    rule_case = CORPORA / "mission" / "python-h-missing.log"
    mods, p = _modules_after("analyze", str(rule_case))
    assert p.returncode == 1, p.stdout + p.stderr
    assert not mods & {"sklearn", "pandas", "numpy", "scipy"}, mods & {"sklearn", "pandas", "numpy", "scipy"}
    # the classifier's own path: a pure-Python dot product, still no scikit-learn
    failing = next(i for i in incidents if i.cause not in ("healthy", "unknown"))
    mods, p = _modules_after("analyze", "--no-rules", "--format", "json", str(failing.log))
    assert p.returncode in (0, 1), p.stderr
    assert not mods & {"sklearn", "pandas", "scipy"}, mods & {"sklearn", "pandas", "scipy"}


def test_healthy_startups_stay_healthy(incidents, shipped):
    """With the classifier (rules on, and --no-rules) no healthy corpus log gets a root diagnosis."""
    from logsense.analysis import read_into
    from logsense.commands.common import rules_from_options
    from logsense.learn.classifier import Classifier
    from logsense.pipeline import Pipeline

    path = shipped_model_path()
    healthy = [i for i in incidents if i.cause == "healthy"]
    assert healthy
    for no_rules in (False, True):
        rs = rules_from_options(None, None, no_rules)
        clf = Classifier(path)
        for inc in healthy:
            report, _ = read_into(Pipeline(rs, clf), str(inc.log))
            roots = [d for d in report.diagnoses if d.root]
            assert not roots, f"{inc.name} (no_rules={no_rules}): {roots[0].cause} from {roots[0].origin.value}"


def test_classifier_diagnosis(incidents, shipped):
    from logsense.analysis import read_into
    from logsense.commands.common import rules_from_options
    from logsense.learn.classifier import Classifier
    from logsense.pipeline import Pipeline
    from logsense.taxonomy import causes

    rs = rules_from_options(None, None, True)
    clf = Classifier(shipped_model_path())
    seen = 0
    for inc in incidents:
        if inc.cause in ("healthy", "unknown"):
            continue
        report, _ = read_into(Pipeline(rs, clf), str(inc.log))
        root = report.root
        if root is None or root.cause == "unknown":
            continue
        seen += 1
        assert root.origin.value == "classifier" and root.root and root.rule is None
        assert shipped.threshold <= root.confidence <= 1
        assert root.nearest and root.nearest.startswith("corpora/")
        assert [f.value for f in root.fixes] == list(causes()[root.cause].fix)
        assert "probably" in root.explanation
        if seen >= 5:
            break
    assert seen, "the classifier named no cause on its own training logs"


def test_below_the_threshold_it_says_unknown(incidents, shipped):
    from logsense.analysis import read_into
    from logsense.commands.common import rules_from_options
    from logsense.learn.classifier import Classifier
    from logsense.pipeline import Pipeline

    rs = rules_from_options(None, None, True)
    clf = Classifier(shipped_model_path(), threshold=1.01)
    failing = [i for i in incidents if i.cause not in ("healthy", "unknown")][:6]
    verdicts = []
    for inc in failing:
        report, _ = read_into(Pipeline(rs, clf), str(inc.log))
        root = report.root
        verdicts.append(root.cause if root else None)
        if root is not None:
            assert root.cause == "unknown"
            assert "Maybe " in root.explanation or "no likely guess" in root.explanation
    assert "unknown" in verdicts


def test_stdin_is_read_again_for_the_model(incidents, shipped):
    failing = next(i for i in incidents if i.cause not in ("healthy", "unknown") and i.log.suffix == ".log")
    a = _logsense("analyze", "--no-rules", "--format", "json", str(failing.log))
    with open(failing.log, "rb") as fh:
        b = subprocess.run([sys.executable, "-m", "logsense", "analyze", "--no-rules", "--format", "json", "-"],
                           stdin=fh, capture_output=True, text=True, cwd=ROOT, timeout=60)
    da, db = json.loads(a.stdout)["diagnoses"], json.loads(b.stdout)["diagnoses"]
    assert [d["cause"] for d in da] == [d["cause"] for d in db]
    assert [d["confidence"] for d in da] == [d["confidence"] for d in db]


def test_missing_model_with_no_rules_is_an_error(tmp_path):
    p = _logsense("analyze", "--no-rules", str(CORPORA / "mission" / "python-h-missing.log"),
                  env={"LOGSENSE_MODEL": str(tmp_path / "none.json")})
    assert p.returncode == 2
    assert f"logsense train corpora/ -o {tmp_path / 'none.json'}" in p.stderr  # writes the file it names


def test_the_errorish_prefilter_never_changes_the_answer():
    """is_errorish skips its forty-branch regex when no literal of it is in the line: the same answer on every
    line of the corpus, and on the branches no plain literal covers (inf, hang, timedout)."""
    import re

    from conftest import CORPORA
    from logsense.learn import features as f

    def by_regex(line: str) -> bool:
        return bool(f._ERRORISH.search(line)) and not any(x in line[:64] for x in f._NOT_ERRORS)

    lines = [line for p in sorted(CORPORA.rglob("*.log")) for line in p.read_text(errors="replace").splitlines()]
    lines += ["loss=inf,", "(hanging)", "hang on", "Timedout waiting", "exchange rates", "INFO: all good",
              "a NaN", "RuntimeError: x", "ERROR 01-01 x", "[2026] FATAL: y"]
    assert len(lines) > 10_000
    assert [f.is_errorish(x) for x in lines] == [by_regex(x) for x in lines]
    level = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b")
    assert [f.is_level_error(x) for x in lines] == [bool(level.search(x)) for x in lines]
