"""Exhaustive checks of the sensitivities per privacy unit (docs/privacy.md,
"Privacy per unit").

* The one-grid lemma: removing one point from any count matrix with ``m``
  points changes its normalised mutual information by at most ``f(m-1) / m``
  (every 2x2, 2x3 and 3x3 matrix with up to 9 points), and 2x2 grids attain it.
* The released statistic ``h = min(1, |D| / n0) M(D)`` through the statistic
  object the release uses (:class:`UnitStatistic`), on every dataset of up to 6
  points on a 3 x 3 lattice of values, for MICr (two grid families) and
  Kendall's tau: removing up to ``k`` points never moves it by more than
  ``unit_sensitivity(n0, k)``, whatever ``|D|`` is relative to ``n0``.
* The monotonicity the proof uses: ``m Delta(m)`` non-decreasing for ``m >= 1``
  and ``Delta(m)`` non-increasing for ``m >= 2``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from dpmic_dask.stats.counting import pair_counts
from dpmic_dask.stats.group_sensitivity import (
    UnitStatistic,
    micr_add_remove,
    tapered_step,
    tau_add_remove,
    unit_sensitivity,
)
from dpmic_dask.stats.sensitivity import f_gain
from dpmic_dask.stats.statistics import get_statistic
from tests.statistical.test_sensitivity import compositions, mutual_information_bits

pytestmark = pytest.mark.slow

LATTICE = (0.1, 0.5, 0.9)
POINTS = tuple(itertools.product(LATTICE, LATTICE))  # 9 positions
MAX_POINTS = 6


def max_removal_change(n: int, k: int, l: int) -> float:
    """Largest |I/L(A) - I/L(A minus one point)| over all k x l matrices with n points."""
    cells = compositions(n, k * l)
    norm = math.log2(min(k, l))
    base = mutual_information_bits(cells, k, l) / norm
    best = 0.0
    for src in range(k * l):
        has = cells[:, src] > 0
        if not has.any():
            continue
        removed = cells[has].copy()
        removed[:, src] -= 1
        if n - 1 == 0:
            after = np.zeros(removed.shape[0])
        else:
            after = mutual_information_bits(removed, k, l) / norm
        best = max(best, float(np.abs(after - base[has]).max()))
    return best


@pytest.mark.parametrize("k,l", [(2, 2), (2, 3), (3, 3)])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 9])
def test_removing_one_point_moves_one_grid_by_at_most_f_over_m(n, k, l):
    assert max_removal_change(n, k, l) <= micr_add_remove(n) + 1e-12


@pytest.mark.parametrize("n", [2, 5, 9])
def test_the_removal_bound_is_attained_on_two_by_two_grids(n):
    # a point alone in its row and column, the others all in the opposite cell:
    # I = 1 bit before (normalised by log2 2 = 1), 0 after; f(n-1)/n in general
    assert max_removal_change(n, 2, 2) == pytest.approx(micr_add_remove(n), rel=1e-9)


def multisets(max_points: int):
    """Every multiset of at most ``max_points`` lattice positions (as count tuples)."""
    for m in range(max_points + 1):
        for combo in itertools.combinations_with_replacement(range(len(POINTS)), m):
            counts = Counter(combo)
            yield tuple(counts.get(i, 0) for i in range(len(POINTS)))


def values(statistic, layout, data):
    """The statistic of every dataset in ``data`` (count tuples over POINTS)."""
    out = {}
    for d in data:
        xs = np.array([POINTS[i][0] for i, c in enumerate(d) for _ in range(c)], dtype=float)
        ys = np.array([POINTS[i][1] for i, c in enumerate(d) for _ in range(c)], dtype=float)
        counts = pair_counts(xs, ys, (0.0, 1.0), (0.0, 1.0), layout)
        out[d] = statistic.value(counts, layout)
    return out


def sub_multisets(d, most: int):
    """Every multiset obtained from ``d`` by removing 1..``most`` points."""
    choices = [range(c + 1) for c in d]
    total = sum(d)
    for removed in itertools.product(*choices):
        r = sum(removed)
        if 1 <= r <= most and r <= total:
            yield tuple(c - q for c, q in zip(d, removed))


@pytest.fixture(scope="module")
def data():
    return list(multisets(MAX_POINTS))


@pytest.mark.parametrize("name,B,c", [("micr", 4, 1), ("micr", 6, 1), ("micr", 8, 2),
                                      ("tau", 8, 2)])
@pytest.mark.parametrize("n0", [4, 6, 9])
def test_one_unit_of_up_to_k_rows_moves_the_released_statistic_within_the_bound(
        data, name, B, c, n0):
    base = get_statistic(name)
    worst = {k: 0.0 for k in (1, 2, 3)}
    for k in worst:
        statistic = UnitStatistic(base, k, n0)
        layout = statistic.layout(B, c)
        h = values(statistic, layout, data)
        for d in data:
            for sub in sub_multisets(d, k):
                worst[k] = max(worst[k], abs(h[d] - h[sub]))
        bound = statistic.sensitivity(10**9, B)  # n is ignored: the bound holds at every size
        assert bound == unit_sensitivity(name, n0, k)
        assert worst[k] <= bound, (k, worst[k], bound)
    assert worst[1] > 0  # the check sees changes at all


@pytest.mark.parametrize("n0", [4, 6, 9])
def test_a_half_bound_would_be_exceeded(data, n0):
    """The test of the test: with half the declared sensitivity, some neighbours of
    one row on the MICr family at B = 6 differ by more (the check can fail)."""
    statistic = UnitStatistic(get_statistic("micr"), 1, n0)
    layout = statistic.layout(6, 1)
    h = values(statistic, layout, data)
    worst = max(abs(h[d] - h[s]) for d in data for s in sub_multisets(d, 1))
    assert worst > 0.5 * unit_sensitivity("micr", n0, 1) * 0.5


def test_the_monotonicity_the_proof_uses():
    ms = np.unique(np.concatenate([np.arange(1, 20_001),
                                   np.geomspace(2e4, 1e12, 400).astype(np.int64)]))
    for one_row in (micr_add_remove, tau_add_remove):
        d = np.array([one_row(int(m)) for m in ms])
        assert np.all(np.diff(ms * d) >= -1e-9 * ms[1:] * d[1:])  # m Delta(m) non-decreasing
        assert np.all(np.diff(d[1:]) <= 1e-15)  # Delta(m) non-increasing from m = 2


def test_closed_forms_and_the_group_factor():
    n0 = 10**6
    assert tapered_step("micr", n0) == pytest.approx((f_gain(n0 - 1) + 1) / n0, rel=1e-11)
    assert tapered_step("tau", n0) == pytest.approx(5 / n0, rel=1e-11)
    for k in (1, 2, 8, 32):
        assert unit_sensitivity("micr", n0, k) >= k * tapered_step("micr", n0)
        assert unit_sensitivity("micr", n0, k) == pytest.approx(k * tapered_step("micr", n0),
                                                                rel=1e-11)
    # about half the replace-one bound per row: add/remove is one move's half
    from dpmic_dask.stats.sensitivity import micr_sensitivity
    assert 0.45 < micr_add_remove(n0) / micr_sensitivity(n0) < 0.55


def categorical_values(k: int, n0: int, data, tapered: bool = True):
    """MIC of every dataset in ``data`` with x on a categorical axis of two listed
    categories and "other" (codes 0.5, 1.5, 2.5 for the lattice's x positions),
    through the per-pair functions a release per unit uses (``PairValues`` over
    ``UnitStatistic``); ``tapered=False``: the categorical MIC as it was once
    released per unit, untapered."""
    from dpmic_dask.stats.categories import CategoryAxis
    from dpmic_dask.stats.statistics.categorical import CategoricalMIC, PairValues

    axis = CategoryAxis("x", ("a", "b"))
    statistic = UnitStatistic(get_statistic("micr"), k, n0)
    layout = statistic.layout(8, 2)
    if tapered:
        (fn,) = PairValues([statistic], layout, {"x": axis}, False).for_pairs([("x", "y")])
    else:
        cat = CategoricalMIC(axis, None)
        fn = lambda counts: cat.value(counts, layout)  # noqa: E731
    code = {0.1: 0.5, 0.5: 1.5, 0.9: 2.5}
    out = {}
    for d in data:
        xs = np.array([code[POINTS[i][0]] for i, c in enumerate(d) for _ in range(c)], float)
        ys = np.array([POINTS[i][1] for i, c in enumerate(d) for _ in range(c)], dtype=float)
        out[d] = fn(pair_counts(xs, ys, axis.bounds, (0.0, 1.0), layout))
    return out, statistic.sensitivity(10**9, 8)


@pytest.mark.parametrize("n0", [4, 6, 9])
def test_a_categorical_axis_released_per_unit_stays_within_the_bound(data, n0):
    """Pairs with a categorical axis get the same taper as every other pair: one
    unit of up to k rows moves the released value by at most the unit sensitivity
    the noise is calibrated to."""
    for k in (1, 2, 3):
        h, bound = categorical_values(k, n0, data)
        worst = max(abs(h[d] - h[s]) for d in data for s in sub_multisets(d, k))
        assert 0 < worst <= bound, (k, worst, bound)


def test_an_untapered_categorical_axis_would_exceed_the_bound(data):
    """The test of the test: the categorical MIC without the taper moves by more
    than the bound when n0 is above the table's size."""
    h, bound = categorical_values(1, 9, data, tapered=False)
    worst = max(abs(h[d] - h[s]) for d in data for s in sub_multisets(d, 1))
    assert worst > bound
