"""Contribution bounding on Dask, filtered in place (``bound_contributions``): the
same rows as shuffling the kept rows (``bound_contributions_shuffled``) and as
pandas, for the same key; ties at a unit's threshold chosen by content."""

from __future__ import annotations

import datetime
import decimal
from collections import Counter

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dpmic_dask.errors import InvalidDataError
from dpmic_dask.release import keeprows as bounding
from dpmic_dask.release import rowhash
from dpmic_dask.release.keeprows import (
    NEED,
    bound_contributions,
    bound_contributions_shuffled,
    smallest_priorities,
    thresholds_of,
)


def rows_of(frame) -> Counter:
    frame = frame.compute(scheduler="sync") if hasattr(frame, "compute") else frame
    return Counter(map(tuple, frame.fillna(-1.0).to_numpy().tolist()))  # NaN != NaN


def random_table(seed: int) -> pd.DataFrame:
    """Units spread over the table, many repeated rows (few distinct values), one
    unit much larger than the rest. Test data only."""
    gen = np.random.default_rng(seed)
    n = int(gen.integers(50, 600))
    units = int(gen.integers(1, 60))
    u = gen.integers(0, units, n)
    u[gen.random(n) < 0.2] = 0
    frame = pd.DataFrame({"u": u, "x": gen.integers(0, 3, n).astype(float),
                          "y": gen.integers(0, 2, n)})
    frame.loc[gen.random(n) < 0.05, "x"] = np.nan
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [1, 2, 8])
def test_filtered_in_place_keeps_the_rows_the_shuffle_keeps(seed, k):
    frame = random_table(seed)
    gen = np.random.default_rng(1000 + seed)
    key = (int(gen.integers(0, 2**63)), int(gen.integers(0, 2**63)))
    expected = rows_of(bound_contributions(frame, ("u",), k, ("x", "y"), key))
    for parts in (2, 17):
        ddf = dd.from_pandas(frame, npartitions=parts, sort=False)
        assert rows_of(bound_contributions_shuffled(ddf, ("u",), k, ("x", "y"), key)) == expected
        assert rows_of(bound_contributions(ddf, ("u",), k, ("x", "y"), key)) == expected


@pytest.mark.parametrize("k", [1, 2, 8])
def test_colliding_priorities_are_ordered_by_content_as_before(monkeypatch, k):
    """Distinct rows of one unit with one priority (a 64-bit collision, forced
    here): the rows at the threshold are chosen by content, as the shuffle does."""
    real = bounding.row_priority
    monkeypatch.setattr(bounding, "row_priority",
                        lambda frame, content, key: real(frame, content, key) % np.uint64(3))
    for seed in range(6):
        frame = random_table(seed)
        frame["x"] = np.random.default_rng(seed).normal(size=len(frame))  # distinct rows
        expected = rows_of(bound_contributions(frame, ("u",), k, ("x", "y"), (seed, 7)))
        ddf = dd.from_pandas(frame, npartitions=9, sort=False)
        assert rows_of(bound_contributions(ddf, ("u",), k, ("x", "y"), (seed, 7))) == expected


def test_several_unit_columns_strings_and_missing_units():
    gen = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"a": gen.integers(0, 4, n).astype(float),
                          "b": gen.choice(["p", "q", "r"], n),
                          "x": gen.integers(0, 4, n), "y": gen.integers(0, 2, n)})
    frame.loc[gen.random(n) < 0.1, "a"] = np.nan
    key = (3, 4)
    expected = rows_of(bound_contributions(frame, ("a", "b"), 3, ("x", "y"), key))
    ddf = dd.from_pandas(frame, npartitions=6, sort=False)
    assert rows_of(bound_contributions(ddf, ("a", "b"), 3, ("x", "y"), key)) == expected
    cat = frame.assign(b=frame["b"].astype("category"))
    ddf = dd.from_pandas(cat, npartitions=6, sort=False)
    assert rows_of(bound_contributions(ddf, ("b",), 2, ("x", "y"), key)) == rows_of(
        bound_contributions(cat, ("b",), 2, ("x", "y"), key))


