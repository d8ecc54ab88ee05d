"""Categorical columns: the coding, the refusals, and the statistic against a
brute-force reference computed from the raw values."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from decimal import Decimal

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.stats.categories import CategoryAxis, check_categories, code_bins
from dpmic_dask.stats.counting import bins, pair_counts
from dpmic_dask.stats.grids import master_grid_family, max_groups
from dpmic_dask.stats.statistics.categorical import (
    CategoricalMIC,
    check_pair_grid,
    mutual_information,
)

# ------------------------------------------------------------------ the coding


@pytest.mark.parametrize("dtype", ["object", "string[pyarrow]", "str", "category"])
def test_codes_follow_the_list_with_one_other_bin(dtype):
    values = pd.Series(["b", "a", "zz", None, "a", "c"], dtype=dtype)
    axis = CategoryAxis("v", ("a", "b", "c"))
    codes = axis.encode(values)
    assert axis.codes == 4 and axis.cells == 3 and axis.bounds == (0.0, 4.0)
    np.testing.assert_array_equal(codes[[0, 1, 2, 4, 5]], [1.5, 0.5, 3.5, 0.5, 2.5])
    assert np.isnan(codes[3])  # a null stays missing: the null policy decides


def test_a_category_dtype_is_coded_by_the_list_not_by_its_own_categories():
    # pandas' own categories (from the data) are in another order and miss one
    values = pd.Series(["south", "north", "east"]).astype("category")
    axis = CategoryAxis("region", ("north", "south", "west"))
    np.testing.assert_array_equal(axis.encode(values), [1.5, 0.5, 3.5])


def test_nulls_as_a_category_and_integer_categories():
    axis = CategoryAxis("k", (3, 7), null_category=True)
    values = pd.Series([7, 3, None, 5], dtype="Int64")
    assert axis.codes == 4 and axis.null_code == 2 and axis.other_code == 3
    np.testing.assert_array_equal(axis.encode(values), [1.5, 0.5, 2.5, 3.5])


def test_each_code_has_its_own_bin_in_every_wide_enough_equipartition():
    for codes in range(2, 12):
        for size in range(codes, 90):
            got = code_bins(codes, size)
            assert len(set(got.tolist())) == codes
            # the bin holds the whole code interval's midpoint
            assert all(j * codes <= (b + 1) * codes and b * codes <= (j + 1) * size
                       for j, b in enumerate(got.tolist()))


def schema(**dtypes):
    return {name: pd.api.types.pandas_dtype(d) if isinstance(d, str) else d
            for name, d in dtypes.items()}


def test_lists_are_checked_against_the_dtype():
    s = schema(region="str", n="int64", x="float64", o="object")
    with pytest.raises(InvalidParameterError, match="strings"):
        check_categories(s, {"region": [1, 2]})
    with pytest.raises(InvalidParameterError, match="integers"):
        check_categories(s, {"n": ["a", "b"]})
    with pytest.raises(InvalidParameterError, match="at least one"):
        check_categories(s, {"region": []})
    with pytest.raises(InvalidParameterError, match="more than once"):
        check_categories(s, {"region": ["a", "a"]})
    with pytest.raises(InvalidDataError, match="cannot be categorical"):
        check_categories(s, {"x": [1.0, 2.0]})
    with pytest.raises(InvalidParameterError, match="list of public categories"):
        check_categories(s, {"region": "north"})
    assert check_categories(s, {"o": ["a", 2]})["o"].categories == ("a", 2)


def test_a_category_column_takes_a_list_of_what_its_categories_are():
    """A ``category`` dtype whose categories are integers takes an integer list
    (a text list could equal none of them: every row in "other"); one whose
    categories are neither text nor integers takes none."""
    gen = np.random.default_rng(19)  # test data only
    x = gen.uniform(0, 100, 5000)
    frame = pd.DataFrame({"x": x, "ci": pd.Categorical((x // 34).astype(int)),
                          "cf": pd.Categorical(x // 34)})
    ledger = InMemoryLedger(uncapped=True)

    def release(column, listed):
        return frame.dpmic.pairwise(4.0, bounds={"x": (0, 100)}, columns=["x", column],
                                    categories={column: listed}, ledger=ledger)

    # ci is a step function of x (MIC 1); at eps = 4 the noise's ci95 is about 0.05
    assert release("ci", [0, 1, 2]).values[0] > 0.8
    assert len(ledger.charges()) == 1
    with pytest.raises(InvalidParameterError, match=r"categories\['ci'\] must list integers"):
        release("ci", ["0", "1", "2"])
    with pytest.raises(InvalidParameterError, match=r"categories are of dtype float64"):
        release("cf", ["0.0", "1.0"])
    assert len(ledger.charges()) == 1
    # on Dask the schema's categories are unknown until a partition is read: the
    # integer list is taken, and a text list is refused in the pass before the charge
    lazy = dd.from_pandas(frame[["x"]].assign(ci=(x // 34).astype(int)), npartitions=3)
    lazy["ci"] = lazy["ci"].astype("category")
    with dask.config.set(scheduler="sync"):
        assert lazy.dpmic.pairwise(4.0, bounds={"x": (0, 100)}, columns=["x", "ci"],
                                   categories={"ci": [0, 1, 2]}, ledger=ledger).values[0] > 0.8
        with pytest.raises(InvalidDataError, match="'ci' \\(dtype category\\) has categories "
                                                   "of another type"):
            lazy.dpmic.pairwise(4.0, bounds={"x": (0, 100)}, columns=["x", "ci"],
                                categories={"ci": ["0", "1", "2"]}, ledger=ledger)
    assert len(ledger.charges()) == 2


def test_an_object_column_of_other_values_is_refused_before_the_charge_never_all_other():
    """An ``object`` column of dates with a list of ISO text: no date equals a text,
    so every row would fall in "other"; refused in the pass before the charge,
    naming the column only."""
    gen = np.random.default_rng(19)  # test data only
    x = gen.uniform(0, 100, 3000)
    days = [dt.date(2024, 1, 1 + int(v)) for v in x // 34]
    frame = pd.DataFrame({"x": x, "d": pd.Series(days, dtype=object)})
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidDataError, match="'d' \\(dtype object\\) holds values that are "
                                               "neither text nor integers") as info:
        frame.dpmic.pairwise(1.0, bounds={"x": (0, 100)}, columns=["x", "d"],
                             categories={"d": ["2024-01-01", "2024-01-02", "2024-01-03"]},
                             ledger=ledger)
    assert "2024-01-0" not in str(info.value).split("ISO text")[0]
    assert ledger.charges() == []
    # a text column with a few stray values of other types is not refused: those are
    # "other", as any unlisted value
    stray = frame.assign(d=pd.Series([d.isoformat() for d in frame.d], dtype=object))
    stray.loc[:4, "d"] = [1.5, True, dt.date(2024, 1, 1), b"x", 2.0]
    stray.dpmic.pairwise(1.0, bounds={"x": (0, 100)}, columns=["x", "d"],
                         categories={"d": ["2024-01-01", "2024-01-02", "2024-01-03"]},
                         ledger=ledger)
    assert len(ledger.charges()) == 1
    ledger = InMemoryLedger(uncapped=True)
    # as text, the same column is released (MIC 1 up to noise)
    text = frame.assign(d=frame.d.map(lambda d: d.isoformat()))
    released = text.dpmic.pairwise(4.0, bounds={"x": (0, 100)}, columns=["x", "d"],
                                   categories={"d": ["2024-01-01", "2024-01-02", "2024-01-03"]},
                                   ledger=ledger)
    assert released.values[0] > 0.8


@pytest.mark.parametrize("values, wrong, right", [
    (lambda k: int(k), ["0", "1", "2"], [0, 1, 2]),
    (lambda k: str(k), [0, 1, 2], ["0", "1", "2"]),
])
def test_an_object_column_of_integers_with_a_list_of_text_is_refused_before_the_charge(
        values, wrong, right):
    """An ``object`` column of integers only with a list of text (or of text with a
    list of integers): every row fell in "other" and MIC 0 was released without a
    word. Refused before the charge; the list of the values' own type is released."""
    gen = np.random.default_rng(23)  # test data only
    k = gen.integers(0, 3, 3000)
    frame = pd.DataFrame({"x": k + gen.normal(0, 0.2, k.size),
                          "c": pd.Series([values(v) for v in k], dtype=object)})
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidDataError, match="holds no value of its list's type"):
        frame.dpmic.pairwise(1.0, bounds={"x": (-1, 3)}, columns=["x", "c"],
                             categories={"c": wrong}, ledger=ledger)
    assert ledger.charges() == []
    released = frame.dpmic.pairwise(4.0, bounds={"x": (-1, 3)}, columns=["x", "c"],
                                    categories={"c": right}, ledger=ledger)
    assert released.values[0] > 0.8 and len(ledger.charges()) == 1


