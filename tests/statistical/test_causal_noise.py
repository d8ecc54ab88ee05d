"""Causal discovery: exhaustive sensitivity checks of the test statistics, and the
noise of the edge decisions and released statistics at their true scale, through
the public function (each test fails at 0.7x and 1.3x the scale)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpmic_dask.causal import causal_graph, causal_graph_exact
from dpmic_dask.causal.citests import (
    concordance,
    g_sensitivity,
    g_statistic,
    tau_sensitivity,
    tau_threshold,
)
from dpmic_dask.causal.discover import check_request
from dpmic_dask.causal.skeleton import Margins
from dpmic_dask.causal.tables import LevelTables, TableKey, count_partition
from dpmic_dask.stats.sensitivity import f_gain

from .helpers import ALPHA, rerun_once


def multisets(cells: int, n: int):
    """Every table of ``n`` rows over ``cells`` cells, as count vectors."""
    for combo in itertools.combinations_with_replacement(range(cells), n):
        yield np.bincount(combo, minlength=cells)


def neighbour_changes(shape, n, value, across_only=False):
    """The largest ``|value(a) - value(b)|`` over all tables ``a`` of ``n`` rows of
    ``shape`` and all ``b`` with one row moved to another cell (replace-one; only
    to another stratum with ``across_only``)."""
    per_stratum = int(np.prod(shape[1:]))
    cells = int(np.prod(shape))
    tables = list(multisets(cells, n))
    values = {tuple(t): value(t.reshape(shape)) for t in tables}
    worst = 0.0
    for t in tables:
        here = values[tuple(t)]
        for src in np.flatnonzero(t):
            for dst in range(cells):
                if dst == src or (across_only and dst // per_stratum == src // per_stratum):
                    continue
                u = t.copy()
                u[src] -= 1
                u[dst] += 1
                worst = max(worst, abs(values[tuple(u)] - here))
    return worst


def tau_numerator(table):
    h = np.asarray(table, dtype=np.int64)
    s = concordance(h)
    n_z = h.sum(axis=(1, 2))
    return float((9.0 * s / (2.0 * n_z + 5.0)).sum())


def within_bound(m: int) -> float:
    """A row moving inside a stratum of ``m`` rows: ``18 (m - 1) / (2 m + 5) < 9``."""
    return 18.0 * (m - 1) / (2 * m + 5)


def leave_bound(m: int) -> float:
    """A row leaving a stratum (``m`` rows stay) or joining one of ``m`` rows:
    ``9 [m (m - 1) / ((2m + 5)(2m + 7)) + m / (2m + 7)] < 6.75``."""
    return 9.0 * (m * (m - 1) / ((2 * m + 5) * (2 * m + 7)) + m / (2 * m + 7))


@pytest.mark.slow
@pytest.mark.parametrize("shape, n", [((1, 3, 3), 7), ((2, 2, 3), 6), ((3, 2, 2), 6),
                                      ((2, 3, 2), 5)])
def test_tau_numerator_sensitivity_exhaustive(shape, n):
    """Every neighbouring pair of tiny tables: the weighted sum moves by at most the
    finite-``n`` bounds of the proof (attained within a stratum), which stay below
    9 and 13.5 -- the constants of :func:`tau_sensitivity` (times ``1.5 sqrt(n)``)."""
    constant = tau_sensitivity(n, conditional=shape[0] > 1) * 1.5 * math.sqrt(n)
    within = within_bound(n)
    worst = neighbour_changes(shape, n, tau_numerator)
    assert worst <= max(within, constant if shape[0] == 1 else 0.0) + 1e-9 or shape[0] > 1
    if shape[0] == 1:
        assert worst == pytest.approx(within) and within < constant
        return
    across = max(leave_bound(a) + leave_bound(b) for a in range(n) for b in range(n - a))
    worst_across = neighbour_changes(shape, n, tau_numerator, across_only=True)
    assert worst_across <= across + 1e-9 and across < constant
    assert worst <= max(within, across) + 1e-9
    assert worst_across >= 0.6 * across  # the bound is not vacuous


@pytest.mark.slow
@pytest.mark.parametrize("shape, n", [((1, 3, 3), 7), ((2, 2, 3), 6), ((3, 2, 2), 6)])
def test_g_sensitivity_exhaustive(shape, n):
    """``G`` moves by at most ``4 ln 2 f((n - 1) / 2)`` for every neighbouring pair,
    with or without strata, and the bound is nearly attained."""
    worst = neighbour_changes(shape, n, lambda t: float(g_statistic(t[None])[0]))
    assert worst <= g_sensitivity(n)
    assert worst >= 0.6 * g_sensitivity(n)
    assert g_sensitivity(n) == pytest.approx(4 * math.log(2) * f_gain((n - 1) / 2), rel=1e-9)


# ---------------------------------------------------------------- decision noise


def dependent_frame(n, seed):
    """Twelve columns, each pair with a different strength of dependence."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(n)
    cols = {f"c{j}": 0.04 * j * base + rng.standard_normal(n) for j in range(12)}
    return pd.DataFrame(cols)


