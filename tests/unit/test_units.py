"""Privacy per unit: contribution bounding, the plan and its refusals, the report."""

from __future__ import annotations

from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (the accessor)
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.release.keeprows import PRIORITY, _tag_and_keep, bound_contributions
from dpmic_dask.release.unitplan import find_floor, plan_unit_release
from dpmic_dask.release.units import size_grid

BOUNDS = {"x": (0.0, 1.0), "y": (0.0, 1.0)}


def events(units=200, seed=3, big=0):
    gen = np.random.default_rng(seed)  # test data only
    sizes = gen.integers(1, 12, units)
    if big:
        sizes[0] = big
    uid = np.repeat(np.arange(units), sizes)
    x = gen.uniform(0, 1, units)[uid] + gen.normal(0, 0.02, uid.size)
    return pd.DataFrame({"cid": uid, "x": np.clip(x, 0, 1),
                         "y": np.clip(x ** 2 + gen.normal(0, 0.02, uid.size), 0, 1),
                         "z": gen.uniform(0, 1, uid.size)})


def rows_of(frame) -> Counter:
    frame = frame.compute() if hasattr(frame, "compute") else frame
    return Counter(map(tuple, frame.to_numpy().tolist()))


KEY = (0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_at_most_k_rows_per_unit_survive(k):
    df = events()
    kept = bound_contributions(df, ("cid",), k, ("x", "y"), KEY)
    tagged = _tag_and_keep(df, ("cid",), k, ("cid", "x", "y"), KEY)
    per_unit = tagged.groupby("cid").size()
    assert per_unit.max() <= k
    assert (per_unit == np.minimum(df.groupby("cid").size(), k)).all()
    assert list(kept.columns) == ["x", "y"]  # the unit column is not passed on


@pytest.mark.parametrize("parts", [1, 3, 7])
def test_dask_keeps_the_same_rows_as_pandas(parts):
    df = events()
    expected = rows_of(bound_contributions(df, ("cid",), 3, ("x", "y"), KEY))
    got = rows_of(bound_contributions(dd.from_pandas(df, npartitions=parts), ("cid",), 3,
                                      ("x", "y"), KEY))
    assert got == expected


@pytest.mark.parametrize("parts", [1, 4])
def test_which_rows_survive_depends_only_on_the_units_own_rows(parts):
    """Removing one unit removes its survivors and changes nothing else (a fixed
    key): the bounded neighbours differ by at most k rows, all of that unit."""
    df = events(units=120)
    for removed in (0, 17, 119):
        full = rows_of(bound_contributions(dd.from_pandas(df, npartitions=parts), ("cid",), 4,
                                           ("x", "y", "z"), KEY))
        rest = df[df.cid != removed]
        less = rows_of(bound_contributions(dd.from_pandas(rest, npartitions=parts), ("cid",),
                                           4, ("x", "y", "z"), KEY))
        difference = full - less
        assert less - full == Counter()
        assert sum(difference.values()) == min(4, int((df.cid == removed).sum()))
        own = rows_of(df.loc[df.cid == removed, ["x", "y", "z"]])
        assert difference - own == Counter()


def test_the_kept_rows_are_a_uniform_choice_over_fresh_keys():
    df = pd.DataFrame({"cid": [1] * 4, "x": [0.1, 0.2, 0.3, 0.4], "y": [0.5] * 4})
    kept = Counter()
    for _ in range(400):
        kept.update(bound_contributions(df, ("cid",), 2, ("x", "y")).x.tolist())
    # each row kept with probability 1/2: 200 of 400, s.d. 10
    assert all(140 < kept[v] < 260 for v in (0.1, 0.2, 0.3, 0.4))


def test_a_huge_unit_sends_at_most_k_rows_per_partition_to_the_shuffle():
    df = events(units=50, big=100_000)
    ddf = dd.from_pandas(df, npartitions=5)
    content = ("cid", "x", "y")
    meta = ddf._meta[list(content)].assign(**{PRIORITY: np.uint64(0)}).iloc[:0]
    local = ddf.map_partitions(_tag_and_keep, ("cid",), 4, content, KEY, meta=meta).compute()
    assert (local.cid == 0).sum() <= 4 * 5
    bounded = bound_contributions(ddf, ("cid",), 4, ("x", "y"), KEY).compute()
    assert len(bounded) == np.minimum(df.groupby("cid").size(), 4).sum()


def test_several_unit_columns_and_missing_unit_values():
    df = pd.DataFrame({"a": [1, 1, 1, 2, 2, None, None, None],
                       "b": ["u", "u", "v", "u", "u", None, None, None],
                       "x": np.linspace(0, 1, 8), "y": np.linspace(1, 0, 8)})
    kept = _tag_and_keep(df, ("a", "b"), 1, ("a", "b", "x", "y"), KEY)
    # units (1,u), (1,v), (2,u); the rows without a unit are dropped
    assert len(kept) == 3 and kept[["a", "b"]].notna().all().all()


# ------------------------------------------------------------------ the plan


def schema():
    return events().dtypes


def test_without_a_unit_the_plan_is_the_row_level_plan():
    from dpmic_dask.release.plan import plan_release

    plain = plan_release(schema(), 1.0, bounds=BOUNDS)
    same = plan_unit_release(schema(), 1.0, bounds=BOUNDS)
    assert repr(same) == repr(plain) and same.units is None
    assert same.cost == plain.cost


@pytest.mark.parametrize("arguments,match", [
    ({"privacy_unit": "cid"}, "max_rows_per_unit"),
    ({"max_rows_per_unit": 4}, "privacy_unit"),
    ({"privacy_unit": "nope", "max_rows_per_unit": 4}, "not in the frame"),
    ({"privacy_unit": "cid", "max_rows_per_unit": 0}, "max_rows_per_unit"),
    ({"privacy_unit": "cid", "max_rows_per_unit": 2.5}, "max_rows_per_unit"),
    ({"privacy_unit": ["cid", "cid"], "max_rows_per_unit": 2}, "distinct"),
    ({"privacy_unit": "cid", "max_rows_per_unit": 4, "mechanism": "micr-geom"}, "counts"),
    ({"privacy_unit": "cid", "max_rows_per_unit": 4, "bounds": {**BOUNDS, "cid": (0, 300)}},
     "cannot be released"),
    ({"privacy_unit": "cid", "max_rows_per_unit": 4, "bounds": "private",
      "columns": ["cid", "x"]}, "cannot be released"),
    ({"privacy_unit": "cid", "max_rows_per_unit": 4, "delta": 1e-6,
      "mechanism": "micr-lap"}, "micr-gauss"),
])
def test_refusals_before_anything_is_read(arguments, match):
    arguments = {"bounds": BOUNDS, **arguments}
    with pytest.raises(InvalidParameterError, match=match):
        plan_unit_release(schema(), 1.0, **arguments)


def test_the_budget_is_split_and_charged_once():
    plan = plan_unit_release(schema(), 2.0, bounds=BOUNDS, privacy_unit="cid",
                             max_rows_per_unit=4, count_share=0.1)
    assert plan.cost.epsilon == 2.0
    assert plan.units.rowcount.cost.epsilon + plan.request.cost.epsilon <= 2.0
    assert plan.units.rowcount.cost.epsilon == pytest.approx(0.2)
    ledger = InMemoryLedger(uncapped=True)
    ddf = dd.from_pandas(events(), npartitions=3)
    result = ddf.dpmic.pairwise(2.0, bounds=BOUNDS, privacy_unit="cid", max_rows_per_unit=4,
                                ledger=ledger)
    (charge,) = ledger.charges()
    assert charge.cost.epsilon == 2.0
    assert result.privacy.charge_id == charge.charge_id
    assert result.privacy.privacy_unit == "cid" and result.privacy.max_rows_per_unit == 4
    assert "per cid, at most 4 rows each" in result.report()
    assert "adding or removing all rows of any one cid" in result.privacy.statement
    assert result.pairs == (("x", "y"),)
    assert result.privacy.n == result.privacy.rows_lower_bound  # noise set at n0, not n


def test_the_row_level_report_says_so():
    ddf = dd.from_pandas(events(), npartitions=2)
    result = ddf.dpmic.pairwise(1.0, bounds=BOUNDS)
    assert result.privacy.privacy_unit is None
    assert "one row (the default" in result.privacy.unit_line()


def test_top_pairs_and_pairs_above_per_unit():
    ddf = dd.from_pandas(events(), npartitions=2)
    bounds = {**BOUNDS, "z": (0.0, 1.0)}
    top = ddf.dpmic.top_pairs(1, 50.0, bounds=bounds, privacy_unit="cid", max_rows_per_unit=4)
    assert len(top.pairs) == 1 and top.privacy.privacy_unit == "cid"
    above = ddf.dpmic.pairs_above(0.5, 50.0, bounds=bounds, max_pairs=2, privacy_unit="cid",
                                  max_rows_per_unit=4)
    assert above.privacy.max_rows_per_unit == 4
    assert all("cid" not in pair for pair in top.pairs + above.pairs)


def test_too_few_rows_is_no_refusal_after_the_charge():
    # the bound is never below the floor found before anything was read
    tiny = dd.from_pandas(events(units=2), npartitions=1)
    result = tiny.dpmic.pairwise(1.0, bounds=BOUNDS, privacy_unit="cid", max_rows_per_unit=2)
    assert result.privacy.rows_lower_bound >= 4


def test_the_floor_is_where_the_plan_starts_to_pass():
    plan = plan_unit_release(schema(), 1e-3, bounds={**BOUNDS, "z": (0, 1)},
                             privacy_unit="cid", max_rows_per_unit=32)
    inner = plan.__class__(plan.request, plan.selection, plan.bounds)
    floor = find_floor(inner, 32)
    assert floor == plan.units.floor
    assert floor > 4  # such a small eps cannot be sampled at a handful of rows


def test_size_grid():
    grid = size_grid(2**20)
    assert list(grid[:16]) == list(range(1, 17))
    assert grid[-1] <= 2**20 and np.all(np.diff(grid) > 0)
    assert np.all(grid[17:] / grid[16:-1] < 1.25)


def test_private_mic_per_unit():
    import dpmic_dask as dm

    gen = np.random.default_rng(4)  # test data only
    units = np.repeat(np.arange(400), 6)
    x = gen.uniform(0, 1, 400)[units]
    release = dm.private_mic(x, x ** 2, eps=2.0, x_bounds=(0, 1), y_bounds=(0, 1), units=units,
                             privacy_unit="patient", max_rows_per_unit=3)
    assert release.privacy.privacy_unit == "patient" and release.privacy.max_rows_per_unit == 3
    assert release.privacy.n <= 1200  # n0, a lower bound on the 400 x 3 rows kept
    assert "any one patient" in release.privacy.statement
    with pytest.raises(InvalidParameterError, match="units"):
        dm.private_mic(x, x, eps=1.0, x_bounds=(0, 1), y_bounds=(0, 1), max_rows_per_unit=3)
    with pytest.raises(InvalidParameterError, match="one length"):
        dm.private_mic(x, x, eps=1.0, x_bounds=(0, 1), y_bounds=(0, 1), units=units[:10],
                       max_rows_per_unit=3)


def test_rows_without_a_unit_are_dropped_not_pooled():
    """Pooled into one unit, people without an id would share one quota of k rows:
    adding one of them could push another's rows out (2k row changes). Dropped,
    each such row is filtered by itself."""
    df = pd.DataFrame({"cid": pd.array([None, None, None, "a", "a", "b"], dtype="string"),
                       "x": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "y": [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]})
    kept = bound_contributions(df, ("cid",), 1, ("x", "y"), KEY)
    assert len(kept) == 2 and set(kept.x) <= {0.4, 0.5, 0.6}
    more = pd.concat([df, pd.DataFrame({"cid": pd.array([None], dtype="string"),
                                        "x": [0.05], "y": [0.9]})], ignore_index=True)
    rows_after = sorted(map(tuple, bound_contributions(
        more, ("cid",), 1, ("x", "y"), KEY).to_numpy()))
    assert rows_after == sorted(map(tuple, kept.to_numpy()))


def test_pairs_with_a_categorical_axis_are_tapered_per_unit():
    """Released per unit, a pair with a categorical axis is tapered below n0 as
    every other pair is (its noise is calibrated to the tapered value)."""
    import numpy as np

    from dpmic_dask.stats.categories import CategoryAxis
    from dpmic_dask.stats.counting import pair_counts
    from dpmic_dask.stats.group_sensitivity import UnitStatistic
    from dpmic_dask.stats.statistics import get_statistic
    from dpmic_dask.stats.statistics.categorical import CategoricalMIC, PairValues

    axis = CategoryAxis("x", ("a", "b", "c"))
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, 200) + 0.5
    y = codes / 3 + 0.1 * rng.random(200)
    for n0 in (100, 200, 400, 1000):
        statistic = UnitStatistic(get_statistic("micr"), 4, n0)
        layout = statistic.layout(20, 2)
        counts = pair_counts(codes, y, axis.bounds, (0.0, 1.2), layout)
        (fn,) = PairValues([statistic], layout, {"x": axis}, False).for_pairs([("x", "y")])
        plain = CategoricalMIC(axis, None).value(counts, layout)
        assert plain > 0.5
        assert fn(counts) == pytest.approx(min(1.0, 200 / n0) * plain, rel=1e-12)