def _exploding_frame(dtype):
    def boom(part):
        raise AssertionError("data was read")

    frame = pd.DataFrame({"region": pd.Series(["a", "b"] * 4, dtype=dtype),
                          "x": np.linspace(0, 1, 8)})
    ddf = dd.from_pandas(frame, npartitions=2)
    return ddf.map_partitions(boom, meta=ddf._meta)


@pytest.mark.parametrize("dtype", ["category", "str", "string[pyarrow]", "object"])
def test_a_categorical_column_without_a_list_is_refused_before_anything_is_read(dtype):
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidDataError) as info:
        _exploding_frame(dtype).dpmic.pairwise(eps=1.0, bounds={"x": (0, 1)},
                                               columns=["region", "x"], ledger=ledger)
    message = str(info.value)
    assert "'region'" in message and "never public" in message
    assert "'a'" not in message and "'b'" not in message  # no value quoted
    assert not ledger.charges()


def _no_text_columns():
    import pyarrow as pa

    def arrow(values, kind):
        return pd.array(values, dtype=pd.ArrowDtype(kind))

    n = 60
    return {
        "bytes": arrow([bytes([i % 3]) for i in range(n)], pa.binary()),
        "time of day": arrow([dt.time(i % 24) for i in range(n)], pa.time64("us")),
        "list": arrow([[i % 3] for i in range(n)], pa.list_(pa.int64())),
        "struct": arrow([{"a": i % 3} for i in range(n)], pa.struct([("a", pa.int64())])),
        "nulls": arrow([None] * n, pa.null()),
        "period": pd.array([pd.Period("2020-01", "M") + i % 3 for i in range(n)]),
        "interval": pd.arrays.IntervalArray.from_breaks(np.arange(n + 1)),
    }


