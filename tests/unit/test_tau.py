"""Kendall's tau-a of the binned pair: exact from mergeable counts, tight 4/n
sensitivity, and close to the continuous tau on untied data."""

import itertools

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmic_dask as dm
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.counting import bins, count_columns
from dpmic_dask.stats.countspec import CountSpec
from dpmic_dask.stats.grids import master_grid_family, tau_bins
from dpmic_dask.stats.statistics import get_statistic
from dpmic_dask.stats.statistics.tau import tau_a, tau_sensitivity


def tau_family(B, c):
    """The count layout tau reads: the master family plus its one m x m grid."""
    return get_statistic("tau").layout(B, c)


def brute_force_tau(bx, by) -> float:
    """O(n^2) tau-a over every pair of rows of binned data (the independent check)."""
    n = len(bx)
    s = sum(np.sign(bx[i] - bx[j]) * np.sign(by[i] - by[j])
            for i in range(n) for j in range(i + 1, n))
    return s / (n * (n - 1) / 2)


def grid_of(bx, by, m):
    grid = np.zeros((m, m), dtype=np.int64)
    np.add.at(grid, (by, bx), 1)
    return grid


@pytest.mark.parametrize("seed", range(6))
def test_tau_from_a_grid_equals_the_pairwise_definition(seed):
    gen = np.random.default_rng(seed)  # test data only
    m, n = int(gen.integers(2, 9)), int(gen.integers(2, 60))
    bx, by = gen.integers(0, m, n), gen.integers(0, m, n)  # many ties
    assert tau_a(grid_of(bx, by, m)) == pytest.approx(brute_force_tau(bx, by), abs=1e-15)


def test_counted_tau_equals_tau_of_the_binned_values():
    gen = np.random.default_rng(3)
    x = gen.normal(size=3000)
    y = np.where(gen.random(3000) < 0.5, x, -x) ** 3 + gen.normal(size=3000)
    family = tau_family(40, 5)
    counts = count_columns([x, y], CountSpec(("x", "y"), ((-3, 3), (-6, 6)), None, family)).counts[0]
    m = tau_bins(family)
    bx, by = bins(x, (-3, 3), m), bins(y, (-6, 6), m)
    assert get_statistic("tau").value(counts, family) == pytest.approx(
        tau_a(grid_of(bx, by, m)), abs=1e-15)
    # and on a subset, against the pairwise definition itself
    assert tau_a(grid_of(bx[:300], by[:300], m)) == pytest.approx(
        brute_force_tau(bx[:300], by[:300]), abs=1e-15)
    # MICr reads the same count vector unchanged
    plain = count_columns([x, y], CountSpec(("x", "y"), ((-3, 3), (-6, 6)), None,
                                            master_grid_family(40, 5))).counts[0]
    np.testing.assert_array_equal(counts[:plain.size], plain)
    assert get_statistic("micr").value(counts, family) == get_statistic("micr").value(
        plain, master_grid_family(40, 5))


def test_tau_grid_is_the_finest_common_equipartition():
    assert tau_bins(tau_family(200, 5)) == 70
    assert tau_bins(tau_family(40, 5)) == 20
    assert tau_bins(tau_family(4, 1)) == 2


@pytest.mark.parametrize("n", [3, 4])
def test_sensitivity_is_4_over_n_and_tight_exhaustively(n):
    """Every dataset of n rows on a 3 x 3 grid and every replacement of one row."""
    m = 3
    cells = [(a, b) for a in range(m) for b in range(m)]
    worst = 0.0
    for rows in itertools.combinations_with_replacement(range(len(cells)), n):
        grid = np.zeros((m, m), dtype=np.int64)
        for r in rows:
            grid[cells[r][1], cells[r][0]] += 1
        base = tau_a(grid)
        for r in set(rows):
            for new in range(len(cells)):
                other = grid.copy()
                other[cells[r][1], cells[r][0]] -= 1
                other[cells[new][1], cells[new][0]] += 1
                worst = max(worst, abs(tau_a(other) - base))
    assert worst == pytest.approx(4 / n)  # attained: the bound is tight
    assert worst <= tau_sensitivity(n)


@pytest.mark.parametrize("shape", ["linear", "monotone", "parabola", "independent"])
def test_binned_tau_is_close_to_the_continuous_tau(shape):
    """At B = 200 (a 70 x 70 grid) and 20,000 untied rows, tau-a of the binned data is
    within 2/m + 0.005 of scipy's tau-b of the raw data (ties in bins shrink it)."""
    gen = np.random.default_rng(11)
    x = gen.uniform(0, 1, 20_000)
    noise = gen.normal(0, 0.2, x.size)
    y = {"linear": x + noise, "monotone": np.exp(3 * x) / 20 + noise,
         "parabola": (x - 0.5) ** 2 * 4 + noise, "independent": noise}[shape]
    family = tau_family(200, 5)
    counts = count_columns([x, y], CountSpec(("x", "y"), ((0, 1), (-1, 2)), None,
                                             family)).counts[0]
    binned = get_statistic("tau").value(counts, family)
    exact = stats.kendalltau(x, y).statistic
    assert abs(binned - exact) <= 2 / tau_bins(family) + 0.005


