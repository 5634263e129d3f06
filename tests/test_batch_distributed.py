"""Past one machine, as the README shows it: a Dask bag over `row_from_path` on a local dask.distributed
cluster (two worker processes), and Spark's `binaryFiles(...).mapPartitions(rows)` in local mode, give the
rows `logsense stats` gives. Both start real worker processes (and Spark a JVM): slow. Without the
`distributed` extra they skip, except under CI (CI=true), where a missing package is a failure."""

from __future__ import annotations

import gzip
import importlib
import os
import sys
from pathlib import Path

import pytest

from conftest import CORPORA, ROOT

pytestmark = pytest.mark.slow


def _need(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed: pip install -e '.[distributed]'"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI: " + message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> list[str]:
    """Twelve corpus logs of different causes, servers and formats, one of them gzip-compressed."""
    d = tmp_path_factory.mktemp("incidents")
    picked = sorted(p for p in CORPORA.rglob("*.log") if p.is_file())[::20]
    out = []
    for i, p in enumerate(picked):
        if i == 1:
            dest = d / f"{i:02d}-{p.name}.gz"
            dest.write_bytes(gzip.compress(p.read_bytes(), mtime=0))
        else:
            dest = d / f"{i:02d}-{p.name}"
            dest.write_bytes(p.read_bytes())
        out.append(str(dest))
    return out


@pytest.fixture(scope="module")
def stats_rows(logs) -> list[dict]:
    from logsense.batch import collect

    return collect(logs, jobs=1)


@pytest.fixture()
def workers_import_this_tree(monkeypatch):
    """Worker processes (Dask's nannies, Spark's Python workers) import logsense from this work tree."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


@pytest.mark.usefixtures("workers_import_this_tree")
def test_dask_bag_on_a_local_cluster_gives_the_stats_rows(logs, stats_rows):
    _need("dask.bag")
    _need("distributed")
    import dask.bag as db
    from distributed import Client, LocalCluster

    from logsense.batch import COLUMNS, row_from_path

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    with cluster, Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        rows = db.from_sequence(logs, npartitions=4).map(row_from_path)
        assert rows.compute() == stats_rows
        df = rows.to_dataframe(meta={c: object for c in COLUMNS}).compute()
        pids = client.run(os.getpid)
    assert list(df.columns) == COLUMNS and list(df["source"]) == logs
    assert list(df["cause"]) == [r["cause"] for r in stats_rows]
    assert os.getpid() not in pids.values() and len(set(pids.values())) == 2  # the rows came from two processes


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
@pytest.mark.usefixtures("workers_import_this_tree")
def test_spark_map_partitions_in_local_mode_gives_the_stats_rows(logs, stats_rows, monkeypatch):
    _need("pyspark")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from logsense.batch import COLUMNS, SPARK_SCHEMA, rows

    spark = (SparkSession.builder.master("local[2]").appName("logsense-test")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    try:
        spark.sparkContext.setLogLevel("ERROR")
        files = spark.sparkContext.binaryFiles(str(Path(logs[0]).parent / "*"), minPartitions=2)
        got = files.mapPartitions(rows).collect()
        df = files.mapPartitions(rows).toDF(SPARK_SCHEMA)
        assert df.columns == COLUMNS
        frame_rows = [r.asDict() for r in df.collect()]
    finally:
        spark.stop()
    by_name = {Path(r["source"]).name: r for r in stats_rows}
    assert sorted(Path(r["source"]).name for r in got) == sorted(by_name)
    for r in got + frame_rows:
        want = by_name[Path(r["source"]).name]
        assert {k: v for k, v in r.items() if k != "source"} == {k: v for k, v in want.items() if k != "source"}
