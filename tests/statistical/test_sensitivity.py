"""Exhaustive checks of the tight MICr sensitivity Delta(N) = 2 f((N-1)/2) / N."""

import itertools
import math

import numpy as np
import pytest

import dpmic_dask as dm
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.sensitivity import micr_sensitivity, micr_sensitivity_published
from dpmic_dask.stats.statistics import get_statistic


def compositions(total: int, parts: int) -> np.ndarray:
    """All vectors of ``parts`` non-negative integers summing to ``total``."""
    rows = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *bars, total + parts - 1)
        rows.append([b - a - 1 for a, b in zip(edges, edges[1:])])
    return np.array(rows, dtype=np.int64)


def mutual_information_bits(cells: np.ndarray, k: int, l: int) -> np.ndarray:
    """I of each row of ``cells`` (M x k*l counts, row-major k x l), vectorised."""
    a = cells.reshape(-1, k, l).astype(float)
    n = a.sum(axis=(1, 2))
    g = lambda v: np.where(v > 0, v * np.log2(np.where(v > 0, v, 1)), 0.0)  # noqa: E731
    total = g(a).sum(axis=(1, 2)) - g(a.sum(axis=2)).sum(axis=1) - g(a.sum(axis=1)).sum(axis=1) + g(n)
    return total / n


def max_neighbour_change(n: int, k: int, l: int) -> float:
    """Largest |I(A) - I(A')| over all k x l count matrices with n points and all
    replace-one neighbours (one point moved from one cell to another)."""
    cells = compositions(n, k * l)
    base = mutual_information_bits(cells, k, l)
    best = 0.0
    for src, dst in itertools.permutations(range(k * l), 2):
        has = cells[:, src] > 0
        moved = cells[has].copy()
        moved[:, src] -= 1
        moved[:, dst] += 1
        change = np.abs(mutual_information_bits(moved, k, l) - base[has])
        best = max(best, float(change.max()))
    return best


def declared(n: int) -> float:
    """The sensitivity the release calibrates its noise to: the one the MICr
    statistic declares (for any grid), not a helper beside it."""
    sensitivities = {get_statistic("micr").sensitivity(n, B) for B in (4, 40, 200)}
    assert sensitivities == {micr_sensitivity(n)}
    return sensitivities.pop()


@pytest.mark.parametrize("k,l", [(2, 2), (2, 3), (3, 3)])
@pytest.mark.parametrize("n", [4, 5, 6, 7, 8, 9])
def test_mutual_information_change_is_bounded(n, k, l):
    assert max_neighbour_change(n, k, l) <= declared(n) + 1e-12


@pytest.mark.parametrize("n", [5, 7, 9])
def test_bound_is_attained_on_three_by_three_grids(n):
    # moving the one point shared by a full row and a full column into an empty
    # row and column attains 2 f((n-1)/2) / n exactly when (n-1)/2 is an integer
    # (the computed bound carries a 1e-12 relative safety margin, so compare at 1e-11)
    change = max_neighbour_change(n, 3, 3)
    assert change <= declared(n)
    assert change == pytest.approx(declared(n), rel=1e-11)


def test_tight_bound_is_about_half_the_published_one():
    for n in (100, 10_000, 10**6):
        ratio = micr_sensitivity(n) / micr_sensitivity_published(n)
        assert 0.40 < ratio < 0.50
        assert micr_sensitivity(n) == pytest.approx((2 * math.log2(n) + 0.885) / n, rel=1e-3)


def _cell_points(family, counts_by_cell, centres):
    xs, ys = [], []
    for (cx, cy), m in zip(itertools.product(range(len(centres)), repeat=2), counts_by_cell):
        xs += [centres[cx]] * int(m)
        ys += [centres[cy]] * int(m)
    return np.array(xs), np.array(ys)


@pytest.mark.slow
@pytest.mark.parametrize("B,c,n", [(6, 1, 4), (6, 1, 5), (8, 2, 4)])
def test_micr_change_over_all_datasets_is_bounded(B, c, n):
    """MICr depends on the points only through their cell of the joint refinement of
    all master grids; enumerate every dataset of n points on it and every neighbour."""
    family = master_grid_family(B, c)
    bounds = np.unique(np.concatenate([family.fixed_boundaries, family.row_boundaries]))
    edges = np.concatenate(([0], bounds, [2**32])) / 2**32
    centres = (edges[:-1] + edges[1:]) / 2
    cells = len(centres) ** 2
    datasets = compositions(n, cells)
    value = {}
    for counts in datasets:
        x, y = _cell_points(family, counts, centres)
        value[counts.tobytes()] = dm.micr(x, y, x_bounds=(0, 1), y_bounds=(0, 1), B=B, c=c)
    worst = 0.0
    for counts in datasets:
        here = value[counts.tobytes()]
        for src in np.flatnonzero(counts):
            for dst in range(cells):
                if dst == src:
                    continue
                other = counts.copy()
                other[src] -= 1
                other[dst] += 1
                worst = max(worst, abs(here - value[other.tobytes()]))
    assert 0 < worst <= declared(n) + 1e-12
