"""Private selection at the true noise scale.

* Noisy top-k, pure DP (OpenDP, exponential noise): on the neighbouring score
  vectors that make it tight (all scores equal vs one moved up by Delta and all
  others down by Delta), the probability of picking the moved one grows by at
  most e^eps; with half the noise it grows well beyond.
* Noisy top-k, zCDP (OpenDP, Gumbel noise): picks follow the exponential
  mechanism, P(i) proportional to exp(s_i / scale), at the calibrated scale and
  not at 0.7x or 1.3x of it.
* Sparse vector: P(a pair is reported) is the tail of the difference of the
  query and threshold noises (Laplace scales 2 c Delta_u / eps_2 and
  Delta_u / eps_1 lattice units) at the calibrated scales, and not at 0.7x,
  1.3x or half of them. A fast test sampler with the same distribution as the
  exact one stands in for the CSPRNG so that thousands of scans run in seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpmic_dask.privacy.costs import PURE_DP, ZCDP
from dpmic_dask.privacy.mechanisms.base import LATTICE
from dpmic_dask.privacy.selection import (
    AboveThreshold,
    NoisyTopK,
    _top_k_measurement,
    svt_split,
    top_k_scale,
)

from .helpers import ALPHA, rerun_once

SENSITIVITY = 0.01


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def pick_rate(measurement, scores, trials) -> int:
    return sum(measurement(scores)[0] == 0 for _ in range(trials))


@pytest.mark.parametrize("mult, within", [(1.0, True), (0.5, False)])
@rerun_once
def test_pure_top_k_stays_within_e_eps_on_tight_neighbours(mult, within):
    eps, m, trials = 1.0, 50, 6000
    scale = top_k_scale(1, SENSITIVITY, eps, PURE_DP)
    assert _top_k_measurement(1, scale, PURE_DP).map(SENSITIVITY) <= eps
    measurement = _top_k_measurement(1, scale * mult, PURE_DP)
    here = [0.0] * m
    there = [SENSITIVITY] + [-SENSITIVITY] * (m - 1)  # every score moved by Delta
    a, b = pick_rate(measurement, here, trials), pick_rate(measurement, there, trials)
    a_hi = clopper_pearson(a, trials, ALPHA)[1]
    b_lo = clopper_pearson(b, trials, ALPHA)[0]
    a_lo = clopper_pearson(a, trials, ALPHA)[0]
    b_hi = clopper_pearson(b, trials, ALPHA)[1]
    if within:  # not significantly above e^eps
        assert b_lo / a_hi <= math.exp(eps)
        assert b_hi / a_lo >= 1.5  # and the test has something to see
    else:
        assert b_lo / a_hi > math.exp(eps)


@pytest.mark.parametrize("mult, fits", [(1.0, True), (0.7, False), (1.3, False)])
@rerun_once
def test_zcdp_top_k_is_the_exponential_mechanism_at_the_calibrated_scale(mult, fits):
    rho, trials = 0.05, 5000
    scale = top_k_scale(1, SENSITIVITY, rho, ZCDP)
    assert _top_k_measurement(1, scale, ZCDP).map(SENSITIVITY) <= rho
    scores = scale * np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    measurement = _top_k_measurement(1, scale * mult, ZCDP)
    picks = np.bincount([measurement(list(scores))[0] for _ in range(trials)], minlength=5)
    p = np.exp(scores / scale)
    p /= p.sum()
    pvalue = stats.chisquare(picks, p * trials).pvalue
    assert (pvalue > ALPHA) == fits


def test_top_k_selection_returns_k_distinct_pairs_in_order():
    rule = NoisyTopK(3, 50.0)  # little noise
    scores = np.array([0.1, 0.9, 0.2, 0.8, 0.7, 0.0])
    assert rule.select(6, scores, SENSITIVITY) == (1, 3, 4)
    assert sorted(NoisyTopK(10, 50.0).select(6, scores, SENSITIVITY)) == list(range(6))


class FastLaplace:
    """Discrete Laplace as the difference of two geometric draws (test use only: it
    has the distribution of the exact sampler, not its security)."""

    secure = False

    def __init__(self, seed):
        self.gen = np.random.default_rng(seed)  # test noise, never a release

    def discrete_laplace(self, scale, size):
        p = -math.expm1(-1.0 / scale)
        return self.gen.geometric(p, size) - self.gen.geometric(p, size)


def laplace_difference_tail(d: float, b1: float, b2: float) -> float:
    """P(X - Y >= d) for independent Laplace X (scale b2), Y (scale b1), d >= 0."""
    return (b2 * b2 * math.exp(-d / b2) - b1 * b1 * math.exp(-d / b1)) / (2 * (b2 * b2 - b1 * b1))


@pytest.mark.parametrize("mult, fits", [(1.0, True), (0.7, False), (1.3, False), (0.5, False)])
@rerun_once
def test_sparse_vector_noise_is_at_the_calibrated_scale(monkeypatch, mult, fits):
    eps, max_pairs, trials = 1.0, 3, 3000
    monkeypatch.setattr("dpmic_dask.privacy.noise.active_sampler", lambda: sampler)
    sampler = FastLaplace(int(mult * 100))
    declared = AboveThreshold(0.5, max_pairs, eps)
    units, b1, b2 = declared.noise_units(SENSITIVITY)
    eps1, eps2 = svt_split(eps, max_pairs)
    assert b1 == pytest.approx(units / eps1) and b2 == pytest.approx(2 * max_pairs * units / eps2)
    assert eps1 + eps2 <= eps
    # the variant draws noise mult times the declared scale (same eps split)
    variant = AboveThreshold(0.5, max_pairs, eps / mult)
    observed, expected = [], []
    for gap in (0.0, 0.5, 1.0, 2.0):  # score below the threshold, in query scales
        score = 0.5 - gap * b2 * LATTICE
        hits = sum(bool(variant.select(1, np.array([score]), SENSITIVITY))
                   for _ in range(trials))
        p = laplace_difference_tail(gap * b2, b1, b2)
        observed += [hits, trials - hits]
        expected += [p * trials, (1 - p) * trials]
    pvalue = stats.chisquare(observed, expected, ddof=0).pvalue
    assert (pvalue > ALPHA) == fits


def test_sparse_vector_stops_after_max_pairs_in_public_order(monkeypatch):
    monkeypatch.setattr("dpmic_dask.privacy.noise.active_sampler", lambda: FastLaplace(3))
    rule = AboveThreshold(0.5, 2, 1e6)  # noise far below the gaps
    scores = np.array([0.9, 0.1, 0.8, 0.95, 0.7])
    assert rule.select(5, scores, SENSITIVITY) == (0, 2)
    assert AboveThreshold(0.5, 10, 1e6).select(5, scores, SENSITIVITY) == (0, 2, 3, 4)
    assert AboveThreshold(0.99, 10, 1e6).select(5, scores, SENSITIVITY) == ()


class Saturated:
    """A sampler whose draws sit at the int64 extremes (as OpenDP's do for huge scales)."""

    secure = True

    def __init__(self, threshold_draw, query_draw):
        self.draws = [threshold_draw, query_draw]

    def discrete_laplace(self, scale, size):
        return np.full(size, self.draws.pop(0), dtype=np.int64)


def test_sparse_vector_compares_exactly_when_draws_saturate(monkeypatch):
    top, bottom = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    scores = np.array([0.0, 0.5, 1.0])
    for threshold_draw, query_draw, want in [(top, top, (1, 2)), (top, 0, ()),
                                             (bottom, 0, (0, 1)), (0, bottom, ())]:
        sampler = Saturated(threshold_draw, query_draw)  # one per select: draws in turn
        monkeypatch.setattr("dpmic_dask.privacy.noise.active_sampler",
                            lambda s=sampler: s)
        assert AboveThreshold(0.5, 2, 1.0).select(3, scores, SENSITIVITY) == want
