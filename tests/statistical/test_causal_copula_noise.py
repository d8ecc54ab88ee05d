"""The copula release's noise at its true scale, through ``causal_graph``: the
released Kendall tau values (bins at released quantiles) and the released sums
of signs (at released medians, per row and per unit) are the exact ones plus Gaussian
(zCDP) or Laplace (pure DP) noise of the scale derived from first principles
(fit at the scale, not at 0.7x or 1.3x of it), the medians' picks follow
report-noisy-max at its scale, and the noisy test's null is calibrated."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpmic_dask.causal import causal_graph
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from tests.unit.test_causal_copula import exact_tau_on

from .helpers import (
    ALPHA,
    chi_square_pvalue,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    rerun_once,
)


def frame_of(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = 0.8 * x + 0.6 * rng.standard_normal(n)
    z = 0.8 * y + 0.6 * rng.standard_normal(n)
    w = rng.standard_normal(n)
    v = 0.5 * w + 0.5 * z + 0.7 * rng.standard_normal(n)
    return pd.DataFrame({"x": x, "y": y, "z": np.exp(z), "w": w, "v": v})


BOUNDS = {"x": (-5.0, 5.0), "y": (-5.0, 5.0), "z": (0.0, 150.0), "w": (-5.0, 5.0),
          "v": (-5.0, 5.0)}


def exact_sign_sums(frame, bounds, cuts) -> np.ndarray:
    """The exact sums ``(M, C)`` of ``frame``'s columns at the released ``cuts``."""
    from dpmic_dask.causal.copulabins import fine_margin_codings
    from dpmic_dask.causal.quadrant import sign_partition
    from dpmic_dask.causal.tables import ColumnCoding

    names = list(bounds)
    codings = fine_margin_codings([ColumnCoding(c, 5, bounds=bounds[c]) for c in names])
    return sign_partition(frame, codings, np.array([cuts[c] for c in names])).vector()


