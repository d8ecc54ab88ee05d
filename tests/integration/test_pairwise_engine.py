import dask
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.backends import count_frame
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from dpmic_dask.stats.countspec import CountSpec
from dpmic_dask.stats.grids import master_grid_family
from tests.integration.frames import BOUNDS, split_with_empties, table

COLS = ["a", "b", "c", "d"]


def spec_for(B=20, c=3):
    return CountSpec(tuple(COLS), tuple(BOUNDS[k] for k in COLS), None, master_grid_family(B, c))


@pytest.fixture(scope="module")
def df():
    return table(20_000)


@pytest.fixture(scope="module")
def whole_counts(df):
    return count_frame(df, spec_for())


@pytest.fixture(params=[1, 2, 3, 7], ids=lambda k: f"{k}-partitions")
def partitioned(request, df):
    return request.param, split_with_empties(df, request.param)


@pytest.fixture(params=["synchronous", "threads", "processes"])
def scheduler(request):
    with dask.config.set(scheduler=request.param):
        yield request.param


def test_counts_identical_for_any_partitioning_and_scheduler(whole_counts, partitioned,
                                                             scheduler):
    pieces, ddf = partitioned
    got = count_frame(ddf, spec_for(), split_every=2 + pieces % 3)
    assert got.rows == whole_counts.rows
    np.testing.assert_array_equal(got.counts, whole_counts.counts)


def test_nonprivate_equals_in_memory_micr_pair_by_pair(df):
    ddf = split_with_empties(df, 7)
    out = ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=30, c=4, progress=False)
    assert list(zip(out.x, out.y)) == [(a, b) for i, a in enumerate(COLS) for b in COLS[i + 1:]]
    for row in out.itertuples():
        want = dm.micr(df[row.x], df[row.y], x_bounds=BOUNDS[row.x], y_bounds=BOUNDS[row.y], B=30, c=4)
        assert row.micr == want
    assert (out.n == len(df)).all()
    same = df.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=30, c=4)
    pd.testing.assert_frame_equal(out, same)


def test_pairwise_release_once_and_result_api(df, tmp_path):
    ddf = split_with_empties(df, 3)
    ledger = InMemoryLedger(uncapped=True)
    first = ddf.dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="t", progress=False)
    second = ddf.dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="t", progress=False)
    charges = ledger.charges("t")
    assert [c.charge_id for c in charges] == [first.charge_id, second.charge_id]
    assert first.values != second.values  # fresh noise per release
    for value in first.values:
        assert type(value) is float and 0.0 <= value <= 1.0
    assert not any(dask.is_dask_collection(v) for v in vars(first).values())
    tidy = first.to_pandas()
    assert list(tidy.columns) == ["x", "y", "mic", "ci95", "noise_scale", "mechanism",
                                  "statistic", "release_epsilon", "release_delta", "value_cost", "cost_unit",
                                  "n", "B", "c", "within_noise"]
    assert (tidy.within_noise == (tidy.mic.abs() <= tidy.ci95)).all()
    assert len(tidy) == 6 and (tidy.n == len(df)).all() and (tidy.mechanism == "micr-lap").all()
    assert (tidy.statistic == "micr").all()
    m = first.matrix()
    assert np.allclose(m.to_numpy(), m.to_numpy().T, equal_nan=True)
    assert np.isnan(np.diag(m.to_numpy())).all()
    first.to_parquet(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "r.parquet"), tidy)
    text = first.report()
    assert "6 pairs of 4 columns" in text and "per pair" in text and " nat" in text
    # the exact values are close to the released ones at this n and eps
    exact = ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=first.B, c=first.c, progress=False)
    assert np.max(np.abs(exact.micr.to_numpy() - np.array(first.values))) < 20 * first.noise_scale


def test_pairwise_gaussian_auto_and_geom(df):
    wide = df.assign(e=df.a * 0.5, f=df.c, g=df.b)
    bounds = {**BOUNDS, "e": (0, 1), "f": (0, 1), "g": (-1.5, 1.5)}
    r = wide.dpmic.pairwise(1.0, bounds=bounds, delta=1e-5, B=20, c=2)
    assert len(r.pairs) == 21 and r.mechanism == "micr-gauss" and r.rho is not None
    small = df.dpmic.pairwise(1.0, bounds=BOUNDS, delta=1e-5, B=20, c=2)
    assert small.mechanism == "micr-gauss"  # under zCDP the Gaussian, at any number of pairs
    assert small.rho == pytest.approx(rho_from_eps_delta(1.0, 1e-5))
    pure = df.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2)
    assert pure.mechanism == "micr-lap" and pure.rho is None
    geom = df.dpmic.pairwise(1.0, bounds=BOUNDS, mechanism="micr-geom", B=8, c=1)
    assert geom.mechanism == "micr-geom" and np.isnan(geom.ci95)


def exploding_frame(df):
    def boom():
        raise AssertionError("data was read")

    import dask.dataframe as dd
    return dd.from_delayed([dask.delayed(boom)()], meta=df.iloc[0:0])


