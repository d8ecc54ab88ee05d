"""The OptimizeAxis kernel and MICr read-out as they were before the faster kernel.

Kept as it was (apart from this docstring, ``cache=False`` and the read-out helpers at
the end) as the reference the faster kernel in :mod:`dpmic_dask.stats.kernels.optimize` is compared with:
every score must agree with these to 1e-12.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=False, inline="always")
def xlog2x(v):
    """``v * log2(v)`` with ``0 log 0 = 0`` (v a non-negative float)."""
    if v <= 0.0:
        return 0.0
    return v * np.log2(v)


@njit(nogil=True, cache=False)
def _group_gain(cum, s, t):
    """``F(s..t) = sum_j g(q_j) - g(q)`` for master rows ``s .. t-1``.

    ``cum`` is int64[R+1, L] of row prefix sums; ``q_j`` is the group's mass in
    fixed column j and ``q`` its total; ``g(x) = x log2 x``.
    """
    total = 0
    acc = 0.0
    for j in range(cum.shape[1]):
        q = cum[t, j] - cum[s, j]
        total += q
        acc += xlog2x(float(q))
    return acc - xlog2x(float(total))


@njit(nogil=True, cache=False)
def optimize_axis(counts, max_groups):
    """Best mutual information for every number of row groups.

    Parameters
    ----------
    counts : int64[R, L]
        Master count matrix: ``R`` master rows (the axis being grouped, in order)
        by ``L`` fixed columns.
    max_groups : int
        Largest number of groups ``kmax`` (>= 2).

    Returns
    -------
    float64[max_groups + 1]
        Entry ``k`` (``2 <= k <= kmax``) is the maximum, over all partitions of the
        ``R`` master rows into ``k`` contiguous non-empty groups, of the mutual
        information in bits between group and column. For ``k > R`` it is the value
        for ``R`` groups (splitting never lowers mutual information, so this is the
        maximum over at most ``k`` groups). Entries 0 and 1 are 0.
    """
    n_rows, n_cols = counts.shape
    out = np.zeros(max_groups + 1)
    cum = np.zeros((n_rows + 1, n_cols), dtype=np.int64)
    for r in range(n_rows):
        for j in range(n_cols):
            cum[r + 1, j] = cum[r, j] + counts[r, j]
    n = 0
    col_term = 0.0
    for j in range(n_cols):
        n += cum[n_rows, j]
        col_term += xlog2x(float(cum[n_rows, j]))
    if n == 0 or n_rows < 2:
        return out
    nf = float(n)
    # H(columns) in bits; I = H(columns) + sum over groups of F / n.
    h_cols = np.log2(nf) - col_term / nf
    top = min(max_groups, n_rows)

    # Level 1: one group covering rows 0 .. t-1.
    prev = np.empty(n_rows + 1)
    prev[0] = -np.inf
    for t in range(1, n_rows + 1):
        prev[t] = _group_gain(cum, 0, t)

    if top == 2:
        # Only the full prefix is needed at level 2: O(R * L) work, no table.
        best = -np.inf
        for s in range(1, n_rows):
            v = prev[s] + _group_gain(cum, s, n_rows)
            if v > best:
                best = v
        out[2] = h_cols + best / nf
    else:
        gain = np.empty((n_rows + 1, n_rows + 1))
        for s in range(n_rows):
            for t in range(s + 1, n_rows + 1):
                gain[s, t] = _group_gain(cum, s, t)
        cur = np.empty(n_rows + 1)
        for k in range(2, top + 1):
            for t in range(n_rows + 1):
                cur[t] = -np.inf
            t_first = n_rows if k == top else k
            for t in range(t_first, n_rows + 1):
                best = -np.inf
                for s in range(k - 1, t):
                    v = prev[s] + gain[s, t]
                    if v > best:
                        best = v
                cur[t] = best
            out[k] = h_cols + cur[n_rows] / nf
            for t in range(n_rows + 1):
                prev[t] = cur[t]
    for k in range(top + 1, max_groups + 1):
        out[k] = out[top]
    for k in range(2, max_groups + 1):
        if out[k] < 0.0:  # rounding below an exact zero
            out[k] = 0.0
    return out


@njit(nogil=True, cache=False)
def family_scores(flat_counts, offsets, master_rows, fixed_bins, max_groups, out):
    """Run :func:`optimize_axis` on every master grid of a family.

    Parameters
    ----------
    flat_counts : int64[total]
        All master count matrices, grid ``g`` stored row-major at
        ``offsets[g] : offsets[g] + master_rows[g] * fixed_bins[g]``.
    offsets, master_rows, fixed_bins, max_groups : int64[G]
    out : float64[G, K]
        Filled with normalised scores: ``out[g, k] = I_k / log2(k)`` for
        ``2 <= k <= max_groups[g]`` (``k <= fixed_bins[g]`` always, so ``log2 k``
        is ``log2 min(k, l)``); other entries are left untouched.
    """
    for g in range(offsets.shape[0]):
        size = master_rows[g] * fixed_bins[g]
        block = flat_counts[offsets[g]:offsets[g] + size].reshape(
            (master_rows[g], fixed_bins[g]))
        info = optimize_axis(block, max_groups[g])
        for k in range(2, max_groups[g] + 1):
            score = info[k] / np.log2(float(k))
            out[g, k] = min(score, 1.0)


def legacy_grid_scores(counts, family):
    """``[g, k]`` = normalised MI of grid ``g`` with ``k`` groups (NaN elsewhere)."""
    offsets, rows, fixed, kmax = family.grid_arrays()
    out = np.full((family.n_grids, int(kmax.max()) + 1), np.nan)
    family_scores(np.ascontiguousarray(counts, dtype=np.int64), offsets, rows, fixed, kmax, out)
    return out


def legacy_micr_from_counts(counts, family) -> float:
    """MICr of one pair from its flat master counts, as the old read-out computed it."""
    scores = legacy_grid_scores(counts, family)
    best = -1.0
    for g, grid in enumerate(family.grids):
        for k in range(2, grid.max_groups + 1):
            if scores[g, k] > best:
                best = scores[g, k]
    return float(min(max(best, 0.0), 1.0))