def level0_margins(frame, bounds):
    request = check_request(frame.dtypes, columns=None, alpha=0.05, max_condition_size=0,
                            bounds=bounds, categories=None, bins=5, test="tau")
    p = len(request.codings)
    keys = tuple(TableKey(i, j, ()) for i in range(p) for j in range(i + 1, p))
    layout = LevelTables(request.codings, keys)
    counts = count_partition(frame, layout).counts
    read = Margins(layout, counts, len(frame), "tau", 0.05)
    return np.array([read.margin[k] for k in keys]), keys


def removal_probability(margins, scale, zcdp):
    """P(the edge is removed): its margin plus Laplace (pure) or Gaussian (zCDP)
    noise of ``scale`` is negative."""
    if zcdp:
        return stats.norm.cdf(-margins / scale)
    return stats.laplace.cdf(-margins, scale=scale)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_decision_noise_at_true_scale(delta):
    """Level 0 only: each of the 66 edges is removed with the probability its exact
    margin and the noise scale give. The scale is derived here from first
    principles (``P`` noisy margins of sensitivity ``Delta = 6 / sqrt(n)``:
    Laplace ``P Delta / eps``, or Gaussian ``sqrt(P) Delta / sqrt(2 rho)``); the
    observed removals fit it (a chi-square over the edges) and not 0.7x or 1.3x
    of it. 1,000 releases (about 4 s): at 200, the 1.3x fit's p-value ranged from
    1e-12 to 1.7e-4 and once missed the 1e-4 level; at 1,000 it is below 1e-55."""
    from dpmic_dask.privacy.conversion import eps_from_rho, rho_from_eps_delta

    n, runs = 3000, 1000
    frame = dependent_frame(n, seed=5)
    bounds = {c: (-4.0, 4.0) for c in frame}
    margins, keys = level0_margins(frame, bounds)
    pairs = len(keys)
    sensitivity = 6.0 / math.sqrt(n)
    # a budget that puts the scale near 2, where the margins are informative
    if delta:
        eps = eps_from_rho(pairs * sensitivity ** 2 / 8.0, delta)
        scale = math.sqrt(pairs) * sensitivity / math.sqrt(2 * rho_from_eps_delta(eps, delta))
    else:
        eps = pairs * sensitivity / 2.0
        scale = pairs * sensitivity / eps
    removed = np.zeros(pairs)
    index = {(k.x, k.y): t for t, k in enumerate(keys)}
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, test="tau", bounds=bounds, max_condition_size=0)
        for pair in g.separating_pairs:
            removed[index[pair]] += 1
    # the margins must spread around the scale for the test to have power
    assert np.mean(np.abs(margins) < 3 * scale) > 0.5

    def fit(factor):
        """Chi-square p-value of the per-edge removal counts (one binomial each)."""
        p = np.clip(removal_probability(margins, factor * scale, bool(delta)), 1e-12,
                    1 - 1e-12)
        chi = ((removed - runs * p) ** 2 / (runs * p * (1 - p))).sum()
        return stats.chi2.sf(chi, pairs)

    assert fit(1.0) > ALPHA
    assert fit(0.7) < ALPHA
    assert fit(1.3) < ALPHA