def test_pairwise_tau_is_exact_at_huge_eps_and_matches_across_backends():
    gen = np.random.default_rng(5)
    x = gen.uniform(-1, 1, 4000)
    frame = pd.DataFrame({"x": x, "down": -x + 0.2 * gen.normal(size=4000),
                          "z": gen.normal(size=4000)})
    bounds = {"x": (-1, 1), "down": (-2, 2), "z": (-3, 3)}
    ledger = dm.InMemoryLedger(uncapped=True)
    local = frame.dpmic.pairwise(1e9, bounds=bounds, B=40, c=5, statistics=("mic", "tau_a"),
                                 ledger=ledger, bounds_check=None)
    spread = dd.from_pandas(frame, npartitions=3).dpmic.pairwise(
        1e9, bounds=bounds, B=40, c=5, statistics=("mic", "tau_a"), ledger=ledger,
        bounds_check=None)
    family = tau_family(40, 5)
    for (a, b), t in zip(local.pairs, local.tau_a):
        m = tau_bins(family)
        want = tau_a(grid_of(bins(frame[a].to_numpy(), bounds[a], m),
                             bins(frame[b].to_numpy(), bounds[b], m), m))
        assert t == pytest.approx(want, abs=1e-6)
    np.testing.assert_allclose(local.tau_a, spread.tau_a, atol=1e-6)
    assert local.tau_a[0] < -0.5  # signed: x and down move in opposite directions
    table = local.to_pandas()
    assert {"tau_a", "tau_a_ci95", "tau_a_noise_scale", "nonlinearity"} <= set(table.columns)
    np.testing.assert_allclose(table.nonlinearity, table.mic - table.tau_a ** 2)
    charges = ledger.charges()
    assert len(charges) == 2 and charges[0].mechanism == "micr-lap+tau-lap"


@pytest.mark.parametrize("delta", [0.0, 1e-7])
def test_the_budget_is_split_equally_and_charged_once(delta):
    frame = pd.DataFrame({"a": np.linspace(0, 1, 500), "b": np.linspace(1, 0, 500) ** 2})
    ledger = dm.InMemoryLedger()
    ledger.set_budget("d", dm.Budget(1.0, delta))
    result = frame.dpmic.pairwise(1.0, delta=delta, mechanism="micr-gauss" if delta else "auto",
                                  bounds={"a": (0, 1), "b": (0, 1)}, B=20, c=2,
                                  statistics=("mic", "tau_a"), ledger=ledger, dataset="d")
    (charge,) = ledger.charges("d")
    tau = result.companion("tau")
    if delta:
        assert result.privacy.release_cost.rho + tau.cost.rho <= charge.cost.rho
        assert tau.cost.rho == pytest.approx(charge.cost.rho / 2)
    else:
        assert result.privacy.release_cost.epsilon + tau.cost.epsilon <= 1.0
        assert tau.cost.epsilon == pytest.approx(0.5)
        assert tau.noise_scale == pytest.approx((tau_sensitivity(500) + 2**-40) / 0.5)
    assert -1 <= result.tau_a[0] <= 1 and "tau" in result.report()
    with pytest.warns(FutureWarning, match="older spelling of tau_a"):
        assert result.tau == result.tau_a  # the older spelling, the same values


@pytest.mark.parametrize("bad", [("tau",), ("mic", "mic"), ("mic", "rho"), (), 3])
def test_unknown_statistics_are_refused(bad):
    frame = pd.DataFrame({"a": [0.1, 0.2] * 10, "b": [0.3, 0.1] * 10})
    with pytest.raises(dm.InvalidParameterError, match="statistics must"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, statistics=bad)


def test_count_noise_cannot_carry_a_second_statistic():
    frame = pd.DataFrame({"a": [0.1, 0.2] * 10, "b": [0.3, 0.1] * 10})
    with pytest.raises(dm.InvalidParameterError, match="value noise"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, mechanism="micr-geom",
                             statistics=("mic", "tau_a"))


