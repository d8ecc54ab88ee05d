"""Decimals are numbers (issue #34): Parquet ``decimal128`` / ``decimal256`` columns
as ``dd.read_parquet`` reads them, and ``object`` columns of ``Decimal``, give the
numbers the same table stored as float64 gives; their nulls follow the null policy
(refused before the charge, filled, dropped); an ``object`` column mixing decimals
with strings is refused, naming the column and its dtype, never a value."""

from __future__ import annotations

import decimal
import warnings

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpmic_dask as dm
from dpmic_dask.causal.discover import causal_graph_exact
from dpmic_dask.release.charge import DEFAULT_DATASET
from dpmic_dask.testing import seeded_noise

D = decimal.Decimal
BOUNDS = {"amount": (0, 1000), "spend": (-100, 2100), "other": (0, 1)}
N = 3000


def amounts(n=N, seed=4, nulls=()):
    """Cents as ``Decimal`` (two places), ``None`` at the rows ``nulls``."""
    gen = np.random.default_rng(seed)  # test data only
    cents = gen.integers(0, 100_000, n)
    values: list = [D(int(c)).scaleb(-2) for c in cents]
    for row in nulls:
        values[row] = None
    return values


def tables(values, seed=4):
    """The table with ``amount`` as decimals (pyarrow) and as float64, ``spend``
    planted on it, ``other`` independent."""
    gen = np.random.default_rng(seed + 1)  # test data only
    floats = np.array([np.nan if v is None else float(v) for v in values])
    spend = 2 * np.nan_to_num(floats, nan=500.0) + gen.normal(0, 20, len(values))
    other = gen.uniform(size=len(values))
    return floats, spend, other


def write_parquet(path, values, arrow_type):
    floats, spend, other = tables(values)
    pq.write_table(pa.table({"amount": pa.array(values, type=arrow_type), "spend": spend,
                             "other": other}), path, row_group_size=N // 3 + 1)
    return pd.DataFrame({"amount": floats, "spend": spend, "other": other})


def object_frame(values):
    floats, spend, other = tables(values)
    return pd.DataFrame({"amount": pd.Series(values, dtype=object), "spend": spend,
                         "other": other})


def decimal_frames(tmp_path, values):
    """``(name, frame)`` of every way decimals arrive, and the float64 table."""
    floats = None
    out = []
    for arrow_type in (pa.decimal128(12, 2), pa.decimal256(40, 2)):
        path = tmp_path / f"{arrow_type}.parquet".replace(" ", "")
        floats = write_parquet(path, values, arrow_type)
        lazy = dd.read_parquet(path)
        assert lazy.dtypes["amount"] == pd.ArrowDtype(arrow_type)  # read as decimals
        out.append((f"parquet {arrow_type}", lazy))
        out.append((f"pandas {arrow_type}", lazy.compute()))
    frame = object_frame(values)
    with dask.config.set({"dataframe.convert-string": False}):  # keep the Decimal objects
        lazy_objects = dd.from_pandas(frame, npartitions=3)
    assert lazy_objects.dtypes["amount"] == np.dtype(object)
    out += [("pandas object", frame), ("dask object", lazy_objects)]
    return out, floats


def released(frame, monkeypatch, **arguments):
    monkeypatch.setenv("DPMIC_DASK_ALLOW_SEEDED_NOISE", "1")
    ledger = dm.InMemoryLedger(uncapped=True)
    with warnings.catch_warnings():  # seeded noise warns it is not private: it is a test
        warnings.simplefilter("ignore", dm.PrivacyLeakWarning)
        with seeded_noise(34, not_private=True):
            result = frame.dpmic.pairwise(4.0, ledger=ledger, **arguments)
    return dict(zip(result.pairs, result.values)), ledger


def test_decimal_columns_are_their_numbers(tmp_path, monkeypatch):
    frames, floats = decimal_frames(tmp_path, amounts())
    expected = floats.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3)
    assert expected.set_index(["x", "y"]).micr[("amount", "spend")] > 0.9
    private, _ = released(floats, monkeypatch, bounds=BOUNDS)
    assert private[("amount", "spend")] > 0.5  # the planted pair, released
    decimal_bounds = {**BOUNDS, "amount": (D(0), D("1000.00"))}
    for name, frame in frames:
        got = frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3)
        pd.testing.assert_frame_equal(got, expected, check_exact=True, obj=name)
        for bounds in (BOUNDS, decimal_bounds):
            values, ledger = released(frame, monkeypatch, bounds=bounds)
            assert values == private, name  # the same noise on the same numbers
            assert ledger.spent(DEFAULT_DATASET) == 4