@pytest.mark.slow
@rerun_once
def test_released_statistic_noise_at_true_scale():
    """The released statistic of each kept edge is its exact ``|Z|`` plus the
    Laplace noise of its decision, scale ``P Delta / eps`` (KS fit at the scale,
    not at 0.7x or 1.3x of it). Strongly dependent columns keep every edge. 400
    releases (under 2 s): at 80, the 1.3x fit's p-value ranged from 2.5e-10 to
    2.2e-4 and once missed the 1e-4 level in CI; at 300 it is below 1e-16."""
    n, eps, runs = 4000, 4.0, 400
    rng = np.random.default_rng(7)
    base = rng.standard_normal(n)
    frame = pd.DataFrame({f"c{j}": base + 0.5 * rng.standard_normal(n) for j in range(8)})
    bounds = {c: (-4.0, 4.0) for c in frame}
    exact = causal_graph_exact(frame, test="tau", bounds=bounds, max_condition_size=0)
    truth = exact.statistic
    pairs = 28
    scale = pairs * (6.0 / math.sqrt(n)) / eps
    assert min(truth.values()) > 10 * scale + tau_threshold(0.05)
    residuals = []
    for _ in range(runs):
        g = causal_graph(frame, eps, test="tau", bounds=bounds, max_condition_size=0)
        residuals += [g.statistic[e] - truth[e] for e in g.statistic]
    residuals = np.array(residuals)
    assert len(residuals) == runs * pairs
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        p = stats.kstest(residuals, stats.laplace(scale=factor * scale).cdf).pvalue
        assert bool(p > ALPHA) is fits, (factor, p)


def test_a_large_draw_never_publishes_the_exact_margin():
    """Where the noise is large the published statistic sits at the public clamp
    ``offset +- 2 high`` (one value for every edge), never at ``exact + constant``:
    clipping the noise instead of the noisy sum published ``u + 3 high``, which
    gives the exact margin ``u`` away."""
    from dpmic_dask.causal.discover import _margin_range

    rng = np.random.default_rng(11)
    n, eps = 100, 0.3
    frame = pd.DataFrame({f"c{j}": rng.uniform(0, 1, n) for j in range(10)})
    bounds = {c: (0.0, 1.0) for c in frame}
    request = check_request(frame.dtypes, columns=None, alpha=0.05, max_condition_size=0,
                            bounds=bounds, categories=None, bins=5, test="tau")
    high = _margin_range(request, n)
    offset = tau_threshold(0.05)
    published = []
    for _ in range(5):
        g = causal_graph(frame, eps, test="tau", bounds=bounds, max_condition_size=0)
        published += [float(v) for v in g.statistic.values()]
    margins = np.array(published) - offset
    assert np.all(np.abs(margins) <= 2 * high * (1 + 1e-12))
    at_clamp = margins[margins >= 2 * high * (1 - 1e-12)]
    assert at_clamp.size > 10  # the noise is large here: many edges reach the clamp
    assert np.unique(np.round(at_clamp, 9)).size == 1


def tau_pair(n: int, tau: float, seed: int) -> pd.DataFrame:
    """A Gaussian pair whose Kendall tau is ``tau`` (``r = sin(pi tau / 2)``)."""
    r = math.sin(math.pi * tau / 2.0)
    gen = np.random.default_rng(seed)
    x = gen.standard_normal(n)
    return pd.DataFrame({"x": x, "y": r * x + math.sqrt(1.0 - r * r) * gen.standard_normal(n)})


@pytest.mark.slow
@rerun_once
def test_the_reported_smallest_tau_is_seen_about_nine_times_in_ten():
    """The tau test's report (pure DP, eps 0.05, n = 5000: decision noise of Laplace
    scale 1.7 in |Z| units, so the noise, not only the sampling, sets it): over 250
    releases of fresh rows through ``causal_graph``, a pair of the reported |tau|
    keeps its edge in 79-92% of them (0.9 for untied columns; 16 bins tie some
    pairs: 85% when written), 0.7 times it in fewer than 79% (71%), 1.5 times it in
    more than 92%."""
    import warnings

    n, eps, runs = 5000, 0.05, 250
    bounds = {"x": (-5.0, 5.0), "y": (-5.0, 5.0)}
    common = {"bounds": bounds, "test": "tau", "bins": 16, "max_condition_size": 0}
    g = causal_graph(tau_pair(n, 0.0, 0), eps, **common)
    tau = g.report().smallest_visible
    exact = (1.96 + 1.2816) / (1.5 * math.sqrt(n))  # without noise: 0.031
    assert tau > 1.3 * exact and f"|Kendall tau| (untied columns) {tau:.3g}" in str(g.report())

    def kept_share(t: float, first: int) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sum(frozenset("xy") in causal_graph(tau_pair(n, t, s), eps, **common).skeleton
                       for s in range(first, first + runs)) / runs

    assert 0.79 <= kept_share(tau, 1000) <= 0.92
    assert kept_share(0.7 * tau, 2000) < 0.79
    assert kept_share(1.5 * tau, 3000) > 0.92