def test_the_default_grid_holds_taus_grid_at_every_row_count():
    """Under about 200 rows the default ``(B, c)`` (``c = 5``, ``B`` below 20) had
    no equipartition for Kendall's tau, so the package's own defaults refused
    ``statistics=("mic", "tau_a")`` (and its top_pairs). The default ``c`` steps
    down to the largest that holds tau's grid; a given ``c`` is never changed;
    the plan says the ``c`` the release uses."""
    import warnings

    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(4)  # test data only
    for n in (10, 50, 100, 200):
        x = gen.normal(size=n)
        frame = pd.DataFrame({"a": x, "b": x + gen.normal(0, 0.3, n), "c": gen.normal(size=n)})
        bounds = {k: (-4.0, 4.0) for k in "abc"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the noise at these sizes is large
            explained = frame.dpmic.plan(eps=1.0, bounds=bounds,
                                         statistics=("mic", "tau_a")).explain()
            table = frame.dpmic.pairwise(eps=1.0, bounds=bounds, statistics=("mic", "tau_a"),
                                         ledger=InMemoryLedger(uncapped=True)).to_pandas()
            top = frame.dpmic.top_pairs(1, eps=1.0, bounds=bounds, statistics=("mic", "tau_a"),
                                        ledger=InMemoryLedger(uncapped=True)).to_pandas()
        B, c = int(table["B"].iloc[0]), int(table["c"].iloc[0])
        assert tau_bins(master_grid_family(B, c)) >= 2
        assert c == 5 or tau_bins(master_grid_family(B, c + 1)) < 2  # the largest that holds it
        assert f"B = {B}, c = {c})" in str(explained)
        assert np.isfinite(table["tau_a"]).all() and np.isfinite(top["tau_a"]).all()
    with pytest.raises(InvalidParameterError, match="no common equipartition"):
        frame.dpmic.pairwise(eps=1.0, bounds=bounds, statistics=("mic", "tau_a"), B=10, c=5)


def test_tau_is_refused_when_every_pair_has_a_categorical_column():
    """Kendall's tau of a pair with a categorical column is NaN: with every pair
    such, its half of the budget bought nothing and doubled MIC's noise, charged
    without a word. Refused before the charge; a release with one pair of numbers
    among others still takes it."""
    from dpmic_dask.privacy.accounting import Budget, InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    a = gen.uniform(0, 1, 2000)
    frame = dd.from_pandas(pd.DataFrame({
        "a": a, "cat": np.where(a > 0.5, "x", np.where(a > 0.2, "y", "z")),
        "b": a + gen.uniform(0, 1, a.size)}), npartitions=2)
    ledger = InMemoryLedger({"d": Budget(10.0)})
    common = dict(eps=1.0, bounds={"a": (0, 1), "b": (0, 2)},
                  categories={"cat": ["x", "y", "z"]}, statistics=("mic", "tau_a"),
                  bounds_check=None, ledger=ledger, dataset="d")
    for release in (lambda: frame.dpmic.pairwise(columns=["a", "cat"], **common),
                    lambda: frame.dpmic.top_pairs(1, columns=["cat", "a"], **common)):
        with pytest.raises(InvalidParameterError, match="every pair has a categorical"):
            release()
    assert float(ledger.spent("d")) == 0.0
    table = frame.dpmic.pairwise(columns=["a", "cat", "b"], **common).to_pandas()
    assert table["tau_a"].notna().sum() == 1 and float(ledger.spent("d")) == 1.0


@pytest.mark.parametrize("how", ["pairwise", "top_pairs"])
def test_taus_share_is_split_over_the_pairs_whose_tau_is_defined(how):
    """Tau's half of the budget was split over every pair, those with a categorical
    column included (their tau is NaN whatever the data): its noise was wider than
    needed. Its noise now is that of the same release without the categorical
    column; MIC's still counts every pair."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(1)  # test data only
    n = 4000
    a = gen.uniform(0, 1, n)
    frame = pd.DataFrame({"a": a, "b": a + gen.uniform(0, 1, n), "d": gen.uniform(0, 1, n),
                          "cat": gen.choice(["x", "y"], n)})
    common = dict(bounds={"a": (0, 1), "b": (0, 2), "d": (0, 1)}, statistics=("mic", "tau_a"),
                  bounds_check=None, ledger=InMemoryLedger(uncapped=True), B=40, c=5)

    def release(columns, **more):
        if how == "pairwise":
            return frame.dpmic.pairwise(1.0, columns=columns, **common, **more)
        return frame.dpmic.top_pairs(6, 1.0, columns=columns, **common, **more)

    mixed = release(["a", "b", "d", "cat"], categories={"cat": ["x", "y"]})
    numbers = release(["a", "b", "d"])
    tau = mixed.companion("tau_a")
    assert sum(np.isfinite(tau.values)) == 3 and len(tau.values) == 6
    assert tau.noise_scale == pytest.approx(numbers.companion("tau_a").noise_scale)
    assert mixed.privacy.noise_scale > numbers.privacy.noise_scale  # MIC: 6 pairs, not 3
    assert "tau: epsilon 0.5 over 3 pairs (tau-lap)" in mixed.report()


def test_a_value_that_is_not_a_number_where_tau_is_defined_is_never_published_raw():
    """NaN-ness came from the exact values: a pair of numbers whose exact tau were
    NaN (data changed between a selection's two passes) was published as NaN,
    outside the pairs the noise was calibrated over. The public mask decides now;
    any other NaN is noised as 0."""
    from dpmic_dask.privacy.accounting import PrivacyCost
    from dpmic_dask.privacy.mechanisms.registry import value_mechanism
    from dpmic_dask.release.stages import companion
    from dpmic_dask.stats.statistics.registry import get_statistic

    mechanism = value_mechanism(PrivacyCost(1.0), get_statistic("tau"), "tau")
    plan = mechanism.calibrate(n=1000, pairs=2, B=40, c=5)
    out = companion(mechanism, [0.3, np.nan, np.nan], 3, plan,
                    undefined=np.array([False, False, True]))
    assert np.isfinite(out.values[0]) and np.isfinite(out.values[1])
    assert np.isnan(out.values[2])