def test_a_huge_unit_sends_at_most_k_plus_one_rows_per_partition():
    gen = np.random.default_rng(2)
    frame = pd.DataFrame({"u": np.r_[np.zeros(50_000, dtype=int), np.arange(1, 1001)],
                          "x": gen.random(51_000)})
    small = pd.concat(smallest_priorities(frame, ("u",), 4, ("u", "x"), (1, 2), 3))
    assert (small.u == 0).sum() == 5 and (small.u != 0).sum() == 1000
    table = thresholds_of([small], ("u",), 4)
    assert len(table) == 1001 and (table[NEED] == -1).all()


def test_ties_past_the_kth_row_are_counted():
    """Ten identical rows of one unit, k = 4: the threshold is their priority and
    four of them are taken; two rows, k = 4: both, no quota."""
    frame = pd.DataFrame({"u": [1] * 10 + [2, 2], "x": [0.5] * 10 + [0.1, 0.2]})
    small = pd.concat(smallest_priorities(frame, ("u",), 4, ("u", "x"), (1, 2)))
    table = thresholds_of([small], ("u",), 4).set_index("u")
    assert table.loc[1, NEED] == 4 and table.loc[2, NEED] == -1
    with dask.config.set(scheduler="sync"):
        kept = bound_contributions(dd.from_pandas(frame, npartitions=3, sort=False), ("u",), 4,
                                   ("x",), (1, 2)).compute()
    assert sorted(kept.x) == [0.1, 0.2, 0.5, 0.5, 0.5, 0.5]