@pytest.mark.parametrize("kw,error,match", [
    (dict(bounds={"a": (0, 1)}), dm.InvalidParameterError, "at least two columns"),
    (dict(bounds={**BOUNDS, "zz": (0, 1)}), dm.InvalidParameterError, "unknown column"),
    (dict(bounds=BOUNDS, columns=["a", "b", "q"]), dm.InvalidParameterError, "unknown column"),
    (dict(bounds={"a": (0, 1), "b": (0, 1)}, columns=["a", "b", "c"]), dm.InvalidParameterError,
     "bounds are missing"),
    (dict(bounds={**BOUNDS, "label": (0, 1)}), dm.InvalidDataError, "is categorical"),
    (dict(bounds={"a": (1, 0), "b": (0, 1)}), dm.InvalidParameterError, "bounds\\['a'\\]"),
    (dict(bounds=BOUNDS, eps=0), dm.InvalidParameterError, "eps"),
    (dict(bounds=BOUNDS, eps=float("inf")), dm.InvalidParameterError, "eps"),
    (dict(bounds=BOUNDS, delta=1.0), dm.InvalidParameterError, "delta"),
    (dict(bounds=BOUNDS, mechanism="exp"), dm.InvalidParameterError, "mechanism"),
    (dict(bounds=BOUNDS, mechanism="mice-lap"), dm.InvalidParameterError, "private_mic"),
    (dict(bounds=BOUNDS, B=3), dm.InvalidParameterError, "B must"),
    (dict(bounds=BOUNDS, c=1.5), dm.InvalidParameterError, "c must"),
    (dict(bounds=BOUNDS, nulls="drop"), dm.InvalidParameterError, "nulls"),
    (dict(bounds=BOUNDS, nulls="fill"), dm.InvalidParameterError, "fill="),
    (dict(bounds=BOUNDS, nulls="fill", fill={k: 5.0 for k in BOUNDS}), dm.InvalidParameterError,
     "inside bounds"),
])
def test_bad_requests_fail_before_reading_data(df, kw, error, match):
    ledger = InMemoryLedger(uncapped=True)
    args = dict(eps=1.0, ledger=ledger, dataset="t")
    args.update(kw)
    eps = args.pop("eps")
    with pytest.raises(error, match=match):
        exploding_frame(df).dpmic.pairwise(eps, **args)
    assert ledger.charges() == []


def test_over_budget_fails_before_reading_data(df):
    ledger = InMemoryLedger()
    ledger.set_budget("t", Budget(0.5))
    with pytest.raises(dm.BudgetExceededError, match="no data was read"):
        exploding_frame(df).dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="t")


def test_too_few_rows_charges_nothing(df):
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidDataError, match="at least 4 rows"):
        df.iloc[:3].dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="t")
    with pytest.raises(dm.InvalidDataError, match="at least 4 rows"):
        split_with_empties(df.iloc[:3], 2).dpmic.pairwise(1.0, bounds=BOUNDS, B=10, c=1,
                                                          ledger=ledger, dataset="t")
    assert ledger.charges() == []


def test_null_policies(df):
    secret = 123456.789
    holey = df.copy()
    holey.loc[5, "b"] = np.nan
    holey.loc[9, "d"] = None
    holey.loc[11, "a"] = secret
    ledger = InMemoryLedger(uncapped=True)
    ddf = split_with_empties(holey, 3)
    with pytest.raises(dm.MissingValuesError) as info:
        ddf.dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger, dataset="t")
    assert "['b', 'd']" in str(info.value) and "123456" not in str(info.value)
    assert ledger.charges() == []
    fill = {"a": 0.5, "b": 0.0, "c": 0.5, "d": 0.25}
    got = ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=20, c=2, nulls="fill", fill=fill)
    filled = holey.fillna(fill)
    want = dm.micr(filled.b, filled.d, x_bounds=BOUNDS["b"], y_bounds=BOUNDS["d"], B=20, c=2)
    assert got[(got.x == "b") & (got.y == "d")].micr.item() == want


def test_pandas_nullable_and_integer_columns():
    frame = pd.DataFrame({
        "i": pd.array([1, 2, 3, 4, 5, 6, 7, 8], dtype="Int64"),
        "f": pd.array([0.1, 0.2, None, 0.4, 0.5, 0.6, 0.7, 0.8], dtype="Float64"),
        "b": [True, False] * 4,
    })
    bounds = {"i": (0, 10), "f": (0, 1), "b": (0, 1)}
    with pytest.raises(dm.MissingValuesError, match="'f'"):
        frame.dpmic.pairwise_nonprivate(bounds=bounds, B=8, c=1)
    out = frame.dpmic.pairwise_nonprivate(bounds=bounds, B=8, c=1, nulls="fill",
                                          fill={"i": 0, "f": 0.5, "b": 0})
    assert len(out) == 3 and out.micr.between(0, 1).all()


def test_progress_uses_dask_diagnostics_and_is_quiet_by_default(df, capsys):
    ddf = split_with_empties(df, 3)
    with dask.config.set(scheduler="threads"):
        ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=10, c=1, progress=True)
        shown = capsys.readouterr().err
        ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=10, c=1)  # stderr is not a terminal
        quiet = capsys.readouterr()
    assert "100% Completed" in shown
    assert "Completed" not in quiet.err and "Completed" not in quiet.out


def test_non_numeric_values_are_reported_without_quoting_them():
    frame = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4, 0.5], "b": ["1", "2", "Alice", "4", "5"]})
    frame["b"] = frame["b"].astype(object)
    import dask.dataframe as dd
    meta = pd.DataFrame({"a": pd.Series(dtype="float64"), "b": pd.Series(dtype="float64")})
    ddf = dd.from_delayed([dask.delayed(frame)], meta=meta, verify_meta=False)  # claims numeric
    with pytest.raises(dm.InvalidDataError, match="column 'b' holds values that are not numbers") as info:
        ddf.dpmic.pairwise_nonprivate(bounds={"a": (0, 1), "b": (0, 5)}, B=4, c=1)
    assert "Alice" not in str(info.value)


def test_plot_to_file_leaves_the_matplotlib_backend_alone(df, tmp_path):
    import matplotlib

    before = matplotlib.get_backend()
    result = df.dpmic.pairwise(1.0, bounds=BOUNDS, B=10, c=1)
    ax = result.plot(path=tmp_path / "h.png")
    assert (tmp_path / "h.png").stat().st_size > 5_000
    assert matplotlib.get_backend() == before
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == COLS