@pytest.mark.parametrize("name", list(_no_text_columns()))
def test_a_column_whose_values_are_never_text_takes_no_category_list(name):
    """pandas gives these dtypes kind "O", as it gives text, but no listed string
    can equal their values: a list put every row in the 'other' bin and the
    release was charged and read as no dependence (0.0). Now they are refused
    before the charge as categorical columns (with a list) and as columns no kind
    reads (without one)."""
    values = _no_text_columns()[name]
    frame = pd.DataFrame({"x": np.linspace(-1, 1, len(values)), "c": values})
    ledger = InMemoryLedger(uncapped=True)
    for data in (frame, dd.from_pandas(frame, npartitions=2)):
        with pytest.raises(InvalidDataError, match=r"'c' \(dtype .*\) cannot be categorical"):
            data.dpmic.pairwise(1.0, bounds={"x": (-1, 1)}, categories={"c": ["a", "b"]},
                                columns=["x", "c"], ledger=ledger, progress=False)
        with pytest.raises(InvalidDataError, match=r"'c' has dtype .*, which no column kind"):
            data.dpmic.pairwise(1.0, bounds={"x": (-1, 1), "c": (0, 1)}, columns=["x", "c"],
                                ledger=ledger, progress=False)
    assert ledger.charges() == []


def test_a_text_column_of_dates_or_decimals_on_dask_is_refused_with_the_way_out():
    # Dask turns an object column of datetime.date or Decimal values into text
    frame = pd.DataFrame({"day": [dt.date(2024, 1, d) for d in range(1, 9)],
                          "amount": [Decimal("1.25")] * 8, "x": np.linspace(0, 1, 8)})
    ddf = dd.from_pandas(frame, npartitions=2)
    ledger = InMemoryLedger(uncapped=True)
    for column in ("day", "amount"):
        with pytest.raises(InvalidDataError, match="Dask turns an object column") as info:
            ddf.dpmic.pairwise(eps=1.0, bounds={"x": (0, 1)}, columns=[column, "x"],
                               ledger=ledger)
        assert f"kinds={{'{column}': 'date'}}" in str(info.value)
        assert "2024" not in str(info.value) and "1.25" not in str(info.value)
    # the way out it names: the dates are read as dates
    result = ddf.dpmic.pairwise(eps=1.0, bounds={"day": (dt.date(2024, 1, 1),
                                                         dt.date(2024, 1, 9)), "x": (0, 1)},
                                columns=["day", "x"], kinds={"day": "date"},
                                bounds_check=None, ledger=ledger)
    assert len(result.values) == 1
    assert len(ledger.charges()) == 1


