"""`logsense stats`: one row per log from files, dirs, globs and archives, as table / csv / json / parquet."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

from conftest import CORPORA, ROOT

pd = pytest.importorskip("pandas")

MISSION = CORPORA / "mission"
FAILED = MISSION / "python-h-missing.log"
HEALTHY = CORPORA / "healthy" / "k26-ddtree-ready.log"


def _stats(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logsense", "stats", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "NO_COLOR": "1"}, timeout=120)


@pytest.fixture(scope="module")
def two_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    (d / "bad.log").write_bytes(FAILED.read_bytes())
    (d / "good.log").write_bytes(HEALTHY.read_bytes())
    (d / "bad.label.yaml").write_text("cause: python_headers_missing\n")  # labels are not logs
    return d


def test_one_row_per_log(two_logs):
    from logsense.batch import COLUMNS, frame

    df = frame([str(two_logs)], jobs=1)
    assert list(df.columns) == COLUMNS
    assert len(df) == 2
    bad = df[df["source"].str.endswith("bad.log")].iloc[0]
    good = df[df["source"].str.endswith("good.log")].iloc[0]
    assert bad["status"] == "failed" and bad["cause"] == "python_headers_missing"
    assert bad["phase"] == "cuda_graph_capture" and bad["origin"] == "rule" and bad["rule"]
    assert "python3" in bad["fix"] and 0 < bad["confidence"] <= 1
    assert bad["time_to_failure"] > 60 and pd.isna(bad["time_to_ready"])
    assert good["status"] == "ready" and good["cause"] == "healthy" and pd.isna(good["time_to_failure"])
    assert good["time_to_ready"] > 60
    assert good["host"]


def test_pool_gives_the_same_rows_in_the_same_order(tmp_path):
    """--jobs 2 (more logs than the pool holds at once, tar members spooled) gives --jobs 1's rows, in its order."""
    from logsense.batch import frame

    logs = sorted(p for p in CORPORA.rglob("*.log") if p.is_file())[::8]
    _tgz(tmp_path / "a.tar.gz", {f"m/{i:02d}-{p.name}": p.read_bytes() for i, p in enumerate(reversed(logs))})
    for i, p in enumerate(logs[:10]):
        (tmp_path / f"{i:02d}-{p.name}").write_bytes(p.read_bytes())
    a = frame([str(tmp_path)], jobs=1)
    b = frame([str(tmp_path)], jobs=2)
    assert len(a) == len(logs) + 10
    pd.testing.assert_frame_equal(a, b)


def test_workers_capped_by_the_logs_and_the_cores(two_logs):
    """`-j 64` on two logs starts two workers at most, never 64."""
    import multiprocessing

    from logsense.batch import collect

    seen: list[int] = []
    rows = collect([str(two_logs)], jobs=64, on_row=lambda _row: seen.append(len(multiprocessing.active_children())))
    assert len(rows) == 2
    assert max(seen) <= min(2, os.cpu_count() or 1)


def test_time_to_failure_across_stamps_with_and_without_a_year():
    """journalctl's short stamps have no year, SGLang's have one: the time between them is the log's, not 26 years."""
    from logsense.batch import row_from_path

    row = row_from_path(str(MISSION / "flash-attn-cute-warmup.log"))
    assert row["status"] == "failed" and 60 < row["time_to_failure"] < 3600


def test_time_to_failure_of_a_cause_named_at_the_end_long_before_it():
    """An unknown failure's time is its fatal line's, even with thousands of dated lines after it."""
    from datetime import datetime, timedelta

    from logsense.batch import row_from_bytes

    t0 = datetime(2026, 1, 1)

    def at(s: int) -> str:
        return (t0 + timedelta(seconds=s)).strftime("[%Y-%m-%d %H:%M:%S]")

    lines = [f"{at(0)} server_args=ServerArgs(model_path='/models/x', tp_size=1)",
             f"{at(1)} Load weight begin. avail mem=70.00 GB",
             f"{at(5)} Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 10, in run',
             "    frob()",
             "RuntimeError: the frobnicator exploded"]
    lines += [f"{at(10 + i)} Waiting for the watchdog, tick {i}" for i in range(6000)]
    row = row_from_bytes("late.log", ("\n".join(lines) + "\n").encode())
    assert (row["status"], row["cause"], row["time_to_failure"]) == ("failed", "unknown", 5.0)


def test_archives_and_globs(tmp_path, two_logs):
    from logsense.batch import frame

    tgz = tmp_path / "incidents.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(two_logs / "bad.log", arcname="box1/bad.log")
        tar.add(two_logs / "good.log", arcname="box2/good.log")
        info = tarfile.TarInfo("box2/README.md")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    zp = tmp_path / "incidents.zip"
    with zipfile.ZipFile(zp, "w") as z:
        z.write(two_logs / "bad.log", "x/bad.log")
    df = frame([str(tgz), str(zp), str(two_logs / "*.log")], jobs=2)
    assert sorted(df["source"].str.rsplit("/", n=1).str[-1]) == ["bad.log", "bad.log", "bad.log", "good.log", "good.log"]
    assert (df["source"] == f"{tgz}!box1/bad.log").any() and (df["source"] == f"{zp}!x/bad.log").any()
    assert set(df["status"]) == {"failed", "ready"}


def test_an_unreadable_log_is_a_row_not_a_crash(tmp_path):
    from logsense.batch import frame

    bad = tmp_path / "broken.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    df = frame([str(bad)], jobs=1)
    assert df.iloc[0]["status"] == "error" and df.iloc[0]["error"]