def released_vector(g) -> np.ndarray:
    """The released sums as one vector ``(M, C)`` (diagonal, then upper triangle)."""
    s = g.released_signs.to_numpy()
    p = s.shape[0]
    return np.concatenate([np.diag(s), s[np.triu_indices(p, 1)]])


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_released_sign_sums_noise_at_true_scale(delta):
    """Too few rows for bins at released quantiles: the released sums of signs are
    the exact ones at the released cuts plus discrete Laplace noise of scale
    floor((p + 1)^2 / 2) / (0.9 eps) (pure DP) or discrete Gaussian noise of sigma
    sqrt(2 floor((p + 1)^2 / 2)) / sqrt(2 * 0.9 rho) (zCDP); not at 0.7x or 1.3x."""
    # 120 runs (1,800 sums): at 150 the fits at 0.7x and 1.3x had p-values of 1e-13
    # and below against the 1e-4 threshold
    n, eps, runs, p = 2000, 2.0, 120, 5
    frame = frame_of(n, 0)
    l1 = (p + 1) ** 2 // 2
    if delta:
        scale = math.sqrt(2.0 * l1) / math.sqrt(2.0 * 0.9 * rho_from_eps_delta(eps, delta))
        pmf = discrete_gaussian_pmf
    else:
        scale = l1 / (0.9 * eps)
        pmf = discrete_laplace_pmf
    residuals = []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, bounds=BOUNDS, max_condition_size=1)
        assert g.report().statistic == "signs" and g.released_tau is None
        assert g.report().parts[1][2] == pytest.approx(scale, rel=1e-6)
        assert g.report().noise_scale == pytest.approx(scale / n, rel=1e-6)
        residuals.append(released_vector(g) - exact_sign_sums(frame, BOUNDS, g.released_cuts))
    residuals = np.concatenate(residuals)
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        pvalue = chi_square_pvalue(residuals, lambda v: pmf(factor * scale, v))
        assert bool(pvalue > ALPHA) is fits, (factor, pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_median_picks_follow_report_noisy_max_at_true_scale(delta):
    """One row in each of the 2048 fine bins of every column: the score of cut k is
    -|k - 1024|. The released cuts follow report-noisy-max with exponential noise
    (pure DP) or Gumbel noise (zCDP) at the reported scale -- compared with that
    law simulated here -- and not at 0.7x or 1.3x of it."""
    from dpmic_dask.causal.copulabins import MARGIN_BINS

    p, eps, runs = 3, 2.0, 300
    centers = (np.arange(MARGIN_BINS) + 0.5) / MARGIN_BINS
    frame = pd.DataFrame({f"c{j}": np.roll(centers, 7 * j) for j in range(p)})
    bounds = {c: (0.0, 1.0) for c in frame}
    picks, scale = [], None
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, bounds=bounds, max_condition_size=0)
        assert g.report().statistic == "signs"
        scale = g.report().parts[0][2]
        picks += list(g.released_cuts.values())
    picks = np.asarray(picks) - MARGIN_BINS // 2
    scores = -np.abs(np.arange(MARGIN_BINS + 1) - MARGIN_BINS // 2).astype(float)
    sim_rng = np.random.default_rng(12345)  # the law simulated for comparison only

    def simulated(s, size=20_000):
        noise = (sim_rng.exponential(s, (size, scores.size)) if not delta
                 else sim_rng.gumbel(0.0, s, (size, scores.size)))
        return np.argmax(scores + noise, axis=1) - MARGIN_BINS // 2

    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        pvalue = stats.ks_2samp(np.abs(picks), np.abs(simulated(factor * scale))).pvalue
        assert bool(pvalue > ALPHA) is fits, (factor, pvalue, scale)


@pytest.mark.slow
@rerun_once  # mean z^2 over 800 noisy runs: sd about 0.07 around 1, band 0.75..1.3
def test_noisy_null_is_calibrated():
    """x and z given y (a chain, z transformed), signs at released medians: the
    noisy test's |z| has about unit variance when the noise is as large as the
    sampling error, and the test without the noise's variance would be far too
    liberal."""
    from dpmic_dask.causal.copula import CorrelationTests, nearest_correlation
    from dpmic_dask.causal.quadrant import concordances, tetrachoric

    # 800 runs: the mean of z^2 (heavy-tailed) has a standard error of about 0.05
    # there (0.1 at 200 runs, where the band's lower end was about 2.5 errors away
    # and one CI run in a hundred or so failed it by chance)
    n, runs = 4000, 800
    stat_with, stat_without = [], []
    for seed in range(runs):
        frame = frame_of(n, 100 + seed)
        g = causal_graph(frame, 0.5, delta=1e-6, bounds=BOUNDS, max_condition_size=0)
        assert g.report().statistic == "signs"
        released = released_vector(g)
        r, slope, _, cuts = tetrachoric(released, 5, n)
        r, beta = nearest_correlation(r), concordances(released, 5, n)
        noise_var = g.report().noise_scale ** 2
        stat_with.append(CorrelationTests(r, n, 0.05, "copula", noise_var=noise_var,
                                          slope=slope, beta=beta, cuts=cuts).zscore(0, 2, (1,)))
        stat_without.append(CorrelationTests(r, n, 0.05, "copula", slope=slope,
                                             beta=beta, cuts=cuts).zscore(0, 2, (1,)))
    with_noise = np.mean(np.square(stat_with))
    assert 0.75 < with_noise < 1.3, with_noise
    assert np.mean(np.square(stat_without)) > 1.5 * with_noise


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_per_unit_sign_sums_noise_at_true_scale(delta):
    """Per unit (k = 2, every unit holding two rows, so all are kept): the released
    sums minus the exact ones at the released cuts follow discrete Laplace noise
    of scale k (p + P) / eps_s (pure) or discrete Gaussian noise of sigma
    k sqrt(p + P) / sqrt(2 rho_s) (zCDP), the sums' part being 90% of the 95%
    left after the row count; not at 0.7x or 1.3x of it."""
    n, eps, runs, p, k = 2000, 2.0, 120, 5, 2
    frame = frame_of(n, 0).assign(who=np.repeat(np.arange(n // k), k))
    entries = p + p * (p - 1) // 2
    if delta:
        scale = k * math.sqrt(entries) / math.sqrt(
            2.0 * 0.9 * 0.95 * rho_from_eps_delta(eps, delta))
        pmf = discrete_gaussian_pmf
    else:
        scale = k * entries / (0.9 * 0.95 * eps)
        pmf = discrete_laplace_pmf
    residuals = []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, bounds=BOUNDS, max_condition_size=1,
                         privacy_unit="who", max_rows_per_unit=k)
        assert g.report().statistic == "signs"
        assert g.report().parts[2][2] == pytest.approx(scale, rel=1e-6)
        residuals.append(released_vector(g) - exact_sign_sums(frame, BOUNDS, g.released_cuts))
    residuals = np.concatenate(residuals)
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        pvalue = chi_square_pvalue(residuals, lambda v: pmf(factor * scale, v))
        assert bool(pvalue > ALPHA) is fits, (factor, pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_bins_at_released_quantiles_noise_at_true_scale(delta):
    """Enough rows for bins at noisy quantiles: the released fine histograms are the
    exact ones plus discrete Gaussian noise of sigma = sqrt(2 p) / sqrt(2 rho_m)
    (zCDP, 10% of rho) or discrete Laplace noise of scale 2 p / eps_m (pure DP, 10%
    of eps), and the released tau values the exact ones on the released bins plus
    Gaussian noise of (2 p / n) / sqrt(2 rho_tau) or Laplace noise of
    (p^2 / n) / eps_tau (90%); both fit at the scale and not at 0.7x or 1.3x of it.
    Ten columns (two copies of the five): 45 tau values and 20,480 counts a run."""
    from dpmic_dask.causal.copulabins import MARGIN_BINS

    n, runs, p = 20_000, 50, 10
    frame = pd.concat([frame_of(n, 0), frame_of(n, 1).add_suffix("2")], axis=1)
    bounds = {**BOUNDS, **{f"{c}2": b for c, b in BOUNDS.items()}}
    if delta:
        eps = 2.0
        rho = rho_from_eps_delta(eps, delta)
        m_scale = math.sqrt(2 * p) / math.sqrt(2 * 0.1 * rho)
        t_scale = (2.0 * p / n) / math.sqrt(2 * 0.9 * rho)
        m_pmf, t_law = discrete_gaussian_pmf, stats.norm
    else:  # Laplace's spread needs a larger eps at these rows
        eps = 8.0
        m_scale = 2.0 * p / (0.1 * eps)
        t_scale = (p * p / n) / (0.9 * eps)
        m_pmf, t_law = discrete_laplace_pmf, stats.laplace
    exact_margins = {}
    for c, (lo, hi) in bounds.items():
        u = np.clip((frame[c].to_numpy() - lo) / (hi - lo), 0.0, 1.0)
        q = np.minimum(np.floor(u * 2.0**32), 2.0**32 - 1).astype(np.int64)
        exact_margins[c] = np.bincount((q * MARGIN_BINS) >> 32, minlength=MARGIN_BINS)
    iu = np.triu_indices(p, 1)
    margin_noise, tau_noise = [], []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, bounds=bounds, max_condition_size=1)
        assert g.released_bins is not None and g.report().passes == 2
        assert g.report().parts[0][2] == pytest.approx(m_scale, rel=1e-6)
        assert g.report().noise_scale == pytest.approx(t_scale, rel=1e-6)
        margin_noise += [g.released_margins[c] - exact_margins[c] for c in bounds]
        exact = exact_tau_on(frame, bounds, g.released_bins)
        tau_noise.append(g.released_tau.to_numpy()[iu] - exact[iu])
    z = np.concatenate(margin_noise)
    t = np.concatenate(tau_noise)
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        fit_m = chi_square_pvalue(z, lambda v: m_pmf(factor * m_scale, v))
        fit_t = stats.kstest(t, t_law(scale=factor * t_scale).cdf).pvalue
        assert bool(fit_m > ALPHA / 2) is fits and bool(fit_t > ALPHA / 2) is fits, (
            factor, fit_m, fit_t)