def test_refusals_of_the_request_before_anything_is_read():
    frame = _exploding_frame("str")
    ledger = InMemoryLedger(uncapped=True)
    cases = [
        (dict(bounds={"x": (0, 1), "region": (0, 1)}, categories={"region": ["a", "b"]}),
         "bounds"),
        (dict(bounds={"x": (0, 1)}, categories={"region": ["a", "b"]},
              mechanism="micr-geom"), "micr-geom"),
        (dict(bounds={"x": (0, 1)}, categories={"region": ["a", "b"]}, nulls="fill",
              fill={"x": 0.5, "region": "zz"}), "listed categories"),
        (dict(bounds={"x": (0, 1)}, nulls="category"), "categorical columns"),
        (dict(bounds={"x": (0, 1)}, categories={"region": [f"c{k}" for k in range(30)]},
              B=40, c=1), "too many categories"),
    ]
    for arguments, words in cases:
        with pytest.raises((InvalidParameterError, InvalidDataError), match=words):
            frame.dpmic.pairwise(eps=1.0, ledger=ledger, **arguments)
    assert not ledger.charges()


@pytest.mark.parametrize("fill", [2.0, np.float64(2.0), True, "2"])
def test_a_fill_of_another_type_than_the_list_is_refused_before_the_charge(fill):
    """``2.0 == 2``, but a float fill was read as an axis number (the middle of
    category 1's bin, not category 2's): accepted, charged and wrong. A fill is a
    listed category of the list's own type; an integer of NumPy's is one."""
    gen = np.random.default_rng(3)  # test data only
    c = pd.array(gen.integers(1, 4, 4000), dtype="Int64")
    y = np.asarray(c, dtype=float) + gen.normal(0, 0.3, c.size)
    c[:1000] = pd.NA
    frame = pd.DataFrame({"c": c, "y": y})
    ledger = InMemoryLedger(uncapped=True)
    kwargs = dict(bounds={"y": (-1, 5)}, categories={"c": [1, 2, 3]}, columns=["c", "y"],
                  nulls="fill", ledger=ledger, B=40, c=5)
    with pytest.raises(InvalidParameterError, match="of their type"):
        frame.dpmic.pairwise(1.0, fill={"c": fill, "y": 0.0}, **kwargs)
    assert ledger.charges() == []
    from tests.statistical.test_release_noise_paths import zero_noise

    with zero_noise():
        numpy_int = frame.dpmic.pairwise(1.0, fill={"c": np.int64(2), "y": 0.0}, **kwargs)
        by_hand = frame.assign(c=frame.c.fillna(2)).dpmic.pairwise(
            1.0, **{**kwargs, "nulls": "raise"})
    assert numpy_int.values == pytest.approx(by_hand.values, abs=1e-12)


# ------------------------------------------------------------- the statistic


def groupings(rows: int, groups: int):
    """Every split of ``rows`` ordered rows into ``groups`` contiguous non-empty runs
    (as run labels per row)."""
    for cuts in itertools.combinations(range(1, rows), groups - 1):
        labels = np.zeros(rows, dtype=np.int64)
        for cut in cuts:
            labels[cut:] += 1
        yield labels


