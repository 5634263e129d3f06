"""`logsense label`: writes the corpus label format, checks ids, never overwrites by accident."""

from __future__ import annotations

import pytest
import yaml

from logsense.check import check, read_label
from logsense.commands import label as label_cmd
from logsense.errors import SourceError, UsageError

HEALTHY = """\
[2026-11-20 10:00:00] server_args=ServerArgs(model_path='/models/tiny', tokenizer_path='/models/tiny', tp_size=1)
[2026-11-20 10:00:03 TP0] Load weight begin. avail mem=78.48 GB
[2026-11-20 10:00:10 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB
[2026-11-20 10:00:21] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-11-20 10:00:23] The server is fired up and ready to roll!
"""


@pytest.fixture
def log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c").mkdir()
    path = tmp_path / "c" / "ready.log"
    path.write_text(HEALTHY)
    return path


def test_writes_the_corpus_format(log, capsys):
    code = label_cmd.main(str(log), "healthy", [], "serving", "a test box", "constructed", False)
    assert code == 0
    target = log.with_name("ready.label.yaml")
    assert target.read_text() == "cause: healthy\nphase: serving\norigin: constructed\nsource: a test box\n"
    out = capsys.readouterr()
    assert "wrote c/ready.label.yaml: cause healthy" in out.out
    assert "analyze says: no failure (status ready, phase serving)" in out.out
    assert out.err == ""
    label, problems = read_label(target)
    assert problems == [] and label.cause == "healthy"
    assert check(["c"]).problems == []  # what label writes, check accepts


def test_fix_tokens_are_a_list_and_the_label_round_trips(log, capsys):
    label_cmd.main(str(log), "python_headers_missing", ["python3.10-dev", "apt install"], None, None, "recorded", False)
    data = yaml.safe_load(log.with_name("ready.label.yaml").read_text())
    assert data == {"cause": "python_headers_missing", "fix_any": ["python3.10-dev", "apt install"], "origin": "recorded"}
    assert "fix_any: [python3.10-dev, apt install]" in log.with_name("ready.label.yaml").read_text()


def test_warns_when_analyze_disagrees(log, capsys):
    assert label_cmd.main(str(log), "python_headers_missing", [], None, None, "recorded", False) == 0
    err = capsys.readouterr().err
    assert "warning: the label differs from what analyze says: diagnosed no failure" in err
    assert "labelled python_headers_missing" in err


def test_an_unknown_cause_lists_close_ids_and_writes_nothing(log):
    with pytest.raises(UsageError, match=r"unknown cause 'python_header_missing' \(close: python_headers_missing"):
        label_cmd.main(str(log), "python_header_missing", [], None, None, "recorded", False)
    assert not log.with_name("ready.label.yaml").exists()


def test_bad_phase_origin_and_paths(log, tmp_path):
    with pytest.raises(UsageError, match="unknown phase 'capture'"):
        label_cmd.main(str(log), "healthy", [], "capture", None, "recorded", False)
    with pytest.raises(UsageError, match="'found' is not one of: recorded, constructed"):
        label_cmd.main(str(log), "healthy", [], None, None, "found", False)
    with pytest.raises(SourceError, match="no such file"):
        label_cmd.main(str(tmp_path / "nope.log"), "healthy", [], None, None, "recorded", False)
    with pytest.raises(UsageError, match="that is a label file"):
        label_cmd.main("c/ready.label.yaml", "healthy", [], None, None, "recorded", False)


def test_refuses_to_overwrite_without_force(log):
    target = log.with_name("ready.label.yaml")
    target.write_text("cause: healthy\nnotes: keep me\n")
    with pytest.raises(UsageError, match="exists; use --force"):
        label_cmd.main(str(log), "unknown", [], None, None, "recorded", False)
    assert "keep me" in target.read_text()
    assert label_cmd.main(str(log), "unknown", [], None, None, "recorded", True) == 0
    assert target.read_text().startswith("cause: unknown\n")


def test_gz_logs_get_the_plain_label_name(log):
    import gzip

    gz = log.with_name("zipped.log.gz")
    gz.write_bytes(gzip.compress(HEALTHY.encode()))
    label_cmd.main(str(gz), "healthy", [], None, None, "recorded", False)
    assert log.with_name("zipped.label.yaml").is_file()


def test_the_cli(log):
    from conftest import run_cli

    p = run_cli("label", "c/ready.log", "--cause", "healthy", "--phase", "serving", "--source", "s",
                "--origin", "constructed", text=True)
    assert p.returncode == 0, p.stderr
    assert log.with_name("ready.label.yaml").read_text().startswith("cause: healthy\nphase: serving\n")
    p = run_cli("label", "c/ready.log", "--cause", "healthy", text=True)
    assert p.returncode == 2 and "use --force" in p.stderr
    p = run_cli("label", "c/ready.log", "--cause", "oom", "--force", text=True)
    assert p.returncode == 2 and "unknown cause 'oom'" in p.stderr
