"""The OptimizeAxis kernel against the one it replaced (tests/legacy_optimize.py).

Every score and every MICr must agree to 1e-12, over many random count tables of
varied shape, kmax, sparsity, empty rows and columns, and count magnitude (small
counts read from the ``v log2 v`` table, large ones evaluated), with ``v log2 v``
tables of several sizes (including none).
"""

import numpy as np
import pytest

from dpmic_dask.stats.characteristic import characteristic_matrix, grid_scores, micr_from_counts
from dpmic_dask.stats.counting import pair_counts
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.kernels.optimize import family_max, family_scores, optimize_axis, xlog2x_table
from tests import legacy_optimize as legacy
from tests import reference

TOL = 1e-12


def random_table(rng) -> tuple[np.ndarray, int]:
    """One count table and its kmax, drawn from a mix of regimes."""
    rows = int(rng.choice([1, 2, 3, int(rng.integers(2, 12)), int(rng.integers(10, 75))]))
    cols = int(rng.choice([1, 2, int(rng.integers(2, 8)), int(rng.integers(8, 40))]))
    kmax = int(rng.integers(2, 16))
    scale = float(rng.choice([1, 5, 50, 2_000, 300_000]))
    regime = rng.integers(0, 4)
    if regime == 0:  # independent
        m = rng.poisson(scale, size=(rows, cols))
    elif regime == 1:  # a relationship: mass along a band
        m = np.zeros((rows, cols), np.int64)
        for r in range(rows):
            centre = int((r / max(rows - 1, 1)) ** 2 * (cols - 1))
            m[r, centre] = rng.poisson(scale) + 1
            if cols > 1:
                m[r, min(centre + 1, cols - 1)] += rng.poisson(scale / 4)
    elif regime == 2:  # sparse
        m = rng.poisson(scale, size=(rows, cols)) * (rng.random((rows, cols)) < 0.15)
    else:  # a few heavy cells over a light background
        m = rng.poisson(max(scale / 100, 0.2), size=(rows, cols))
        m[rng.integers(0, rows, 3), rng.integers(0, cols, 3)] += int(scale) * 10
    m = np.asarray(m, dtype=np.int64)
    if rows > 2 and rng.random() < 0.5:  # empty master rows, alone and in runs
        m[rng.random(rows) < rng.random()] = 0
    if cols > 2 and rng.random() < 0.4:  # empty fixed columns
        m[:, rng.random(cols) < rng.random() * 0.7] = 0
    if rng.random() < 0.03:
        m[:] = 0
    return m, kmax


@pytest.mark.parametrize("seed", range(10))
def test_scores_equal_legacy_kernel_on_random_tables(seed):
    """1,000 tables per seed, 10,000 in all, each scored three ways."""
    rng = np.random.default_rng([28, seed])
    tables = [random_table(rng) for _ in range(1000)]
    for m, kmax in tables:
        want = legacy.optimize_axis(m, kmax)
        got = optimize_axis(m, kmax)
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) <= TOL, (m.tolist(), kmax, got, want)
    # The same tables as one family, with tables of v log2 v of several sizes.
    sizes = np.array([m.size for m, _ in tables], np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    rows = np.array([m.shape[0] for m, _ in tables], np.int64)
    cols = np.array([m.shape[1] for m, _ in tables], np.int64)
    kmax = np.array([k for _, k in tables], np.int64)
    flat = np.concatenate([m.ravel() for m, _ in tables])
    want = np.full((len(tables), int(kmax.max()) + 1), np.nan)
    legacy.family_scores(flat, offsets, rows, cols, kmax, want)
    for size in (0, 1, 37, 4096, int(flat.max()) + 1):
        table = xlog2x_table(size)
        got = np.full_like(want, np.nan)
        family_scores(flat, offsets, rows, cols, kmax, got, table)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.nanmax(np.abs(got - want)) <= TOL
        assert abs(family_max(flat, offsets, rows, cols, kmax, table) - np.nanmax(want)) <= TOL


def test_table_entries_equal_direct_evaluation():
    table = xlog2x_table(70_000)
    v = np.arange(70_000, dtype=np.float64)
    direct = np.array([legacy.xlog2x(x) for x in v[:2000]] + [legacy.xlog2x(x) for x in v[-50:]])
    assert np.array_equal(np.concatenate((table[:2000], table[-50:])), direct)


def pairs(n, seed):
    """Column pairs of several kinds: related, independent, narrow inside wide bounds,
    discrete, and clamped."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    yield x, np.sin(3 * x) + 0.3 * rng.normal(size=n), (-4.0, 4.0), (-4.0, 4.0)
    yield x, rng.normal(size=n), (-4.0, 4.0), (-4.0, 4.0)
    yield x, 0.05 * rng.normal(size=n), (-4.0, 4.0), (-4.0, 4.0)
    yield rng.integers(0, 5, n).astype(float), x ** 2, (0.0, 4.0), (0.0, 3.0)
    yield rng.random(n), rng.random(n), (0.0, 1.0), (0.0, 1.0)
    yield x, np.abs(x), (-1.0, 1.0), (0.0, 0.5)


@pytest.mark.parametrize("B, c, n", [(40, 5, 3000), (200, 5, 20_000), (77, 3, 500), (16, 1, 40)])
def test_micr_and_characteristic_matrix_equal_legacy(B, c, n):
    family = master_grid_family(B, c)
    for k, (x, y, xb, yb) in enumerate(pairs(n, B * 1000 + n)):
        counts = pair_counts(x, y, xb, yb, family)
        want = legacy.legacy_grid_scores(counts, family)
        got = grid_scores(counts, family)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.nanmax(np.abs(got - want)) <= TOL, k
        mic = micr_from_counts(counts, family)
        assert abs(mic - legacy.legacy_micr_from_counts(counts, family)) <= TOL, k
        assert abs(characteristic_matrix(counts, family).mic - mic) <= TOL
        # a task's exact int32 counts are read without a copy, with the same result
        assert micr_from_counts(counts.astype(np.int32), family) == mic


def test_optimal_split_point_is_not_monotone():
    """Why the dynamic program scans every split point: the best place to cut a
    prefix into two groups can move left when the prefix grows by one row, so
    the monotone-split speed-ups (Knuth, SMAWK) do not apply to this objective."""
    m = [[1, 0, 5], [0, 3, 0], [1, 2, 2], [2, 0, 0], [0, 0, 4], [3, 3, 1], [3, 4, 2]]

    def best_cut(rows):
        scores = {cut: reference.mutual_information(reference.merge_rows(rows, [cut]))
                  for cut in range(1, len(rows))}
        return max(scores, key=scores.get)

    assert best_cut(m[:5]) == 4
    assert best_cut(m[:6]) == 1
