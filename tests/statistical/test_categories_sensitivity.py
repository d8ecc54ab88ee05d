"""The replace-one sensitivity of MIC with a categorical axis, exhaustively.

Over every dataset of ``N`` rows on a small domain (every multiset of points:
the statistic does not depend on the rows' order) and every replace-one
neighbour, the change of the statistic -- computed as the release computes it,
through the engine's counts -- never exceeds MICr's ``Delta(N) = 2 f((N-1)/2) / N``
(docs/privacy.md, "MIC with a categorical axis"). The domains put codes in
every cell the grid family can tell apart: the listed categories, the "other"
bin, the null category, and ordered values in every master row.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.stats.categories import CategoryAxis
from dpmic_dask.stats.counting import pair_counts
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.sensitivity import micr_sensitivity
from dpmic_dask.stats.statistics.categorical import CategoricalMIC

pytestmark = pytest.mark.slow


def largest_change(points, n, value):
    """The largest ``|value(D) - value(D')|`` over every multiset ``D`` of ``n``
    points and every ``D'`` that replaces one of its rows by another point."""
    index = {p: k for k, p in enumerate(points)}
    cache = {}
    for combo in itertools.combinations_with_replacement(range(len(points)), n):
        cache[combo] = value([points[k] for k in combo])
    worst = 0.0
    for combo, v in cache.items():
        for position in set(combo):
            rest = list(combo)
            rest.remove(position)
            for other in range(len(points)):
                if other != position:
                    worst = max(worst, abs(v - cache[tuple(sorted(rest + [other]))]))
    assert len(index) == len(points)
    return worst


def one_axis_value(axis, family, y_bounds):
    def value(rows):
        x = np.array([r[0] for r in rows], dtype=np.float64)
        y = np.array([r[1] for r in rows], dtype=np.float64)
        return CategoricalMIC(axis, None).value(
            pair_counts(x, y, axis.bounds, y_bounds, family), family)
    return value


@pytest.mark.parametrize("B,c,n", [(8, 1, 4), (8, 1, 5), (8, 2, 5), (12, 1, 5)])
def test_one_categorical_axis_moves_by_at_most_delta(B, c, n):
    axis = CategoryAxis("g", ("a", "b"), null_category=True)  # codes a, b, null, other
    family = master_grid_family(B, c)
    ys = (0.05, 0.3, 0.55, 0.8) if B == 8 else (0.05, 0.3, 0.55, 0.8, 0.97)
    points = [(code + 0.5, y) for code in range(axis.codes) for y in ys]
    worst = largest_change(points, n, one_axis_value(axis, family, (0.0, 1.0)))
    bound = micr_sensitivity(n)
    assert 0 < worst <= bound
    # not a loose check: some neighbour moves it by most of the bound
    assert worst > 0.5 * bound


@pytest.mark.parametrize("n", [4, 5, 6])
def test_two_categorical_axes_move_by_at_most_delta(n):
    a = CategoryAxis("a", ("p", "q"))
    b = CategoryAxis("b", ("u", "v", "w"))
    family = master_grid_family(12, 2)

    def value(rows):
        x = np.array([r[0] for r in rows], dtype=np.float64)
        y = np.array([r[1] for r in rows], dtype=np.float64)
        return CategoricalMIC(a, b).value(pair_counts(x, y, a.bounds, b.bounds, family), family)

    points = [(i + 0.5, j + 0.5) for i in range(a.codes) for j in range(b.codes)]
    worst = largest_change(points, n, value)
    assert 0 < worst <= micr_sensitivity(n)


def test_the_coding_is_a_per_row_map():
    """Replacing one row changes one row's code and nothing else: the encoded
    neighbours are neighbours (the premise of the argument)."""
    axis = CategoryAxis("g", ("a", "b", "c"), null_category=True)
    rows = pd.Series(["a", "zz", None, "c", "b", "a"], dtype=object)
    codes = axis.encode(rows)
    for k in range(len(rows)):
        for replacement in ("a", "b", "c", "q", None):
            changed = rows.copy()
            changed.iloc[k] = replacement
            other = axis.encode(changed)
            differ = np.flatnonzero(codes != other)
            assert set(differ.tolist()) <= {k}
