"""The copula release's noise at its true scale, through ``causal_graph``: the
released Kendall tau values are the exact ones plus Gaussian (zCDP) or Laplace
(pure DP) noise of the scale derived from first principles (KS fit at the scale,
not at 0.7x or 1.3x of it), and the noisy test's null is calibrated."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpmic_dask.causal import causal_graph, causal_graph_exact
from dpmic_dask.privacy.conversion import rho_from_eps_delta

from .helpers import ALPHA, rerun_once


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


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_released_tau_noise_at_true_scale(delta):
    n, eps, runs, p = 2000, 2.0, 300, 5
    frame = frame_of(n, 0)
    exact = causal_graph_exact(frame, bounds=BOUNDS).released_tau.to_numpy()
    iu = np.triu_indices(p, 1)
    if delta:
        scale = (2.0 * p / n) / math.sqrt(2.0 * rho_from_eps_delta(eps, delta))
        law = stats.norm
    else:
        scale = (p * p / n) / eps
        law = stats.laplace
    residuals = []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, bounds=BOUNDS, max_condition_size=1)
        assert g.report().noise_scale == pytest.approx(scale, rel=1e-6)
        residuals.append(g.released_tau.to_numpy()[iu] - exact[iu])
    residuals = np.concatenate(residuals)
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        pvalue = stats.kstest(residuals, law(scale=factor * scale).cdf).pvalue
        assert bool(pvalue > ALPHA) is fits, (factor, pvalue)


@pytest.mark.slow
def test_noisy_null_is_calibrated():
    """x and z given y (a chain, z transformed): the noisy test's |z| has about
    unit variance when the noise is as large as the sampling error, and the test
    without the noise's variance would be far too liberal."""
    from dpmic_dask.causal.copula import CorrelationTests, copula_correlation

    # 800 runs: the mean of z^2 (heavy-tailed) has a standard error of about 0.05
    # there (0.1 at 200 runs, where the band's lower end was about 2.5 errors away
    # and one CI run in a hundred or so failed it by chance)
    n, runs = 4000, 800
    stat_with, stat_without = [], []
    for seed in range(runs):
        frame = frame_of(n, 100 + seed)
        g = causal_graph(frame, 0.5, delta=1e-6, bounds=BOUNDS, max_condition_size=0)
        tau = g.released_tau.to_numpy()
        r = copula_correlation(tau)
        noise_var = g.report().noise_scale ** 2
        stat_with.append(CorrelationTests(r, n, 0.05, "copula", tau=tau,
                                          noise_var=noise_var).zscore(0, 2, (1,)))
        stat_without.append(CorrelationTests(r, n, 0.05, "copula", tau=tau).zscore(0, 2, (1,)))
    with_noise = np.mean(np.square(stat_with))
    assert 0.75 < with_noise < 1.3, with_noise
    assert np.mean(np.square(stat_without)) > 1.5 * with_noise


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_per_unit_tau_noise_at_true_scale(delta):
    """Per unit (k = 2, every unit holding two rows, so all are kept): each run's
    released values minus the exact ones, divided by the scale derived here from
    the run's public n0 -- k (2 p + sqrt(P)) / n0 over sqrt(2 rho) (zCDP) or
    k (p^2 + P) / n0 over eps (pure), with 95% of the budget after the row count --
    follow the unit law, and not at 0.7x or 1.3x of it."""
    n, eps, runs, p, k = 2000, 2.0, 300, 5, 2
    frame = frame_of(n, 0).assign(who=np.repeat(np.arange(n // k), k))
    exact = causal_graph_exact(frame, bounds=BOUNDS, columns=list(BOUNDS)).released_tau
    iu = np.triu_indices(p, 1)
    pairs = p * (p - 1) // 2
    if delta:
        law = stats.norm
        per_row = (2.0 * p + math.sqrt(pairs)) / math.sqrt(2.0 * 0.95 * rho_from_eps_delta(
            eps, delta))
    else:
        law = stats.laplace
        per_row = (p * p + pairs) / (0.95 * eps)
    standardised = []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, bounds=BOUNDS, max_condition_size=1,
                         privacy_unit="who", max_rows_per_unit=k)
        n0 = g.report().rows
        assert n0 <= g.report().rows_noisy
        scale = k * per_row / n0
        assert g.report().noise_scale == pytest.approx(scale, rel=1e-6)
        expected = exact.to_numpy()[iu] * min(1.0, n / n0)
        standardised.append((g.released_tau.to_numpy()[iu] - expected) / scale)
    standardised = np.concatenate(standardised)
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        pvalue = stats.kstest(standardised, law(scale=factor).cdf).pvalue
        assert bool(pvalue > ALPHA) is fits, (factor, pvalue)
