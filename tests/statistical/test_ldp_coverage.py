"""Local model: the ci95 of a pair's MIC covers the truth at least 93% of the time
where the projection onto the simplex binds (strong relationships at small eps),
and the older interval ``1.96 sd(MIC*) + |bias|`` did not (issue #34).

Reports are simulated at the level of the support counts, exactly: under GRR each
person's report is one value, drawn from the protocol's row for their own cell, so
the support counts of a population with cell counts ``c`` are a sum of
multinomials ``Multinomial(c_v, GRR row of v)``. The target is the exact MICr of the
population's own table on the grid, as in ``benchmarks/local_dp.py`` section (4).
The simulation's generator is seeded (test data and test reports, not privacy
noise); the bootstrap is the server's own (:func:`estimate_pair`).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpmic_dask.ldp.estimate import estimate_pair, mic_of_joint
from dpmic_dask.ldp.protocols import make_protocol
from dpmic_dask.stats.grids import master_grid_family

RUNS = 200


def population(m: int, n: int, sigma: float, gen: np.random.Generator) -> np.ndarray:
    """Cell counts of ``y = sin(6x) + N(0, sigma^2)`` on the ``m x m`` grid of
    ``x in [0, 1]``, ``y in [-1.5, 1.5]`` (values outside clamped)."""
    x = gen.uniform(0, 1, n)
    y = np.sin(6 * x) + gen.normal(0, sigma, n)
    i = np.minimum((x * m).astype(int), m - 1)
    j = np.clip(((y + 1.5) / 3.0 * m).astype(int), 0, m - 1)
    return np.bincount(i * m + j, minlength=m * m)


def grr_supports(counts: np.ndarray, proto, gen: np.random.Generator) -> np.ndarray:
    k = proto.k
    out = np.zeros(k, dtype=np.int64)
    for v in np.flatnonzero(counts):
        row = np.full(k, proto.p)
        row[v] = proto.q
        out += gen.multinomial(counts[v], row / row.sum())
    return out


def coverage(eps: float, m: int, n: int, sigma: float, seed: int) -> tuple[float, float]:
    """Shares of runs covered by the new ``ci95`` and by the older interval."""
    gen = np.random.default_rng(seed)  # test data and simulated reports, not privacy noise
    proto = make_protocol("grr", eps, m * m)
    family = master_grid_family(m * m, 2)
    new = old = 0
    for _ in range(RUNS):
        counts = population(m, n, sigma, gen)
        target = mic_of_joint(counts / n, m, family)
        est = estimate_pair(grr_supports(counts, proto, gen), n, n, proto, m, family, 200)
        new += abs(est.mic - target) <= est.ci95
        old += abs(est.mic - target) <= 1.96 * est.boot_sd + abs(est.bias)
    return new / RUNS, old / RUNS


CELLS = [  # (eps, bins, people, sigma): strong relationships at small eps
    (0.5, 4, 300_000, 0.05),
    (1.0, 6, 1_000_000, 0.1),
    (2.0, 6, 20_000, 0.1),
]


@pytest.mark.slow
def test_ci95_covers_where_the_projection_binds():
    new, old = zip(*(coverage(eps, m, n, sigma, seed=int(eps * 10) + m)
                     for eps, m, n, sigma in CELLS))
    # every cell holds >= 93% with the server's ci95 ...
    assert min(new) >= 0.93, (new, old)
    # ... and the same check fails for the older interval (same runs and draws;
    # measured: new 0.98, 0.97, 0.98; old 0.900, 0.920, 0.905)
    assert min(old) < 0.93, (new, old)