def test_a_unit_typed_differently_in_some_partitions_is_one_unit():
    """Partitions read from different files can hold the unit as int64 in some and
    float64 (one file had a null) in others: 7 and 7.0 are one unit, so the rows
    kept are those of the table with one type; a type that would change the values
    is refused, naming no value."""
    frame = random_table(3)
    key = (11, 12)
    expected = rows_of(bound_contributions(frame, ("u",), 2, ("x", "y"), key))
    cuts = np.linspace(0, len(frame), 9).astype(int)
    pieces = [frame.iloc[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    mixed = [p.astype({"u": float}) if i % 2 else p for i, p in enumerate(pieces)]
    ddf = dd.from_delayed([dask.delayed(p) for p in mixed], meta=frame.iloc[:0],
                          verify_meta=False)
    assert rows_of(bound_contributions(ddf, ("u",), 2, ("x", "y"), key)) == expected
    lossy = [p.assign(u=p["u"] + 0.5) if i == 1 else p for i, p in enumerate(mixed)]
    ddf = dd.from_delayed([dask.delayed(p) for p in lossy], meta=frame.iloc[:0],
                          verify_meta=False)
    with pytest.raises(InvalidDataError, match="unit column 'u' has type float64") as err:
        bound_contributions(ddf, ("u",), 2, ("x", "y"), key).compute(scheduler="sync")
    assert ".5" not in str(err.value)


@pytest.mark.parametrize("seed", range(6))
def test_unit_codes_are_equal_exactly_for_equal_units(seed):
    """Rows get one code per unit, one or several unit columns, a missing value a
    code of its own (one column's codes are its factorisation, not hashed again)."""
    gen = np.random.default_rng(seed)  # test data only
    n = 300
    table = pd.DataFrame({"a": gen.integers(0, 5, n).astype(float),
                          "b": gen.choice(["p", "q", None], n),
                          "c": gen.integers(0, 3, n)})
    table.loc[gen.random(n) < 0.1, "a"] = np.nan
    for unit in (("a",), ("b",), ("a", "b"), ("c", "a", "b")):
        codes = bounding._unit_codes(table, unit)
        keys = [tuple("<missing>" if pd.isna(v) else v for v in row)
                for row in table[list(unit)].itertuples(index=False)]
        first = {}
        for key, code in zip(keys, codes.tolist()):
            assert first.setdefault(key, code) == code  # equal units, equal codes
        assert len(set(first.values())) == len(first)  # different units, different codes
        assert codes.min() >= 0 and codes.max() < n


def _counted_source(frame: pd.DataFrame, parts: int, calls: Counter):
    """``frame`` in ``parts`` partitions, each computation of a partition counted."""
    cuts = np.linspace(0, len(frame), parts + 1).astype(int)

    def make(i):
        calls[i] += 1
        return frame.iloc[cuts[i]:cuts[i + 1]]

    return dd.from_delayed([dask.delayed(make, pure=False)(i) for i in range(parts)],
                           meta=frame.iloc[:0], verify_meta=False)


def test_a_per_unit_release_reads_the_table_once():
    """The whole table's missing-value check rides on the bounding's first pass:
    every partition of the source is computed once in a per-unit release (a check
    of its own read every partition a second time)."""
    import dpmic_dask as dm

    gen = np.random.default_rng(3)  # test data only
    frame = pd.DataFrame({"u": gen.integers(0, 300, 4000), "x": gen.normal(size=4000),
                          "y": gen.normal(size=4000)})
    calls: Counter = Counter()
    with dask.config.set(scheduler="threads"):
        _counted_source(frame, 4, calls).dpmic.pairwise(
            eps=2.0, bounds={"x": (-4.0, 4.0), "y": (-4.0, 4.0)}, columns=["x", "y"],
            privacy_unit="u", max_rows_per_unit=3, bounds_check=None, progress=False,
            ledger=dm.InMemoryLedger(uncapped=True))
    assert sorted(calls) == [0, 1, 2, 3] and set(calls.values()) == {1}, calls


@pytest.mark.parametrize("parts", [1, 3])
def test_a_source_that_reads_in_its_own_task_is_read_once_per_unit(parts):
    """A source read inside each task that takes it (as Parquet is, here
    ``from_map``), in one partition or several: each partition is read once in a
    per-unit release (one partition was read twice, by the whole table's check
    and by the bounding)."""
    import dpmic_dask as dm

    gen = np.random.default_rng(4)  # test data only
    frame = pd.DataFrame({"u": gen.integers(0, 300, 3000), "x": gen.normal(size=3000),
                          "y": gen.normal(size=3000)})
    cuts = np.linspace(0, len(frame), parts + 1).astype(int)
    calls: Counter = Counter()

    def read(i):
        calls[i] += 1
        return frame.iloc[cuts[i]:cuts[i + 1]]

    source = dd.from_map(read, list(range(parts)), meta=frame.iloc[:0], enforce_metadata=False)
    with dask.config.set(scheduler="threads"):
        source.dpmic.pairwise(eps=2.0, bounds={"x": (-4.0, 4.0), "y": (-4.0, 4.0)},
                              columns=["x", "y"], privacy_unit="u", max_rows_per_unit=3,
                              bounds_check=None, progress=False,
                              ledger=dm.InMemoryLedger(uncapped=True))
    assert calls == Counter(range(parts)), calls


def test_missing_values_are_refused_from_the_whole_table_in_the_bounding_pass():
    """A missing value in any partition is refused before the charge, whichever rows
    the key would keep (the row with it is one of many of its unit)."""
    import dpmic_dask as dm

    gen = np.random.default_rng(4)  # test data only
    frame = pd.DataFrame({"u": np.zeros(400, dtype=int), "x": gen.normal(size=400),
                          "y": gen.normal(size=400)})
    frame.loc[397, "y"] = np.nan  # one unit of 400 rows, 3 kept: almost never this one
    ledger = dm.InMemoryLedger(uncapped=True)
    calls: Counter = Counter()
    with dask.config.set(scheduler="threads"), pytest.raises(dm.MissingValuesError):
        _counted_source(frame, 4, calls).dpmic.pairwise(
            eps=2.0, bounds={"x": (-4.0, 4.0), "y": (-4.0, 4.0)}, columns=["x", "y"],
            privacy_unit="u", max_rows_per_unit=3, bounds_check=None, progress=False,
            ledger=ledger)
    assert ledger.charges() == [] and set(calls.values()) == {1}


@pytest.mark.parametrize("partitions", [None, 1, 4])
def test_a_failure_in_the_whole_table_check_quotes_no_value(monkeypatch, partitions):
    """The missing-value check runs inside the bounding's tasks: a failure there is
    reported by columns and type only, on pandas and on Dask (one partition or
    several), and nothing is charged."""
    import dpmic_dask as dm
    from dpmic_dask.release import bounding as bounding_module

    def leaky(frame, name):
        raise RuntimeError("cell value secret-4111")

    monkeypatch.setattr(bounding_module, "column_values", leaky)
    gen = np.random.default_rng(5)  # test data only
    frame = pd.DataFrame({"u": gen.integers(0, 50, 400), "x": gen.normal(size=400),
                          "y": gen.normal(size=400)})
    data = frame if partitions is None else dd.from_pandas(frame, npartitions=partitions)
    ledger = dm.InMemoryLedger(uncapped=True)
    with dask.config.set(scheduler="threads"), pytest.raises(dm.DataReadError) as caught:
        data.dpmic.pairwise(eps=2.0, bounds={"x": (-4.0, 4.0), "y": (-4.0, 4.0)},
                            columns=["x", "y"], privacy_unit="u", max_rows_per_unit=3,
                            bounds_check=None, progress=False, ledger=ledger)
    assert "secret" not in str(caught.value) and "RuntimeError" in str(caught.value)
    assert ledger.charges() == []


@pytest.mark.parametrize("k", [1, 2, 3])
def test_ties_at_a_rank_may_come_in_any_order(monkeypatch, k):
    """Ranks within a unit are read only as a priority at a rank or as ranks below
    one, so rows of equal priority may rank in any order: with ties broken at
    random (identical rows tie, and colliding priorities are forced), the filter
    keeps the rows the shuffle keeps."""
    real_priority, real_ranks = bounding.row_priority, bounding._ranks
    gen = np.random.default_rng(k)  # test data only

    def shuffled_ranks(codes, priority):
        order = gen.permutation(len(codes))
        rank = np.empty(len(codes), dtype=np.int64)
        rank[order] = real_ranks(codes[order], priority[order])
        return rank

    monkeypatch.setattr(bounding, "_ranks", shuffled_ranks)
    monkeypatch.setattr(bounding, "row_priority",
                        lambda frame, content, key: real_priority(frame, content, key)
                        % np.uint64(5))
    for seed in range(6):
        frame = random_table(seed)
        expected = rows_of(bound_contributions_shuffled(frame, ("u",), k, ("x", "y"), (seed, 3)))
        for parts in (2, 7):
            ddf = dd.from_pandas(frame, npartitions=parts, sort=False)
            assert rows_of(bound_contributions(ddf, ("u",), k, ("x", "y"), (seed, 3))) == expected


@pytest.mark.parametrize("k", [1, 3])
def test_ties_are_ordered_when_a_column_mixes_python_types(monkeypatch, k):
    """Rows of equal priority are put in content order, and a column holding
    values of several Python types (text, bytes, numbers, dates) has a fixed
    order too: whichever rows a key makes tie, the bounding neither fails nor
    depends on the partitions (the old sort by the values themselves raised
    ``TypeError`` comparing a date with a number)."""
    real = bounding.row_priority
    monkeypatch.setattr(bounding, "row_priority",
                        lambda frame, content, key: real(frame, content, key) % np.uint64(3))
    kinds = np.array(["a", b"a", 7, 7.5, datetime.date(2020, 1, 2), None], dtype=object)
    for seed in range(4):
        frame = random_table(seed)
        frame["y"] = kinds[np.random.default_rng(seed).integers(0, len(kinds), len(frame))]
        expected = rows_of(bound_contributions(frame, ("u",), k, ("x", "y"), (seed, 5)))
        assert sum(expected.values()) > 0
        with dask.config.set({"dataframe.convert-string": False}):
            for parts in (2, 9):
                ddf = dd.from_pandas(frame, npartitions=parts, sort=False)
                assert rows_of(bound_contributions(ddf, ("u",), k, ("x", "y"),
                                                   (seed, 5))) == expected
                assert rows_of(bound_contributions_shuffled(ddf, ("u",), k, ("x", "y"),
                                                            (seed, 5))) == expected


def test_content_order_is_a_total_order_over_python_types():
    frame = pd.DataFrame({"u": [2, 1, 1, 1, 1, 1],
                          "v": np.array([7, datetime.date(2020, 1, 2), b"a", "a", None, 7],
                                        dtype=object)})
    order = rowhash.content_order(frame, ("u", "v"))
    assert sorted(order) == list(range(6))
    ordered = frame.iloc[order]
    assert ordered["u"].tolist() == [1, 1, 1, 1, 1, 2]
    assert ordered["v"].iloc[4] is None  # missing last within its unit
    # the same rows in another order sort to the same sequence
    again = frame.iloc[[5, 3, 1, 0, 4, 2]].reset_index(drop=True)
    assert again.iloc[rowhash.content_order(again, ("u", "v"))].astype(str).values.tolist() \
        == ordered.astype(str).values.tolist()


def test_a_rows_priority_is_a_function_of_that_row_alone():
    """Values equal in Python (1, 1.0, True) in an object column: pandas hashes
    such a column through its distinct values, so a row took the hash of
    whichever equal value came first in its partition -- another unit's row
    could change which of this unit's rows were kept."""
    v = pd.DataFrame({"u": ["v", "v"], "x": [0.5, 0.7], "y": np.array([1.0, "c"], dtype=object)})
    w = pd.DataFrame({"u": ["w"], "x": [0.1], "y": np.array([1], dtype=object)})
    for key in [(4, 7), (11, 3), (2**62, 5)]:
        alone = bounding.row_priority(v, ("u", "x", "y"), key)
        after = bounding.row_priority(pd.concat([w, v], ignore_index=True), ("u", "x", "y"),
                                      key)[1:]
        np.testing.assert_array_equal(alone, after)
        kept = rows_of(bound_contributions(v, ("u",), 1, ("x",), key))
        with_w = rows_of(bound_contributions(pd.concat([w, v], ignore_index=True), ("u",), 1,
                                             ("x",), key))
        assert with_w - rows_of(w[["x"]]) == kept


@pytest.mark.parametrize("column", [
    # object: numbers, text, bytes, dates, Decimal, missing values, a huge integer
    pd.Series(np.array([True, 1, 1.0, np.int64(1), 0.0, -0.0, "1", b"1", None, np.nan,
                        datetime.date(2020, 1, 2), decimal.Decimal("1.5"), 10**400, "x"],
                       dtype=object)),
    # an Arrow integer column: one null turned every value of its partition into a float
    pd.Series(pd.array([1, 2, None, 4], dtype=pd.ArrowDtype(pa.int64()))),
    pd.Series(pd.array([True, None, False], dtype=pd.ArrowDtype(pa.bool_()))),
    pd.Series(pd.array([1, None, 3], dtype="Int64")),
    # a categorical: its values took the type of the partition's category list
    pd.Series(np.array([1, 2, 2.5, "z"], dtype=object)).astype("category"),
    pd.Series(["a", None, "b"], dtype="string"),
])
def test_each_value_hashes_alone_whatever_shares_its_partition(column):
    together = rowhash.value_hashes(column)
    alone = [rowhash.value_hashes(column.iloc[[i]])[0] for i in range(len(column))]
    np.testing.assert_array_equal(together, np.array(alone, dtype=np.uint64))


def test_a_number_hashes_as_its_value_whatever_holds_it():
    """1, 1.0, True and an Arrow or nullable 1 tie (broken by content order), as
    do every column's missing values: a partition's dtype does not change a row's
    priority."""
    one = {int(rowhash.value_hashes(c)[0]) for c in [
        pd.Series(np.array([1], dtype=object)), pd.Series(np.array([1.0], dtype=object)),
        pd.Series(np.array([True], dtype=object)), pd.Series([1]), pd.Series([1.0, np.nan]),
        pd.Series(pd.array([1, None], dtype="Int64")),
        pd.Series(pd.array([1], dtype=pd.ArrowDtype(pa.int32()))),
        pd.Series([1, 2]).astype("category")]}
    assert len(one) == 1
    missing = {int(rowhash.value_hashes(c)[-1]) for c in [
        pd.Series([1.0, np.nan]), pd.Series(np.array(["a", None], dtype=object)),
        pd.Series(pd.array([1, None], dtype="Int64"))]}
    assert len(missing) == 1
    assert rowhash.value_hashes(pd.Series(["1"]))[0] not in one


def test_a_time_hashes_as_its_instant_whatever_its_unit_zone_or_holder():
    """Partitions of one column can differ in unit (``from_delayed`` checks no
    meta): 2020-01-02 05:06:07 in seconds, milliseconds, microseconds or
    nanoseconds, with a time zone, or in an Arrow column, is one instant and one
    hash; a date is its midnight; durations likewise, and missing times hash as
    every missing value. Before, a time hashed through its unit's integer."""
    stamps = pd.Series(pd.to_datetime(["2020-01-02 05:06:07", "1969-12-31 23:59:59", None]))
    holders = [stamps.astype(f"datetime64[{u}]") for u in ("s", "ms", "us", "ns")]
    holders.append(stamps.dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo"))
    holders.append(stamps.astype(pd.ArrowDtype(pa.timestamp("ms"))))
    hashes = {tuple(int(h) for h in rowhash.value_hashes(c)) for c in holders}
    assert len(hashes) == 1
    (one,) = hashes
    assert one[-1] == int(rowhash.value_hashes(pd.Series([np.nan]))[0])
    assert one[0] != one[1]
    midnight = pd.Series(pd.to_datetime(["2020-01-02"])).astype("datetime64[s]")
    date = pd.Series(pd.array([datetime.date(2020, 1, 2)], dtype=pd.ArrowDtype(pa.date32())))
    np.testing.assert_array_equal(rowhash.value_hashes(midnight), rowhash.value_hashes(date))
    spans = pd.Series(pd.to_timedelta(["1s", "1500ms"]))
    np.testing.assert_array_equal(rowhash.value_hashes(spans.astype("timedelta64[ms]")),
                                  rowhash.value_hashes(spans.astype("timedelta64[ns]")))
    # nanoseconds past 2**53 beside a missing time (pyarrow gives floats there)
    exact = pd.Timestamp("2020-01-02 05:06:07.123456789")
    long = pd.Timedelta(days=3000, nanoseconds=1)
    for value, kind in ((exact, "datetime64[ns]"), (long, "timedelta64[ns]")):
        alone = rowhash.value_hashes(pd.Series([value]))[0]
        beside = rowhash.value_hashes(pd.Series([value, None], dtype=kind))
        assert beside[0] == alone and beside[1] == one[-1]
        arrow = pd.Series([value, None], dtype=kind).astype(
            pd.ArrowDtype(pa.timestamp("ns") if kind.startswith("datetime") else pa.duration("ns")))
        assert rowhash.value_hashes(arrow)[0] == alone
    # categorical and sparse holders hash as the times they hold
    for held in (holders[0].astype("category"), holders[2].astype(pd.SparseDtype(holders[2].dtype))):
        assert tuple(int(h) for h in rowhash.value_hashes(held)) == one
    # the rows a unit keeps do not depend on its partition's unit
    frame = pd.DataFrame({"u": ["v"] * 6, "x": np.arange(6.0),
                          "t": pd.to_datetime(["2020-01-0%d" % d for d in range(1, 7)])})
    for key in [(4, 7), (11, 3)]:
        kept = [rows_of(bound_contributions(frame.astype({"t": f"datetime64[{u}]"}), ("u",), 2,
                                            ("x", "t"), key)) for u in ("s", "ns")]
        assert sum(kept[0].values()) == 2
        assert sorted(r[0] for r in kept[0].elements()) == sorted(r[0] for r in kept[1].elements())
