"""Released values carry noise of exactly the planned distribution and scale."""

import math

import numpy as np
import pytest
from scipy import stats

from dpmic_dask.privacy.mechanisms import noisy_counts, noisy_values, plan_noise
from tests.statistical.helpers import ALPHA, chi_square_pvalue, ks_pvalue, rerun_once

SAMPLES = 20_000


def _released_noise(plan, centre=0.5):
    values = noisy_values(np.full(SAMPLES, centre), plan)
    assert np.all((values >= 0) & (values <= 1))
    return values - centre


@pytest.mark.parametrize("n,pairs", [(2000, 1), (20000, 6)])
@rerun_once
def test_micr_lap_release_is_laplace_at_planned_scale(n, pairs):
    plan = plan_noise(mechanism="micr-lap", n=n, eps=1.0, delta=0.0, pairs=pairs, B=40, c=5)
    assert plan.noise_scale * math.log(20) == pytest.approx(plan.ci95)
    noise = _released_noise(plan)
    assert np.abs(noise).max() < 0.5  # no clamping at these scales
    b = plan.noise_scale
    assert ks_pvalue(noise, stats.laplace(scale=b).cdf) > ALPHA
    assert ks_pvalue(noise, stats.laplace(scale=0.7 * b).cdf) < ALPHA
    assert ks_pvalue(noise, stats.laplace(scale=1.3 * b).cdf) < ALPHA


@rerun_once
def test_micr_gauss_release_is_gaussian_at_planned_scale():
    plan = plan_noise(mechanism="micr-gauss", n=5000, eps=1.0, delta=1e-6, pairs=10, B=40, c=5)
    noise = _released_noise(plan)
    s = plan.noise_scale
    assert ks_pvalue(noise, stats.norm(scale=s).cdf) > ALPHA
    assert ks_pvalue(noise, stats.norm(scale=0.7 * s).cdf) < ALPHA
    assert ks_pvalue(noise, stats.norm(scale=1.3 * s).cdf) < ALPHA


def truncgeom_pmf(eps: float, n: int, f: int) -> np.ndarray:
    """Definition 4.5 of the DP-MIC paper (Ghosh et al. 2012)."""
    rho = math.exp(-eps)
    p = np.array([(1 - rho) / (1 + rho) * rho ** abs(f - i) for i in range(n + 1)])
    p[0] = rho ** f / (1 + rho)
    p[n] = rho ** (n - f) / (1 + rho)
    return p


@pytest.mark.parametrize("n,f", [(6, 0), (6, 2), (6, 6), (12, 5)])
@rerun_once
def test_truncgeom_frequencies_match_closed_form(n, f):
    # B=4: G=2 master grids, so each cell gets TruncGeom(eps / (2G)) = TruncGeom(eps / 4)
    eps = 2.0
    plan = plan_noise(mechanism="micr-geom", n=n, eps=eps, delta=0.0, pairs=1, B=4, c=1)
    assert plan.noise_scale == pytest.approx(4 / eps)
    draws = noisy_counts(np.full(SAMPLES, f), plan)
    expected = truncgeom_pmf(eps / 4, n, f)
    assert expected.sum() == pytest.approx(1.0)
    observed = np.bincount(draws, minlength=n + 1)
    assert stats.chisquare(observed, expected * SAMPLES).pvalue > ALPHA
    wrong = truncgeom_pmf(eps / 2, n, f)  # the published per-cell eps/2
    assert stats.chisquare(observed, wrong * SAMPLES).pvalue < ALPHA


@rerun_once
def test_geom_chi_square_helper_sees_scale():
    plan = plan_noise(mechanism="micr-geom", n=10**9, eps=1.0, delta=0.0, pairs=3, B=10, c=2)
    z = noisy_counts(np.full(SAMPLES, 10**8), plan) - 10**8
    from tests.statistical.helpers import discrete_laplace_pmf
    b = plan.noise_scale
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(b, s)) > ALPHA
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(0.7 * b, s)) < ALPHA
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(1.3 * b, s)) < ALPHA


@pytest.mark.parametrize("mechanism,delta", [("micr-lap", 0.0), ("micr-gauss", 1e-6)])
@rerun_once
def test_tau_release_has_the_planned_noise_and_signed_range(mechanism, delta):
    """Tau's share of a pairwise budget: noise at 4/n (+ lattice) over its epsilon (or
    its rho), clamped to [-1, 1] -- and the test sees 0.7x and 1.3x."""
    from dpmic_dask.privacy.mechanisms import build_mechanism, split_mechanism

    whole = build_mechanism(mechanism, eps=1.0, delta=delta, pairs=6)
    _, tau = split_mechanism(whole, ("mic", "tau"))
    plan = tau.calibrate(n=2000, pairs=6, B=40, c=5)
    assert (plan.low, plan.high) == (-1.0, 1.0)
    centre = -0.4
    values = noisy_values(np.full(SAMPLES, centre), plan)
    assert values.min() >= -1 and values.max() <= 1
    noise = values - centre
    s = plan.noise_scale
    if delta:
        assert s == pytest.approx((4 / 2000 + 2**-40) * math.sqrt(6 / (2 * tau.cost.rho)))
        law = stats.norm
    else:
        assert s == pytest.approx((4 / 2000 + 2**-40) * 6 / 0.5)
        law = stats.laplace
    assert ks_pvalue(noise, law(scale=s).cdf) > ALPHA
    assert ks_pvalue(noise, law(scale=0.7 * s).cdf) < ALPHA
    assert ks_pvalue(noise, law(scale=1.3 * s).cdf) < ALPHA
    extreme = noisy_values(np.array([-1.0, 1.0] * 500), plan)
    assert extreme.min() >= -1 and extreme.max() <= 1 and (extreme < 0).any()