def mixed_units(frame):
    """``cid`` as objects: even units as ints, odd ones as strings (17 and '17'
    could be one customer written two ways)."""
    mixed = frame.copy()
    mixed["cid"] = pd.Series([c if c % 2 == 0 else str(c) for c in frame["cid"]],
                             dtype=object, index=frame.index)
    return mixed


@pytest.mark.parametrize("how", ["pandas", "dask-one-type-per-partition", "dask-mixed"])
def test_a_unit_column_mixing_ints_and_strings_is_refused_before_the_charge(how):
    import dask

    from dpmic_dask.errors import InvalidDataError

    frame = mixed_units(events())
    text = frame["cid"].map(lambda c: isinstance(c, str))
    ledger = InMemoryLedger(uncapped=True)
    with dask.config.set({"dataframe.convert-string": False}):
        data = frame if how == "pandas" else dd.from_pandas(frame, npartitions=2)
        if how == "dask-one-type-per-partition":  # each partition holds one type only
            data = dd.concat([dd.from_pandas(frame[~text], npartitions=1),
                              dd.from_pandas(frame[text], npartitions=1)])
        assert data["cid"].dtype == object
        for run in (lambda: dpmic_dask.contribution_bound(data, "cid", 1.0, ledger=ledger),
                    lambda: data.dpmic.pairwise(1.0, bounds=BOUNDS, privacy_unit="cid",
                                                max_rows_per_unit=4, ledger=ledger),
                    lambda: dpmic_dask.private_bounds(data, 1.0, columns=["x"],
                                                      privacy_unit="cid",
                                                      max_rows_per_unit=4, ledger=ledger)):
            with pytest.raises(InvalidDataError, match=r"'cid' mixes value types \(int, str\)"
                               ) as refused:
                run()
            assert "nothing was charged" in str(refused.value)
            assert not any(ch.isdigit() for ch in str(refused.value))  # no unit's value
    assert ledger.charges() == []


