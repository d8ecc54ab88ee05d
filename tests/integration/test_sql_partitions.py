"""A SQL input is read in ranges of a partition column: every row exactly once,
whatever the public bounds (rows outside them and NULL keys included)."""

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.jobio import load_input, sql_engine, sql_ranges
from dpmic_dask.batch.jobs import JobError, load_job
from tests.jobfiles import write_job


@pytest.fixture
def warehouse(tmp_path):
    gen = np.random.default_rng(5)  # test data only
    rows = 700
    frame = pd.DataFrame({"id": np.arange(rows, dtype=float), "a": gen.random(rows),
                          "b": gen.random(rows)})
    frame.loc[[3, 400], "id"] = np.nan  # keys that are NULL still belong to a range
    frame.loc[650:, "id"] += 10_000  # keys far above the public bounds
    frame.loc[:20, "id"] -= 500  # and below them
    url = f"sqlite:///{tmp_path / 'w.db'}"
    frame.to_sql("facts", sql_engine(url), index=False)
    return tmp_path, url, frame


TABLE = {"sql_table": "facts"}
PARTITIONED = {"partition_column": "id", "partition_bounds": [0, 640]}


def job_file(tmp_path, url, source, cluster=None, **partitioning):
    """The job over the SQL ``source`` (its [input] keys besides ``sql_url``),
    loaded; no [cluster] section unless given, no [ledger] section."""
    return load_job(write_job(tmp_path / "job.toml", name="p",
                              input={"sql_url": url, **source, **partitioning},
                              columns={"a": [0, 1], "b": [0, 1]}, cluster=cluster,
                              ledger=None))


@pytest.mark.parametrize("source", [TABLE, {"sql_query": "SELECT id, a, b FROM facts"}])
@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_every_row_is_read_exactly_once(warehouse, source, partitions):
    tmp_path, url, frame = warehouse
    job = job_file(tmp_path, url, source, **PARTITIONED, partitions=partitions)
    ddf = load_input(job)
    assert ddf.npartitions == partitions
    got = ddf[["a", "b"]].compute().sort_values(["a", "b"]).reset_index(drop=True)
    want = frame[["a", "b"]].sort_values(["a", "b"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    sizes = ddf.map_partitions(len).compute().tolist()
    if partitions == 7:  # ~100 keys per range; the end ranges take what is outside
        assert sizes[0] >= 21 + 2 and sizes[-1] >= 50 and sum(sizes) == len(frame)


def test_ranges_cover_the_line():
    assert sql_ranges(None, None, 1) == [None]
    assert sql_ranges("k", (0.0, 1.0), 1) == [("k", None, None)]
    assert sql_ranges("k", (0.0, 3.0), 3) == [("k", None, 1.0), ("k", 1.0, 2.0), ("k", 2.0, None)]


@pytest.mark.parametrize("partitioning, message", [
    ({"partitions": 4}, "needs input.partition_column"),
    ({"partition_column": "id"}, "needs input.partition_bounds"),
    ({"partition_column": "id", "partition_bounds": [5, 1]}, "lo < hi"),
    ({"partition_column": "id", "partition_bounds": [0, 1], "partitions": 0}, "from 1 to"),
    ({"partition_column": "id", "partition_bounds": [0, 1], "partitions": True}, "from 1 to"),
    ({"partition_column": "", "partition_bounds": [0, 1]}, "non-empty"),
])
def test_partition_keys_are_checked(warehouse, partitioning, message):
    tmp_path, url, _ = warehouse
    with pytest.raises(JobError, match=message):
        job_file(tmp_path, url, TABLE, **partitioning)


def test_partition_keys_are_refused_for_files(tmp_path):
    path = write_job(tmp_path / "job.toml", name="p",
                     input={"paths": ["x.parquet"], "partitions": 4},
                     columns={"a": [0, 1], "b": [0, 1]}, output={"path": "out"},
                     cluster=None, ledger=None)
    with pytest.raises(JobError, match="SQL input only"):
        load_job(path)


def test_task_memory_in_the_job_file_reaches_the_request(warehouse):
    from dpmic_dask.batch.jobplan import job_release_plan
    from dpmic_dask.stats.limits import DEFAULT_TASK_MEMORY

    tmp_path, url, _ = warehouse
    job = job_file(tmp_path, url, TABLE)
    schema = pd.Series({"a": np.dtype("float64"), "b": np.dtype("float64")})
    assert job_release_plan(job, schema).request.task_memory == DEFAULT_TASK_MEMORY
    job = job_file(tmp_path, url, TABLE, cluster={"task_memory": "64 MiB"})
    assert job.task_memory == 64 * 2**20
    assert job_release_plan(job, schema).request.task_memory == 64 * 2**20


def test_each_computation_reads_only_the_columns_it_needs(warehouse, monkeypatch):
    """Blocks of pairs read their own columns (no partition of every column is
    held for the whole run)."""
    import dask

    import dpmic_dask.batch.jobio as jobio

    tmp_path, url, frame = warehouse
    job = job_file(tmp_path, url, TABLE, **PARTITIONED, partitions=3)
    seen = []
    real = jobio._read_sql

    def spy(url, table, query, columns, **kwargs):
        seen.append(tuple(columns))
        return real(url, table, query, columns, **kwargs)

    monkeypatch.setattr(jobio, "_read_sql", spy)
    ddf = load_input(job)
    with dask.config.set(scheduler="synchronous"):
        got = ddf[["b"]].compute()
    assert set(seen) == {("b",)} and len(seen) == 3
    np.testing.assert_allclose(np.sort(got.b.to_numpy()), np.sort(frame.b.to_numpy()))
