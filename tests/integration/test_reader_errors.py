"""Failures underneath the library (readers, pandas, Dask) never quote cell values."""

import traceback

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm

SECRET = "secret-4111-1111"
BOUNDS = {"a": (0, 100), "b": (0, 10)}


@pytest.fixture
def poisoned_csv(tmp_path):
    """A CSV whose row 60,000 has a text cell, past Dask's dtype-inference sample."""
    n = 80_000
    gen = np.random.default_rng(1)  # test data only
    frame = pd.DataFrame({"a": gen.integers(0, 100, n).astype(str), "b": gen.integers(0, 10, n)})
    frame.loc[60_000, "a"] = SECRET
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    return path


def _assert_sanitised(exc: BaseException):
    text = "".join(traceback.format_exception(exc))
    assert SECRET not in text and "4111" not in text
    assert exc.__context__ is None and exc.__cause__ is None
    assert "['a', 'b']" in str(exc)


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_reader_errors_are_reported_by_type_and_column_only(poisoned_csv, scheduler):
    ddf = dd.read_csv(poisoned_csv, blocksize="256KB")
    ledger = dm.InMemoryLedger(uncapped=True)
    with dask.config.set(scheduler=scheduler):
        with pytest.raises(dm.DataReadError, match="ValueError") as info:
            ddf.dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="d", B=8, c=2)
        _assert_sanitised(info.value)
        with pytest.raises(dm.DataReadError) as info:
            ddf.dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="d")  # row count first
        _assert_sanitised(info.value)
        with pytest.raises(dm.DataReadError) as info:
            ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=8, c=2)
        _assert_sanitised(info.value)
    assert ledger.charges() == []


@pytest.mark.parametrize("release", ["pairwise", "private_bounds", "causal_graph"])
def test_reader_errors_per_unit_with_filled_nulls(poisoned_csv, release):
    """Per unit with ``nulls="fill"`` no missing-value pass reads the table first:
    the bounded rows are persisted, which reads it (without a distributed client,
    at once); that failure is withheld too, before any charge."""
    ddf = dd.read_csv(poisoned_csv, blocksize="256KB")
    ddf["who"] = ddf["b"]
    ledger = dm.InMemoryLedger(uncapped=True)
    unit = dict(privacy_unit="who", max_rows_per_unit=2)
    run = {
        "pairwise": lambda: ddf.dpmic.pairwise(1.0, bounds=BOUNDS, nulls="fill",
                                               fill={"a": 0.0, "b": 0.0}, ledger=ledger,
                                               dataset="d", columns=["a", "b"], **unit),
        "private_bounds": lambda: dm.private_bounds(ddf, 1.0, columns=["a", "b"], nulls="fill",
                                                    fill=0.0, ledger=ledger, dataset="d",
                                                    **unit),
        "causal_graph": lambda: ddf.dpmic.causal_graph(1.0, bounds=BOUNDS, ledger=ledger,
                                                       dataset="d", columns=["a", "b"],
                                                       **unit),
    }[release]
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(dm.DataReadError) as info:
            run()
    text = "".join(traceback.format_exception(info.value))
    assert SECRET not in text and "4111" not in text
    assert info.value.__context__ is None and info.value.__cause__ is None
    assert ledger.charges() == []


def test_reader_errors_on_a_distributed_cluster(poisoned_csv):
    from distributed import Client, LocalCluster

    ddf = dd.read_csv(poisoned_csv, blocksize="256KB")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        with pytest.raises(dm.DataReadError) as info:
            ddf.dpmic.pairwise(1.0, bounds=BOUNDS, B=8, c=2, progress=False)
    _assert_sanitised(info.value)


def test_package_errors_from_partitions_pass_through_unchanged():
    frame = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": [0.1, np.nan, 0.2, 0.3]})
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(dm.MissingValuesError, match=r"\['b'\]"):
        ddf.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, B=8, c=2)
