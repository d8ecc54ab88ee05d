"""MICe, the in-memory statistic users know from minepy's ``MINE(alpha, c, est="mic_e")``.

MICe partitions by *mass* (ranks), so it depends on the whole dataset and cannot
be merged across partitions; it is computed in memory only and is non-private.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import InvalidParameterError
from .kernels.mice import clump_ids, contingency, equipartition_sorted
from .kernels.optimize import optimize_axis
from .validation import check_clump_factor


def mice_max_cells(n: int, alpha: float) -> float:
    """``B(n)``: ``max(n**alpha, 4)`` for ``0 < alpha <= 1``, ``min(alpha, n)`` for ``alpha >= 4``."""
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
