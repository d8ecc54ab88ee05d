"""Exact and empirical privacy loss of the mechanisms on neighbouring datasets.

MICr-Geom at B = 4, c = 1 has G = 2 master grids, both 2 x 2 and both the same
counts (transposed). Its output is the larger of the two grids' noisy mutual
information, so its exact output distribution is the distribution of the maximum
of two independent copies -- small enough to enumerate exactly.
"""

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from dpmic_dask.accounting import plan_release
from dpmic_dask.characteristic import micr_from_counts
from dpmic_dask.grids import master_grid_family
from dpmic_dask.kernels.optimize import optimize_axis
from dpmic_dask.mechanisms import noisy_values
from dpmic_dask.sensitivity import micr_sensitivity
from tests.statistical.test_sensitivity import compositions
from tests.statistical.test_mechanism_noise import truncgeom_pmf


def grid_output_distribution(cells, n, per_cell_eps):
    """Exact distribution of one noisy 2 x 2 grid's normalised MI."""
    pmfs = [truncgeom_pmf(per_cell_eps, n, int(a)) for a in cells]
    dist = defaultdict(float)
    for noisy in itertools.product(range(n + 1), repeat=4):
        p = math.prod(pmfs[i][v] for i, v in enumerate(noisy))
        score = optimize_axis(np.array(noisy, dtype=np.int64).reshape(2, 2), 2)[2]
        dist[round(score, 12)] += p
    return dist


def max_of_two_iid(dist):
    values = sorted(dist)
    probs = np.array([dist[v] for v in values])
    cdf = np.cumsum(probs)
    below = np.concatenate(([0.0], cdf[:-1]))
    return dict(zip(values, cdf ** 2 - below ** 2))


def worst_privacy_loss(n, per_cell_eps):
    outputs = {}
    for cells in compositions(n, 4):
        outputs[cells.tobytes()] = max_of_two_iid(grid_output_distribution(cells, n, per_cell_eps))
    worst = 0.0
    for cells in compositions(n, 4):
        p = outputs[cells.tobytes()]
        for src in np.flatnonzero(cells):
            for dst in range(4):
                if dst != src:
                    other = cells.copy()
                    other[src] -= 1
                    other[dst] += 1
                    q = outputs[other.tobytes()]
                    for v in set(p) | set(q):
                        worst = max(worst, abs(math.log(p.get(v, 0.0) / q.get(v, 0.0))))
    return worst


def test_model_matches_the_package_geom_output():
    family = master_grid_family(4, 1)
    assert family.n_grids == 2 and family.n_cells == 8
    rng = np.random.default_rng(0)  # test data only
    for _ in range(50):
        flat = rng.integers(0, 5, size=8)
        scores = [optimize_axis(flat[i:i + 4].reshape(2, 2).astype(np.int64), 2)[2] for i in (0, 4)]
        assert micr_from_counts(flat, family) == pytest.approx(max(scores), abs=1e-12)


@pytest.mark.parametrize("eps,factor", [(1.0, 1.01), (2.0, 1.2), (4.0, 1.4)])
def test_geom_privacy_loss_exact(eps, factor):
    n = 4
    plan = plan_release(mechanism="micr-geom", n=n, eps=eps, delta=0.0, pairs=1, B=4, c=1)
    honest_cell_eps = 1.0 / plan.noise_scale  # eps / (2G)
    assert honest_cell_eps == pytest.approx(eps / 4)
    honest = worst_privacy_loss(n, honest_cell_eps)
    assert honest <= eps + 1e-9
    published = worst_privacy_loss(n, eps / 2)  # the paper's TruncGeom(eps/2) per cell
    # the published accounting is not eps-DP: an exact counterexample
    assert published > factor * eps


def test_laplace_release_empirical_privacy_on_worst_neighbours():
    # exact MICr values of two neighbouring datasets can differ by at most Delta(n):
    # take two valid values (in [0, 1]) that far apart, the worst case for the noise
    n = 9
    delta_n = micr_sensitivity(n)
    exact_d, exact_d2 = 0.1, 0.1 + delta_n * 0.999
    assert exact_d2 <= 1.0
    eps = 1.0
    plan = plan_release(mechanism="micr-lap", n=n, eps=eps, delta=0.0, pairs=1, B=9, c=1)
    samples = 40_000
    a = noisy_values(np.full(samples, exact_d), plan)
    b = noisy_values(np.full(samples, exact_d2), plan)
    bins = np.linspace(0, 1, 11)
    bins[-1] = 1.0 + 1e-12
    ca, _ = np.histogram(a, bins)
    cb, _ = np.histogram(b, bins)
    ok = (ca > 300) & (cb > 300)
    assert ok.sum() >= 5
    log_ratio = np.abs(np.log(ca[ok] / cb[ok]))
    stderr = np.sqrt(1 / ca[ok] + 1 / cb[ok])
    assert np.all(log_ratio - 4.5 * stderr <= eps)
    # and the test can see a violation: half the noise breaks eps-DP on this pair
    half = plan_release(mechanism="micr-lap", n=n, eps=2 * eps, delta=0.0, pairs=1, B=9, c=1)
    a2 = noisy_values(np.full(samples, exact_d), half)
    b2 = noisy_values(np.full(samples, exact_d2), half)
    ca2, _ = np.histogram(a2, bins)
    cb2, _ = np.histogram(b2, bins)
    ok2 = (ca2 > 300) & (cb2 > 300)
    lr2 = np.abs(np.log(ca2[ok2] / cb2[ok2])) - 4.5 * np.sqrt(1 / ca2[ok2] + 1 / cb2[ok2])
    assert np.any(lr2 > eps)
