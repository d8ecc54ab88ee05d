"""MICe, the in-memory statistic users know from minepy's ``MINE(alpha, c, est="mic_e")``.

MICe partitions by *mass* (ranks), so it depends on the whole dataset and cannot
be merged across partitions; it is computed in memory only. :func:`mice_statistic`
is non-private and keeps ties together, as minepy does.
:func:`mice_on_distinct_ranks` is what the private ``mice-lap`` mechanism noises:
MICe of the points after ties are broken by secret per-row keys (one per row and
axis, drawn independently), so that every value is distinct -- the setting in
which the published sensitivity holds (``docs/privacy.md``).
"""

from __future__ import annotations

import math

import numpy as np

from dpmic_dask.checks import check_clump_factor
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.kernels.mice import clump_ids, contingency, equipartition_sorted
from dpmic_dask.stats.kernels.optimize import optimize_axis


def mice_max_cells(n: int, alpha: float) -> float:
    """``B(n)``: ``max(n**alpha, 4)`` for ``0 < alpha <= 1``, ``min(alpha, n)`` for
    ``alpha >= 4``."""
    if alpha <= 1:
        return max(n ** alpha, 4.0)
    return float(min(alpha, n))


def check_alpha(alpha) -> float:
    """``alpha`` must be a real in ``(0, 1]`` (exponent) or ``>= 4`` (a fixed ``B``)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise InvalidParameterError("alpha must be a number in (0, 1] or >= 4")
    alpha = float(alpha)
    if not math.isfinite(alpha) or not (0 < alpha <= 1 or alpha >= 4):
        raise InvalidParameterError("alpha must be in (0, 1] or >= 4")
    return alpha


def _orientation_scores(fixed, grouped, B, c, matrix, fixed_is_x):
    """Fill ``matrix[kx, ky]`` with one orientation's MICe scores.

    ``fixed`` is the axis cut into equal-mass parts; ``grouped`` the one grouped
    by OptimizeAxis over its (super)clumps.
    """
    n = fixed.shape[0]
    by_fixed = np.argsort(fixed, kind="stable")
    fixed_sorted = fixed[by_fixed]
    by_grouped = np.argsort(grouped, kind="stable")
    grouped_sorted = grouped[by_grouped]
    labels_fixed_order = np.empty(n, dtype=np.int64)
    labels = np.empty(n, dtype=np.int64)
    clumps = np.empty(n, dtype=np.int64)
    supers = np.empty(n, dtype=np.int64)
    for q in range(2, max(int(B // 2), 2) + 1):
        cap = int(B // q)  # >= 2 because q <= B / 2
        realised_q = equipartition_sorted(fixed_sorted, q, labels_fixed_order)
        labels[by_fixed] = labels_fixed_order
        labels_grouped_order = labels[by_grouped]
        n_clumps = clump_ids(grouped_sorted, labels_grouped_order, clumps)
        clump_cap = max(int(c * cap), 1)
        rows = clumps
        n_rows = n_clumps
        if n_clumps > clump_cap:
            n_rows = equipartition_sorted(clumps.astype(np.float64), clump_cap, supers)
            rows = supers
        k_top = min(q, cap)
        table = contingency(rows, n_rows, labels_grouped_order, realised_q)
        info = optimize_axis(table, k_top)
        for k in range(2, k_top + 1):
            if realised_q < 2:
                score = 0.0
            else:
                score = min(info[k] / math.log2(min(k, realised_q)), 1.0)
            if fixed_is_x:
                matrix[q, k] = score
            elif k < q:  # at k == q the x-fixed orientation defines the entry
                matrix[k, q] = score


def mice_matrix(x: np.ndarray, y: np.ndarray, alpha: float, c: int) -> np.ndarray:
    """MICe characteristic matrix ``[kx, ky]`` (NaN where undefined) of checked arrays."""
    n = x.shape[0]
    B = mice_max_cells(n, alpha)
    size = max(int(B // 2), 2) + 1
    matrix = np.full((size, size), np.nan)
    _orientation_scores(x, y, B, c, matrix, fixed_is_x=True)
    _orientation_scores(y, x, B, c, matrix, fixed_is_x=False)
    return matrix


def mice_statistic(x: np.ndarray, y: np.ndarray, alpha: float, c) -> float:
    """MICe of checked float64 arrays (no NaN, equal length >= 4)."""
    c = check_clump_factor(c)
    matrix = mice_matrix(x, y, check_alpha(alpha), c)
    value = np.nanmax(matrix) if np.isfinite(matrix).any() else 0.0
    return float(min(max(value, 0.0), 1.0))


def distinct_ranks(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Ranks ``0 .. n-1`` (float64) of ``values``, ties ordered by ``keys`` and then
    by position, so that every rank is distinct."""
    order = np.lexsort((keys, values))
    ranks = np.empty(values.shape[0], dtype=np.float64)
    ranks[order] = np.arange(values.shape[0], dtype=np.float64)
    return ranks


def mice_on_distinct_ranks(x: np.ndarray, y: np.ndarray, alpha: float, c,
                           keys: np.ndarray) -> float:
    """MICe of checked arrays after breaking every tie by per-row keys: ``keys`` is
    ``(2, n)``, one key per row for ``x`` and an independent one for ``y``.

    Each row ``r`` becomes the point ``((x_r, k_r), (y_r, k'_r))`` in lexicographic
    order on both axes. For keys drawn independently of the data, this is a per-row
    map: replacing one row of the data replaces one point of the tie-free dataset,
    whose MICe obeys the paper's Theorem 3.1. MICe depends on each axis only through
    its order, so the ranks of those points give the same value. The two axes'
    keys are independent, so rows tied on both axes fall in independent orders:
    one key for both would order them alike on each axis, a monotone run inside
    every joint tie (two constant columns would read 1).
    """
    keys = np.asarray(keys)
    if keys.shape != (2, *x.shape):
        raise InvalidParameterError("keys must be two per row (one for each axis)")
    return mice_statistic(distinct_ranks(x, keys[0]), distinct_ranks(y, keys[1]), alpha, c)