def reference_one_axis(codes, y, y_bounds, axis: CategoryAxis, B: int, c: int) -> float:
    """The definition of docs/statistics.md ("A categorical axis") from the raw
    values, by enumeration: (a) the categories against every contiguous grouping
    of the ordered axis's c*kmax(l) master rows for each fixed size l >= K, and
    (b) the categories against each equipartition of l bins with k*l <= B and
    c*kmax(l) >= K."""
    K, k = axis.codes, axis.cells
    best = 0.0
    for l in range(2, B // 2 + 1):
        kmax = max_groups(l, B)
        rows = c * kmax
        if l >= K:  # (a)
            master = bins(y, y_bounds, rows)
            for m in range(2, kmax + 1):
                for labels in groupings(rows, min(m, rows)):
                    table = pd.crosstab(codes, labels[master]).to_numpy()
                    best = max(best, mutual_information(table) / math.log2(min(k, m)))
        if rows >= K and k * l <= B:  # (b)
            table = pd.crosstab(codes, bins(y, y_bounds, l)).to_numpy()
            best = max(best, mutual_information(table) / math.log2(min(k, l)))
    return min(best, 1.0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("B,c", [(12, 1), (12, 2), (16, 1)])
def test_one_categorical_axis_equals_the_definition(seed, B, c):
    gen = np.random.default_rng(seed)  # test data only
    n = 300
    axis = CategoryAxis("g", ("p", "q", "r")[: 2 + seed % 2], null_category=seed % 3 == 0)
    labels = gen.choice(["p", "q", "r", "s", None], n)
    y = gen.normal(0, 1, n) + np.array([{"p": 0, "q": 1.5, "r": -1}.get(v, 3) for v in labels])
    x = axis.encode(pd.Series(labels, dtype=object))
    x = np.where(np.isnan(x), axis.other_code + 0.5, x)  # nulls without a category: other
    family = master_grid_family(B, c)
    expected = reference_one_axis(np.floor(x).astype(int), y, (-3.0, 5.0), axis, B, c)
    assert CategoricalMIC(axis, None).value(pair_counts(x, y, axis.bounds, (-3.0, 5.0), family),
                                            family) == pytest.approx(expected, abs=1e-12)
    # the categorical axis may be either column of the pair
    assert CategoricalMIC(None, axis).value(pair_counts(y, x, (-3.0, 5.0), axis.bounds, family),
                                            family) == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= expected <= 1.0


@pytest.mark.parametrize("seed", range(5))
def test_two_categorical_axes_give_the_contingency_table_mi(seed):
    gen = np.random.default_rng(100 + seed)  # test data only
    n = 500
    a = CategoryAxis("a", ("u", "v", "w"), null_category=True)
    b = CategoryAxis("b", (10, 20, 30, 40))
    xa = gen.choice(["u", "v", "w", "zz", None], n)
    xb = np.where(gen.uniform(size=n) < 0.6, (np.arange(n) % 3 + 1) * 10,
                  gen.choice([10, 20, 30, 40, 50], n))
    x, y = a.encode(pd.Series(xa, dtype=object)), b.encode(pd.Series(xb))
    table = pd.crosstab(np.floor(x), np.floor(y)).to_numpy()
    expected = min(mutual_information(table) / math.log2(min(a.cells, b.cells)), 1.0)
    for B, c in [(20, 5), (40, 2), (200, 5)]:
        family = master_grid_family(B, c)
        got = CategoricalMIC(a, b).value(pair_counts(x, y, a.bounds, b.bounds, family), family)
        assert got == pytest.approx(expected, abs=1e-12)


def test_mutual_information_matches_scipy_free_formula():
    table = np.array([[10, 0, 3], [2, 8, 1]])
    p = table / table.sum()
    px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    mask = p > 0
    expected = float((p[mask] * np.log2(p[mask] / (px @ py)[mask])).sum())
    assert mutual_information(table) == pytest.approx(expected, abs=1e-14)


def test_grid_feasibility_is_checked():
    family = master_grid_family(40, 1)
    check_pair_grid(CategoryAxis("a", tuple(range(19))), None, family)  # K = 20 = B/2
    with pytest.raises(InvalidParameterError, match="too many categories"):
        check_pair_grid(CategoryAxis("a", tuple(range(30))), None, family)
    with pytest.raises(InvalidParameterError):
        check_pair_grid(CategoryAxis("a", tuple(range(15))), CategoryAxis("b", tuple(range(15))),
                        family)


# ------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def customers():
    gen = np.random.default_rng(7)  # test data only
    n = 4000
    region = gen.choice(["north", "south", "east", "west", "islands"], n)
    amount = np.array([{"north": 10, "south": 20, "east": 30}.get(r, 40) for r in region])
    amount = amount + gen.normal(0, 3, n)
    plan = np.where(region == "north", "basic", gen.choice(["basic", "plus", None], n))
    return pd.DataFrame({
        "region": pd.Series(region, dtype="string[pyarrow]"),
        "amount": amount,
        "plan": pd.Series(plan, dtype=object).astype("category"),
        "noise": gen.uniform(0, 1, n),
        "level": gen.integers(0, 4, n),
    })


CATS = {"region": ["north", "south", "east"], "plan": ["basic", "plus"], "level": [0, 1, 2, 3]}


def test_pairwise_with_categories_matches_the_statistic_and_marks_tau(customers):
    from tests.statistical.test_release_noise_paths import zero_noise

    with zero_noise():
        res = customers.dpmic.pairwise(eps=1.0, bounds={"amount": (0, 50), "noise": (0, 1)},
                                       categories=CATS, nulls="category", B=40, c=5,
                                       statistics=("mic", "tau_a"),
                                       ledger=InMemoryLedger(uncapped=True))
        ddf = dd.from_pandas(customers, npartitions=3)
        res_dask = ddf.dpmic.pairwise(eps=1.0, bounds={"amount": (0, 50), "noise": (0, 1)},
                                      categories=CATS, nulls="category", B=40, c=5,
                                      statistics=("mic", "tau_a"),
                                      ledger=InMemoryLedger(uncapped=True))
    table = res.to_pandas().set_index(["x", "y"])
    assert res_dask.values == pytest.approx(res.values, abs=1e-9)
    family = master_grid_family(40, 5)
    axes = {c: CategoryAxis(c, tuple(v), null_category=True) for c, v in CATS.items()}
    bounds = {"amount": (0.0, 50.0), "noise": (0.0, 1.0)}
    for (x, y), row in table.iterrows():
        ax, ay = axes.get(x), axes.get(y)
        vx = ax.encode(customers[x]) if ax else customers[x].to_numpy(float)
        vy = ay.encode(customers[y]) if ay else customers[y].to_numpy(float)
        counts = pair_counts(vx, vy, ax.bounds if ax else bounds[x], ay.bounds if ay else bounds[y],
                             family)
        if ax is None and ay is None:
            from dpmic_dask.stats.characteristic import micr_from_counts
            exact = micr_from_counts(counts, family)
            assert not np.isnan(row["tau_a"])
        else:
            exact = CategoricalMIC(ax, ay).value(counts, family)
            assert np.isnan(row["tau_a"]) and np.isnan(row["nonlinearity"])
        assert row["mic"] == pytest.approx(exact, abs=1e-9)
    assert table.loc[("region", "amount"), "mic"] > 0.8  # k = 4 with the null category
    assert table.loc[("region", "plan"), "mic"] > 0.1
    assert table.loc[("amount", "noise"), "mic"] < 0.1


def test_fill_with_a_category_and_top_pairs(customers):
    res = customers.dpmic.top_pairs(2, eps=50.0, bounds={"amount": (0, 50), "noise": (0, 1)},
                                    categories=CATS, nulls="fill",
                                    fill={"plan": "plus", "amount": 0.0, "noise": 0.0,
                                          "region": "north", "level": 0},
                                    ledger=InMemoryLedger(uncapped=True))
    assert ("region", "amount") in res.pairs


def test_the_exact_non_private_version_through_the_accessor(customers):
    from tests.statistical.test_release_noise_paths import zero_noise

    bounds = {"amount": (0, 50), "noise": (0, 1)}
    exact = dd.from_pandas(customers, npartitions=2).dpmic.pairwise_nonprivate(
        bounds=bounds, categories=CATS, nulls="category", B=40, c=5)
    with zero_noise():
        released = customers.dpmic.pairwise(eps=1.0, bounds=bounds, categories=CATS,
                                            nulls="category", B=40, c=5,
                                            ledger=InMemoryLedger(uncapped=True))
    assert list(zip(exact.x, exact.y)) == list(released.pairs)
    np.testing.assert_allclose(exact.micr, released.values, atol=1e-9)


@pytest.mark.parametrize("fill", ["a", 0])
def test_categories_chosen_from_the_values_take_no_fill_value(fill):
    """No value chosen after the charge can be named before it: nulls='fill' on a
    column whose categories come from the values that occur is refused before
    anything is read, with the ways out (it said "must be one of the listed
    categories" of a list there was none of)."""
    frame = pd.DataFrame({"x": np.linspace(0, 1, 100), "c": ["a", "b", None, "a"] * 25})
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidParameterError, match=r"\['c'\].*nulls='category'.*nulls='drop'"):
        frame.dpmic.pairwise(1.0, delta=1e-6, bounds={"x": (0, 1)}, columns=["x", "c"],
                             categories={"c": "private"}, nulls="fill",
                             fill={"x": 0.5, "c": fill}, ledger=ledger)
    assert ledger.charges() == []


def test_an_object_columns_values_equal_a_listed_category_only_of_its_type():
    """Coded by Python equality, True was category 1 and 2.0 category 2 of a list
    of integers (the docs, and fills, say values of another type are "other")."""
    from dpmic_dask.stats.categorycodes import MISSING, NOT_LISTED, listed_codes

    column = pd.Series([0, 1, 2, True, 2.0, "1", None, np.int64(1)], dtype=object)
    assert list(listed_codes(column, (0, 1, 2))) == [0, 1, 2, NOT_LISTED, NOT_LISTED,
                                                     NOT_LISTED, MISSING, 1]
    text = pd.Series(["a", "b", 1, None], dtype=object)
    assert list(listed_codes(text, ("a", "b"))) == [0, 1, NOT_LISTED, MISSING]


def test_a_part_without_values_never_refuses_a_category_list_after_the_charge():
    """A Dask category column of unknown categories with a part of nulls only whose
    dtype lists text: the values that occur (integers, chosen before the charge)
    were refused in that part after the charge ("categories of another type")."""
    from dpmic_dask.privacy.accounting import Budget, InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    full = pd.DataFrame({"c": pd.Categorical(gen.integers(0, 3, 4000)),
                         "amount": gen.normal(0, 1, 4000)})
    nulls = pd.DataFrame({"c": pd.Categorical([None] * 50, categories=["x", "y"]),
                          "amount": gen.normal(0, 1, 50)})

    def unknown(frame):
        part = dd.from_pandas(frame, npartitions=1)
        return part.assign(c=part.c.cat.as_unknown())

    ledger = InMemoryLedger({"d": Budget(10.0, 1e-5)})
    result = dd.concat([unknown(full), unknown(nulls)]).dpmic.pairwise(
        4.0, delta=1e-6, bounds={"amount": (-5, 5)}, columns=["c", "amount"],
        categories={"c": "private"}, nulls="category", ledger=ledger, dataset="d")
    assert len(ledger.charges("d")) == 1 and len(result.pairs) == 1


def test_a_category_dtype_of_integers_can_have_its_categories_chosen():
    """``categories={"c": "private"}`` on a ``category`` column of integers was
    refused ("must list integers": its stand-in list before the charge was
    text), where an int64 column and ``private_categories`` took it."""
    from dpmic_dask.privacy.accounting import Budget, InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    frame = pd.DataFrame({"c": pd.Categorical(gen.integers(0, 3, 4000)),
                          "amount": gen.normal(0, 1, 4000)})
    for data in (frame, dd.from_pandas(frame, npartitions=2)):
        ledger = InMemoryLedger({"d": Budget(10.0, 1e-5)})
        result = data.dpmic.pairwise(4.0, delta=1e-6, bounds={"amount": (-5, 5)},
                                     columns=["c", "amount"], categories={"c": "private"},
                                     ledger=ledger, dataset="d")
        assert set(result.private_categories["c"]) <= {0, 1, 2}


def test_per_unit_the_values_that_occur_keep_an_object_columns_types():
    """The kept rows of a release per unit were rebuilt by Dask with its text
    conversion: an object column of integers chose ("0", "1", "2") where the row
    level chose (0, 1, 2) (and the list could not be reused on the column), and
    stray booleans, refused at row level, became the category "True". Per unit
    reads the types the row level reads."""
    import dask

    from dpmic_dask.errors import InvalidDataError
    from dpmic_dask.privacy.accounting import Budget, InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    n = 6000
    codes = gen.integers(0, 3, n).astype(object)
    frame = pd.DataFrame({"c": codes, "amount": gen.normal(0, 1, n), "u": np.arange(n)})
    with dask.config.set({"dataframe.convert-string": False}):
        ints = dd.from_pandas(frame, npartitions=2)
        strays = dd.from_pandas(frame.assign(c=np.where(np.arange(n) < 600, True, codes)),
                                npartitions=2)
    args = dict(delta=1e-6, bounds={"amount": (-5, 5)}, columns=["c", "amount"],
                categories={"c": "private"}, privacy_unit="u", max_rows_per_unit=1,
                dataset="d")
    ledger = InMemoryLedger({"d": Budget(10.0, 1e-5, privacy_unit="u")})
    chosen = ints.dpmic.pairwise(4.0, ledger=ledger, **args).private_categories["c"]
    assert chosen and all(isinstance(v, (int, np.integer)) for v in chosen)
    spent = float(ledger.spent("d"))
    with pytest.raises(InvalidDataError, match="holds a value of type bool"):
        strays.dpmic.pairwise(4.0, ledger=ledger, **args)
    assert float(ledger.spent("d")) == spent


def test_the_default_grid_holds_the_public_category_lists_of_a_wide_release():
    """A wide release caps the default B for its wide noise (120): a pair of 10
    and 50 listed categories no longer fitted, and the refusal blamed "K <= B / 2"
    (both axes met it) for the first pair found. The default B now stops where the
    lists need more (at most the uncapped default); where nothing would fit, the
    refusal names the hardest pair, how many others, and the B it needs."""
    import warnings

    numbers = {f"x{i}": np.zeros(4) for i in range(98)}
    frame = dd.from_pandas(pd.DataFrame({**numbers, "ten": ["0"] * 4, "fifty": ["0"] * 4}),
                           npartitions=1)  # its row count unknown: every size planned
    cats = {"ten": [str(v) for v in range(10)], "fifty": [str(v) for v in range(50)]}
    bounds = {name: (-6, 6) for name in numbers}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the noise of 4,950 pairs at eps 1
        said = str(frame.dpmic.plan(1.0, bounds=bounds, categories=cats).explain())
    assert "n = 100,000: micr-lap" in said and "refused" not in said
    assert "(B = 121, c = 5)" in said  # the cap (120) raised to what the lists need
    wide = {**cats, "ten": [str(v) for v in range(49)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refused = str(frame.dpmic.plan(1.0, bounds=bounds, categories=wide).explain())
    assert "pair ['ten', 'fifty'] has too many categories for B = 120" in refused
    assert "B >= " in refused


def test_the_default_b_after_a_private_choice_is_the_one_planned():
    """The default B steps up to fit the category lists as planned before the
    charge (candidates: their worst case); after the charge it was recomputed from
    the chosen list (3 of 50 candidates), so the release used B = 120 where the
    plan said 121."""
    import warnings

    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    n = 6000
    ten, fifty = [str(v) for v in range(10)], [str(v) for v in range(50)]
    frame = dd.from_pandas(pd.DataFrame({
        "x0": gen.random(n), "x1": gen.random(n), "x2": gen.random(n),
        "ten": gen.choice(ten, n), "fifty": gen.choice(fifty[:3], n)}), npartitions=2)
    bounds = {f"x{i}": (0, 1) for i in range(3)}
    cats = {"ten": ten, "fifty": {"private": fifty}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the noise at eps 0.2
        planned = str(frame.dpmic.plan(0.2, bounds=bounds, categories=cats,
                                       bounds_check=None).explain(rows=n))
        released = frame.dpmic.pairwise(0.2, bounds=bounds, categories=cats,
                                        bounds_check=None, ledger=InMemoryLedger(uncapped=True))
    assert "(B = 121, c = 5)" in planned
    assert set(released.to_pandas()["B"]) == {121}


def test_a_refusal_of_one_categorical_axis_says_the_b_it_needs():
    """Against an ordered column the refusal said "(fewer categories); raise B"
    without the B that would do: 151 codes need B >= 302 at c = 5."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    frame = pd.DataFrame({"x": np.zeros(10), "big": ["0"] * 10})
    with pytest.raises(InvalidParameterError, match=r"\(B >= 302 at c = 5\)"):
        frame.dpmic.pairwise(1.0, bounds={"x": (0, 1)}, B=100,
                             categories={"big": [str(v) for v in range(150)]},
                             ledger=InMemoryLedger(uncapped=True))


def test_a_public_list_of_one_category_is_that_category_against_other():
    """A private choice that keeps one category gave a list its own reuse refused
    ("must list at least two categories"), though the statistic reads one listed
    category against "other" (a binary column); causal.md's {"smoker": [1]} too."""
    gen = np.random.default_rng(8)  # test data only
    n = 20_000
    label = np.where(gen.random(n) < 0.5, "a", "z")
    frame = pd.DataFrame({"c": label, "x": np.where(label == "a", 0.2, 0.8)
                          + gen.normal(0.0, 0.05, n)})
    result = frame.dpmic.pairwise(4.0, bounds={"x": (0, 1)}, categories={"c": ["a"]},
                                  bounds_check=None)
    assert result.values[0] > 0.95  # a and "other" separate x
    with pytest.raises(InvalidParameterError, match="at least one category"):
        frame.dpmic.pairwise(4.0, bounds={"x": (0, 1)}, categories={"c": []})
