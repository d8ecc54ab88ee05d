"""MICe-Lap on tied data: the published sensitivity holds for distinct values only.

The construction (an audit's): n = 1000 rows on three levels per axis. Replacing
one row moves a whole tie run across an equal-mass cut, and the tie-preserving
(minepy) MICe jumps from 0.88 to 0.19, seven times the claimed sensitivity.
The private mechanism breaks ties with secret per-row keys; these tests check
that its released values stay within the e^eps privacy bound on this pair.
"""

import math

import numpy as np
import pytest
from scipy import stats

import dpmic_dask as dm
from dpmic_dask.privacy.noise import OpenDPSampler
from dpmic_dask.stats.mice import distinct_ranks, mice_on_distinct_ranks, mice_statistic
from dpmic_dask.stats.sensitivity import mice_sensitivity

N = 1000
EPS = 1.0
RELEASES = 3000
BOUNDS = dict(x_bounds=(0, 1), y_bounds=(0, 1))


def tied_neighbours(n=N):
    """Three levels per axis: 30% of rows at (0, 0); 40% at x = 0.5 and 30% at x = 1
    with y in {0.5, 1} split so that x and y are nearly independent there. The
    neighbour replaces row 0 by (0.5, 0.5)."""
    a, b = round(0.3 * n), round(0.4 * n)
    c = n - a - b
    b_low, c_low = round(b * b / (b + c)), round(c * b / (b + c))
    x = np.r_[np.zeros(a), np.full(b, 0.5), np.full(c, 1.0)]
    y = np.r_[np.zeros(a), np.full(b_low, 0.5), np.full(b - b_low, 1.0),
              np.full(c_low, 0.5), np.full(c - c_low, 1.0)]
    x2, y2 = x.copy(), y.copy()
    x2[0], y2[0] = 0.5, 0.5
    return (x, y), (x2, y2)


def test_tie_preserving_mice_breaks_the_published_bound():
    (x, y), (x2, y2) = tied_neighbours()
    change = abs(mice_statistic(x, y, 4, 15) - mice_statistic(x2, y2, 4, 15))
    assert change > 5 * mice_sensitivity(N, 4)  # why the private path must not use it


def test_distinct_rank_mice_stays_within_the_bound_for_every_key():
    (x, y), (x2, y2) = tied_neighbours()
    sampler = OpenDPSampler()
    bound = mice_sensitivity(N, 4)
    for _ in range(100):
        keys = sampler.random_keys(2 * N).reshape(2, N)
        change = abs(mice_on_distinct_ranks(x, y, 4, 15, keys)
                     - mice_on_distinct_ranks(x2, y2, 4, 15, keys))
        assert change <= bound


def test_distinct_rank_mice_equals_mice_on_untied_data():
    gen = np.random.default_rng(5)  # test data only
    x = gen.random(700)
    y = np.sin(5 * x) + 0.3 * gen.random(700)
    keys = OpenDPSampler().random_keys(1400).reshape(2, 700)
    assert mice_on_distinct_ranks(x, y, 4, 15, keys) == mice_statistic(x, y, 4, 15)
    assert mice_on_distinct_ranks(x, y, 0.6, 15, keys) == mice_statistic(x, y, 0.6, 15)
    ranks = distinct_ranks(np.array([2.0, 1.0, 2.0, 2.0]), np.array([9, 0, 3, 3], np.uint64))
    assert sorted(ranks) == [0.0, 1.0, 2.0, 3.0] and ranks[1] == 0.0 and ranks[0] == 3.0


def _releases(x, y):
    return np.array([
        dm.private_mic(x, y, eps=EPS, mechanism="mice-lap", B=4, **BOUNDS).value
        for _ in range(RELEASES)
    ])


def _exceeds_privacy_bound(a, b, eps, alpha=1e-6):
    """True if some event {value > t} is, with confidence 1 - alpha, more than
    ``e**eps`` times likelier under ``a`` than under ``b`` (Clopper-Pearson bounds)."""
    for t in np.linspace(0.05, 0.95, 19):
        ka, kb = int((a > t).sum()), int((b > t).sum())
        low_a = stats.beta.ppf(alpha, ka, len(a) - ka + 1) if ka else 0.0
        high_b = stats.beta.ppf(1 - alpha, kb + 1, len(b) - kb) if kb < len(b) else 1.0
        if low_a > math.exp(eps) * high_b:
            return True
    return False


@pytest.mark.slow
def test_mice_lap_releases_on_tied_neighbours_respect_eps():
    (x, y), (x2, y2) = tied_neighbours()
    first, second = _releases(x, y), _releases(x2, y2)
    assert not _exceeds_privacy_bound(first, second, EPS)
    assert not _exceeds_privacy_bound(second, first, EPS)
    assert not _exceeds_privacy_bound(1 - first, 1 - second, EPS)
    assert not _exceeds_privacy_bound(1 - second, 1 - first, EPS)


def test_privacy_bound_check_detects_the_tie_preserving_mechanism():
    # The check above has power: releases of the tie-preserving statistic with the
    # same Laplace noise (what mice-lap did before) are flagged at once.
    (x, y), (x2, y2) = tied_neighbours()
    scale = mice_sensitivity(N, 4) / EPS
    sampler = OpenDPSampler()
    lattice = 2.0 ** -40

    def old_release(a, b):
        exact = round(mice_statistic(a, b, 4, 15) / lattice)
        z = sampler.discrete_laplace(scale / lattice, RELEASES)
        return np.clip((exact + z) * lattice, 0, 1)

    assert _exceeds_privacy_bound(old_release(x, y), old_release(x2, y2), EPS)