@pytest.mark.parametrize("how", ["pandas", "dask"])
def test_a_unit_column_of_a_type_pandas_cannot_name_is_refused_before_the_charge(how):
    """An Arrow interval unit column: pandas's own dtype checks raised
    ``NotImplementedError``; now every per-unit entry refuses it, naming the
    column and its type, before the charge."""
    import pyarrow as pa

    from dpmic_dask.errors import InvalidDataError

    frame = events()
    kind = pa.month_day_nano_interval()
    frame["cid"] = pd.array([pa.scalar((int(c), 0, 0), type=kind).as_py()
                             for c in frame["cid"]], dtype=pd.ArrowDtype(kind))
    data = frame if how == "pandas" else dd.from_pandas(frame, npartitions=2)
    ledger = InMemoryLedger(uncapped=True)
    for run in (lambda: dpmic_dask.contribution_bound(data, "cid", 1.0, ledger=ledger),
                lambda: data.dpmic.pairwise(1.0, bounds=BOUNDS, privacy_unit="cid",
                                            max_rows_per_unit=4, ledger=ledger),
                lambda: dpmic_dask.private_bounds(data, 1.0, columns=["x"], privacy_unit="cid",
                                                  max_rows_per_unit=4, ledger=ledger)):
        with pytest.raises(InvalidDataError, match=r"'cid' has a type pandas cannot compare"
                           ) as refused:
            run()
        assert "nothing was charged" in str(refused.value)
    assert ledger.charges() == []