def test_a_parquet_decimal_column_takes_private_bounds(tmp_path):
    path = tmp_path / "t.parquet"
    write_parquet(path, amounts(), pa.decimal128(12, 2))
    result = dd.read_parquet(path).dpmic.pairwise(
        4.0, bounds={**BOUNDS, "amount": "private"}, domain={"amount": (0, 2000)},
        ledger=dm.InMemoryLedger(uncapped=True))
    lo, hi = result.private_bounds.bounds["amount"]
    assert 0 <= lo < hi <= 2000
    assert dict(zip(result.pairs, result.values))[("amount", "spend")] > 0.5


def test_nulls_in_a_decimal_column_follow_the_null_policy(tmp_path):
    frames, floats = decimal_frames(tmp_path, amounts(nulls=range(0, N, 9)))
    assert floats.amount.isna().sum() == len(range(0, N, 9))
    fill = {"amount": 500, "spend": 0, "other": 0}
    filled = floats.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3, nulls="fill", fill=fill)
    dropped = floats.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3, nulls="drop")
    for name, frame in frames:
        ledger = dm.InMemoryLedger(uncapped=True)
        with pytest.raises(dm.MissingValuesError, match=r"\['amount'\]"):
            frame.dpmic.pairwise(4.0, bounds=BOUNDS, ledger=ledger)
        assert ledger.spent(DEFAULT_DATASET) == 0, name  # refused before the charge
        with pytest.raises(dm.MissingValuesError, match=r"\['amount'\]"):
            frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3)
        for given in (fill, {**fill, "amount": D("500.00")}):
            got = frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3, nulls="fill",
                                                  fill=given)
            pd.testing.assert_frame_equal(got, filled, check_exact=True, obj=name)
        got = frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=3, nulls="drop")
        pd.testing.assert_frame_equal(got, dropped, check_exact=True, obj=name)
        frame.dpmic.pairwise(4.0, bounds=BOUNDS, nulls="fill", fill=fill, ledger=ledger)
        frame.dpmic.pairwise(4.0, bounds=BOUNDS, nulls="drop", min_rows=N // 2, ledger=ledger)
        assert ledger.spent(DEFAULT_DATASET) == 8


SECRET = "acct-7731-SECRET"


@pytest.mark.parametrize("text", [SECRET, "17.50"])
def test_decimals_mixed_with_strings_are_refused_naming_no_value(text):
    frame = object_frame(amounts(400))
    frame.loc[13, "amount"] = text  # a string, even one that reads as a number, is not one
    with dask.config.set({"dataframe.convert-string": False}):
        lazy = dd.from_pandas(frame, npartitions=2)
    for data in (frame, lazy):
        ledger = dm.InMemoryLedger(uncapped=True)
        for release in (
                lambda: data.dpmic.pairwise(4.0, bounds=BOUNDS, ledger=ledger),
                lambda: data.dpmic.pairwise(4.0, bounds={**BOUNDS, "amount": "private"},
                                            kinds={"amount": "number"}, ledger=ledger),
                lambda: data.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=20, c=2)):
            with pytest.raises(dm.InvalidDataError) as info:
                release()
            message = str(info.value)
            assert "'amount'" in message and "object" in message and "not numbers" in message
            assert text not in message and "acct" not in message and "\n" not in message
        assert ledger.spent(DEFAULT_DATASET) == 0


def test_causal_discovery_reads_decimal_columns_as_numbers(tmp_path):
    frames, floats = decimal_frames(tmp_path, amounts())
    expected = causal_graph_exact(floats, bounds=BOUNDS).edges
    for name, frame in frames:
        got = causal_graph_exact(frame, bounds=BOUNDS).edges
        pd.testing.assert_frame_equal(got, expected, check_exact=True, obj=name)
