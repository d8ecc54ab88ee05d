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

from dpmic_dask.privacy.mechanisms import noisy_values, plan_noise
from dpmic_dask.stats.characteristic import micr_from_counts
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.kernels.optimize import optimize_axis
from dpmic_dask.stats.sensitivity import micr_sensitivity
from tests.statistical.test_mechanism_noise import truncgeom_pmf
from tests.statistical.test_sensitivity import compositions


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
    plan = plan_noise(mechanism="micr-geom", n=n, eps=eps, delta=0.0, pairs=1, B=4, c=1)
    honest_cell_eps = 1.0 / plan.noise_scale  # eps / (2G)
    assert honest_cell_eps == pytest.approx(eps / 4)
    honest = worst_privacy_loss(n, honest_cell_eps)
    assert honest <= eps + 1e-9
    published = worst_privacy_loss(n, eps / 2)  # the paper's TruncGeom(eps/2) per cell
    # the published accounting is not eps-DP: an exact counterexample
    assert published > factor * eps


SAMPLES = 40_000


def worst_bin_excess(plan, exact_d, exact_d2, eps, delta=0.0, bins=20):
    """Largest lower-confidence excess of P_D(S) over e^eps P_D'(S) + delta (and the
    mirror image) over histogram bins S of the released values, in units of the
    bin's standard error; <= 0 means no detectable violation of (eps, delta)-DP."""
    a = noisy_values(np.full(SAMPLES, exact_d), plan)
    b = noisy_values(np.full(SAMPLES, exact_d2), plan)
    lo, hi = min(a.min(), b.min()), max(a.max(), b.max())
    edges = np.linspace(lo, hi + 1e-12, bins + 1)
    pa = np.histogram(a, edges)[0] / SAMPLES
    pb = np.histogram(b, edges)[0] / SAMPLES
    worst = -np.inf
    for p, q in ((pa, pb), (pb, pa)):
        excess = p - math.exp(eps) * q - delta
        se = np.sqrt((p * (1 - p) + math.exp(2 * eps) * q * (1 - q)) / SAMPLES) + 1e-12
        worst = max(worst, float(np.max(excess / se)))
    return worst


def test_laplace_release_empirical_privacy_on_worst_neighbours():
    # exact MICr values of two neighbouring datasets differ by at most Delta(n):
    # take two valid values (in [0, 1]) that far apart, the worst case for the noise
    n, eps = 9, 1.0
    exact_d, exact_d2 = 0.1, 0.1 + micr_sensitivity(n) * 0.999
    assert exact_d2 <= 1.0
    plan = plan_noise(mechanism="micr-lap", n=n, eps=eps, delta=0.0, pairs=1, B=9, c=1)
    assert worst_bin_excess(plan, exact_d, exact_d2, eps) < 4.5
    # the check can see a violation: half the noise breaks eps-DP on this pair
    half = plan_noise(mechanism="micr-lap", n=n, eps=2 * eps, delta=0.0, pairs=1, B=9, c=1)
    assert worst_bin_excess(half, exact_d, exact_d2, eps) > 6


def test_gaussian_release_empirical_privacy_on_worst_neighbours():
    n, eps, delta = 10**6, 1.0, 1e-6
    exact_d, exact_d2 = 0.5, 0.5 + micr_sensitivity(n) * 0.999
    plan = plan_noise(mechanism="micr-gauss", n=n, eps=eps, delta=delta, pairs=1, B=40, c=5)
    assert worst_bin_excess(plan, exact_d, exact_d2, eps, delta) < 4.5
    # a quarter of the noise (the same plan at 16x the budget) visibly breaks it
    weak = plan_noise(mechanism="micr-gauss", n=n, eps=eps, delta=delta, pairs=1, B=40, c=5)
    weak = type(weak)(**{**vars(weak), "noise_scale": weak.noise_scale / 4})
    assert worst_bin_excess(weak, exact_d, exact_d2, eps, delta) > 6


def test_mice_lap_release_empirical_privacy_on_worst_neighbours():
    from dpmic_dask.stats.sensitivity import mice_sensitivity

    n, eps = 10**6, 1.0
    B = n ** 0.6
    exact_d, exact_d2 = 0.3, 0.3 + mice_sensitivity(n, B) * 0.999
    assert exact_d2 <= 1.0
    plan = plan_noise(mechanism="mice-lap", n=n, eps=eps, delta=0.0, pairs=1, B=B, c=15)
    assert worst_bin_excess(plan, exact_d, exact_d2, eps) < 4.5
    half = plan_noise(mechanism="mice-lap", n=n, eps=2 * eps, delta=0.0, pairs=1, B=B, c=15)
    assert worst_bin_excess(half, exact_d, exact_d2, eps) > 6