def test_a_categorical_unit_mixing_ints_and_strings_is_refused_from_its_dtype():
    from dpmic_dask.errors import InvalidDataError

    dtype = pd.CategoricalDtype([17, "17"])
    with pytest.raises(InvalidDataError, match=r"'cid' mixes value types \(int, str\)"):
        plan_unit_release(pd.Series({"cid": dtype, "x": np.dtype("f8"), "y": np.dtype("f8")}),
                          1.0, bounds=BOUNDS, privacy_unit="cid", max_rows_per_unit=4)


@pytest.mark.parametrize("how", ["dask-convert-string", "text", "categorical"])
def test_unit_ids_written_as_whole_and_decimal_text_are_refused(how):
    """Dask's ``convert-string`` (on by default) turns an object column of 17 and
    17.0 into the text '17' and '17.0': two units by text, one by number. Text ids
    that read both as whole and as decimal numbers are refused before the charge,
    from a Dask frame, a text column or a categorical's categories."""
    import dask

    from dpmic_dask.errors import InvalidDataError

    frame = events()
    written = pd.Series([float(c) if c % 3 == 0 else c for c in frame["cid"]],
                        dtype=object, index=frame.index)
    if how == "dask-convert-string":
        frame["cid"] = written
        with dask.config.set({"dataframe.convert-string": True}):
            data = dd.from_pandas(frame, npartitions=2)
        assert data["cid"].dtype != object  # the text Dask made of them
    else:
        frame["cid"] = written.map(str).astype("string" if how == "text" else "category")
        data = frame
    ledger = InMemoryLedger(uncapped=True)
    for run in (lambda: data.dpmic.pairwise(1.0, bounds=BOUNDS, privacy_unit="cid",
                                            max_rows_per_unit=4, ledger=ledger),
                lambda: dpmic_dask.private_bounds(data, 1.0, columns=["x"], privacy_unit="cid",
                                                  max_rows_per_unit=4, ledger=ledger)):
        with pytest.raises(InvalidDataError,
                           match=r"'cid' mixes value types \(decimal text, int text\)") as no:
            run()
        assert not any(ch.isdigit() for ch in str(no.value))  # no unit's value
    assert ledger.charges() == []
    # text ids that cannot meet go through: "c17"; "17" alone; "17" beside "18.5"
    # (not a whole number); hex ids, some all digits and some like "3e5f"
    plain = events()["cid"]
    halves = plain.map(lambda c: f"{c}.5" if c % 3 == 0 else str(c))
    hexes = plain.map(lambda c: f"{c:x}e{c % 7}f" if c % 2 else f"{c * 11}")
    for ids in (frame["cid"].astype(str).radd("c"), plain.map(str), halves, hexes):
        ok = events().assign(cid=ids.astype("string").to_numpy())
        assert ok.dpmic.pairwise(50.0, bounds=BOUNDS, privacy_unit="cid",
                                 max_rows_per_unit=4).privacy.privacy_unit == "cid"