def test_rows_for_a_partition():
    """The per-log function as Spark's mapPartitions or a Dask bag would call it: (name, bytes) in, rows out."""
    from logsense.batch import rows

    out = list(rows([("a.log", FAILED.read_bytes()), ("b.log", HEALTHY.read_bytes())]))
    assert [r["cause"] for r in out] == ["python_headers_missing", "healthy"]
    json.dumps(out)  # plain values: they travel between processes and machines


def test_cli_formats(tmp_path, two_logs):
    p = _stats(str(two_logs), "--format", "csv", "--jobs", "1")
    assert p.returncode == 0, p.stderr
    df = pd.read_csv(io.StringIO(p.stdout))
    assert len(df) == 2 and {"cause", "phase", "time_to_failure", "time_to_ready"} <= set(df.columns)
    p = _stats(str(two_logs), "--format", "json", "-o", str(tmp_path / "rows.json"))
    assert p.returncode == 0, p.stderr
    assert len(json.loads((tmp_path / "rows.json").read_text())) == 2
    p = _stats(str(two_logs))
    assert p.returncode == 0 and "python_headers_missing" in p.stdout and "2 logs" in p.stdout
    p = _stats(str(tmp_path / "nothing-here"))
    assert p.returncode == 2
    p = _stats(str(two_logs), "--format", "xml")
    assert p.returncode == 2


def test_parquet(tmp_path, two_logs):
    pytest.importorskip("pyarrow")
    out = tmp_path / "rows.parquet"
    p = _stats(str(two_logs), "--format", "parquet", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert len(pd.read_parquet(out)) == 2


def _tgz(path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_broken_archives_are_error_rows_and_the_rest_goes_on(tmp_path, two_logs):
    big = b"".join(b"[2026-01-01 00:00:00] filler %d\n" % i for i in range(60000))
    whole = tmp_path / "whole.tar.gz"
    _tgz(whole, {"a/bad.log": FAILED.read_bytes(), "b/big.log": big, "c/good.log": HEALTHY.read_bytes()})
    data = whole.read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) * 2 // 3])
    (tmp_path / "notzip.zip").write_bytes(b"this is not a zip")
    (tmp_path / "nottar.tar.gz").write_bytes(__import__("gzip").compress(b"not a tar at all\n" * 100))
    (tmp_path / "reallybz2.log.gz").write_bytes(__import__("bz2").compress(FAILED.read_bytes()))
    (tmp_path / "reallyzstd.log.gz").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 64)
    (tmp_path / "good.log").write_bytes(HEALTHY.read_bytes())
    os.mkfifo(tmp_path / "pipe.log")  # walked, never opened: it would wait forever
    p = _stats(str(tmp_path), "-f", "json", "-j", "2")
    assert p.returncode == 0, p.stderr
    rows = {r["source"].replace(str(tmp_path) + "/", ""): r for r in json.loads(p.stdout)}
    assert "pipe.log" not in rows
    assert rows["cut.tar.gz!a/bad.log"]["status"] == "failed"
    assert any(k.startswith("cut.tar.gz") and r["status"] == "error" for k, r in rows.items())
    assert rows["notzip.zip"]["status"] == "error" and "zip" in rows["notzip.zip"]["error"]
    assert rows["nottar.tar.gz"]["status"] == "error" and "tar" in rows["nottar.tar.gz"]["error"]
    assert rows["reallybz2.log.gz"]["status"] == "failed"
    assert rows["reallyzstd.log.gz"]["status"] == "error" and "zstd" in rows["reallyzstd.log.gz"]["error"]
    assert rows["good.log"]["status"] == "ready"
    assert "whole.tar.gz!b/big.log" in rows


def test_tar_members_are_spooled_not_held(tmp_path):
    from logsense import batch

    tgz = tmp_path / "x.tar.gz"
    _tgz(tgz, {"a.log": b"x\n" * 1000, "b.log": b"y\n" * 1000})
    spool = tmp_path / "spool"
    spool.mkdir()
    tasks = list(batch.tasks([str(tgz)], str(spool)))
    assert [t.kind for t in tasks] == ["spooled", "spooled"]
    assert all(not isinstance(t, tuple) for t in tasks)
    batch.row_from_path(tasks[0])
    assert not os.path.exists(tasks[0].path)  # removed once read


def test_csv_has_no_raw_escapes(tmp_path):
    f = tmp_path / ("evil\x1b]0;PWNED\x07.log")
    f.write_bytes(FAILED.read_bytes())
    p = _stats(str(tmp_path), "-f", "csv")
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout and "evil.log" in p.stdout


def test_stats_without_pandas_names_the_extra(tmp_path):
    code = (f"import sys; sys.modules['pandas'] = None; sys.argv = ['logsense', 'stats', {str(FAILED)!r}]; "
            "from logsense.cli import main; main()")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "[stats]'" in p.stderr and "pip install" in p.stderr and "internal error" not in p.stderr


def test_rows_through_the_scanner_are_those_of_every_line(monkeypatch):
    """stats reads a log as analyze does (the block scanner); its rows, times included, are those of feeding
    every line: the dated lines a time is read from are fed too."""
    from logsense.batch import row_from_path

    logs = sorted(p for p in CORPORA.rglob("*.log") if p.is_file())[::6] + [MISSION / "flash-attn-cute-warmup.log",
                                                                             CORPORA / "constructed" / "hf-gated-401-llama.log"]
    scanned = [row_from_path(str(p)) for p in logs]
    monkeypatch.setenv("LOGSENSE_SCAN", "off")
    every = [row_from_path(str(p)) for p in logs]
    assert scanned == every
    assert sum(r["time_to_failure"] is not None for r in every) > 10