def test_a_unit_column_of_one_object_type_goes_through():
    frame = events()
    frame["cid"] = frame["cid"].map(lambda c: f"c{c}").astype(object)
    result = frame.dpmic.pairwise(50.0, bounds=BOUNDS, privacy_unit="cid", max_rows_per_unit=4)
    assert result.privacy.privacy_unit == "cid"


def test_min_rows_given_per_unit_is_said_not_to_be_used():
    """Per unit the kept rows' count is released privately: a ``min_rows`` given
    with ``nulls="drop"`` was checked and then dropped without a word."""
    from dpmic_dask.errors import UnusedParameterWarning

    gen = np.random.default_rng(2)  # test data only
    frame = pd.DataFrame({"u": np.arange(4000) // 4, "x": gen.normal(size=4000),
                          "y": gen.normal(size=4000)})
    frame.loc[:20, "x"] = np.nan
    kwargs = dict(bounds={"x": (-4, 4), "y": (-4, 4)}, columns=["x", "y"], nulls="drop",
                  privacy_unit="u", max_rows_per_unit=4)
    ledger = InMemoryLedger(uncapped=True)
    with pytest.warns(UnusedParameterWarning, match="min_rows is not used per privacy unit") \
            as said:
        frame.dpmic.pairwise(1.0, min_rows=1000, ledger=ledger, **kwargs)
    assert len([w for w in said if "min_rows" in str(w.message)]) == 1  # said once
    frame.dpmic.pairwise(1.0, ledger=ledger, **kwargs)  # no warning (an error under pytest)
    assert len(ledger.charges()) == 2


def test_a_per_unit_statement_says_the_bad_event_of_one_unit():
    """Per unit, categories chosen from the values that occur publish one held by
    a single unit (up to k rows) with the small probability in delta: the
    statement said "a single row"."""
    import warnings

    from dpmic_dask.privacy.accounting import Budget

    gen = np.random.default_rng(0)  # test data only
    cid = np.repeat(np.arange(3000), 3)
    frame = pd.DataFrame({"cid": cid, "region": gen.choice(["north", "south"], cid.size),
                          "amount": gen.normal(0, 1, cid.size)})
    ledger = InMemoryLedger({"d": Budget(10.0, 1e-5, privacy_unit="cid")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dd.from_pandas(frame, npartitions=2).dpmic.pairwise(
            4.0, delta=1e-6, bounds={"amount": (-5, 5)}, columns=["region", "amount"],
            categories={"region": "private"}, privacy_unit="cid", max_rows_per_unit=3,
            ledger=ledger, dataset="d")
    statement = result.privacy.statement
    assert "a category held by a single cid is published" in statement
    assert "held by a single row" not in statement
