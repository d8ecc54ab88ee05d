"""OptimizeAxis: exact dynamic program over contiguous groupings of master rows.

These keep the per-pair cost down without changing what is computed:

* master rows with no mass are dropped before the dynamic program and so are fixed
  columns with no mass (a zero column adds ``0 log 0 = 0`` to every group; a zero
  row joined to a neighbouring group changes no group's counts, so the best
  grouping into ``k`` groups of the remaining rows is the best into ``k`` groups of
  all rows, and into ``R'`` groups when ``k`` exceeds the ``R'`` rows left);
* ``v log2 v`` of an integer count is read from a table (:func:`xlog2x_table`)
  built with the same expression, so table and direct evaluation agree bit for bit;
* one set of work arrays serves every grid of a family, and a family's MICr is
  reduced in the kernel (:func:`family_max`);
* the best split point is found with four independent running maxima.

Every group's gain is the same floating-point sum, over the same columns in the
same order, as when it is evaluated on the full matrix, so the scores equal those
of the plain dynamic program up to the order in which group gains are added
(the unit tests compare both to 1e-12). The sums are not reassociated (no
``fastmath``): vector lanes would make a score depend on the CPU a worker has and
on whether a count is read from the table or evaluated, by a few ulps.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True, inline="always")
def xlog2x(v):
    """``v * log2(v)`` with ``0 log 0 = 0`` (v a non-negative float)."""
    if v <= 0.0:
        return 0.0
    return v * np.log2(v)


@njit(nogil=True, cache=True)
def xlog2x_table(size):
    """float64[size]: entry ``v`` is ``xlog2x(float(v))``."""
    out = np.empty(size)
    for v in range(size):
        out[v] = xlog2x(float(v))
    return out


@njit(nogil=True, cache=True, inline="always")
def _phi(v, table):
    """``xlog2x(float(v))`` for an integer ``v``, from ``table`` when it covers ``v``."""
    if 0 <= v < table.shape[0]:
        return table[v]
    return xlog2x(float(v))


@njit(nogil=True, cache=True)
def _compress(counts, cum, tot, cols):
    """Prefix sums over the non-empty rows and columns of ``counts``.

    Writes ``cum[r, j]`` (int64, rows ``0 .. R'``, columns ``0 .. L'-1``) and the
    row totals' prefix ``tot[r]``; returns ``(R', L', col_term)`` where
    ``col_term = sum_j xlog2x(s_j)`` over the column masses (all columns, in order).
    ``cols`` is an int64 work array of at least ``L`` entries.
    """
    n_rows, n_cols = counts.shape
    tot[0] = 0
    for j in range(n_cols):
        cum[0, j] = 0
    kept = 0
    for r in range(n_rows):
        mass = 0
        for j in range(n_cols):
            v = counts[r, j]
            cum[kept + 1, j] = cum[kept, j] + v
            mass += v
        if mass != 0:  # counts are non-negative: a row without mass is dropped
            tot[kept + 1] = tot[kept] + mass
            kept += 1
    n_keep = 0
    col_term = 0.0
    for j in range(n_cols):
        col_term += xlog2x(float(cum[kept, j]))
        if cum[kept, j] != 0:
            cols[n_keep] = j
            n_keep += 1
    if n_keep < n_cols:
        for r in range(1, kept + 1):
            for j in range(n_keep):
                cum[r, j] = cum[r, cols[j]]
    return kept, n_keep, col_term


@njit(nogil=True, cache=True, inline="always")
def _gain(cum, tot, s, t, n_cols, table, covered):
    """``F(s..t) = sum_j g(q_j) - g(q)`` for compressed rows ``s .. t-1``;
    ``covered``: ``table`` holds every count up to the grid's total, so no count
    needs the range check."""
    acc = 0.0
    upper = cum[t]
    lower = cum[s]
    if covered:
        for j in range(n_cols):
            acc += table[upper[j] - lower[j]]
        return acc - table[tot[t] - tot[s]]
    for j in range(n_cols):
        acc += _phi(upper[j] - lower[j], table)
    return acc - _phi(tot[t] - tot[s], table)


@njit(nogil=True, cache=True)
def _optimize_into(counts, max_groups, table, out, cum, tot, cols, gain, prev, cur):
    """:func:`optimize_axis` writing into ``out[0 : max_groups + 1]`` with caller-owned
    work arrays (``cum`` int64[>= R+1, >= L], ``tot`` int64[>= R+1], ``cols``
    int64[>= L], ``gain`` float64[>= R+1, >= R+1], ``prev`` and ``cur``
    float64[>= R+1])."""
    for k in range(max_groups + 1):
        out[k] = 0.0
    n_rows, n_cols, col_term = _compress(counts, cum, tot, cols)
    n = tot[n_rows]
    if n == 0 or n_rows < 2 or n_cols < 2:
        # One non-empty row or column: every grouping has zero information.
        return
    nf = float(n)
    covered = table.shape[0] > n
    # H(columns) in bits; I = H(columns) + sum over groups of F / n.
    h_cols = np.log2(nf) - col_term / nf
    top = min(max_groups, n_rows)

    # Level 1: one group covering rows 0 .. t-1.
    prev[0] = -np.inf
    for t in range(1, n_rows + 1):
        prev[t] = _gain(cum, tot, 0, t, n_cols, table, covered)

    if top == 2:
        # Only the full prefix is needed at level 2: O(R * L) work, no table.
        best = -np.inf
        for s in range(1, n_rows):
            v = prev[s] + _gain(cum, tot, s, n_rows, n_cols, table, covered)
            if v > best:
                best = v
        out[2] = h_cols + best / nf
    else:
        # gain[t, s] = F(s..t): the dynamic program reads a row of it per end point.
        for s in range(1, n_rows):
            for t in range(s + 1, n_rows + 1):
                gain[t, s] = _gain(cum, tot, s, t, n_cols, table, covered)
        for k in range(2, top + 1):
            for t in range(n_rows + 1):
                cur[t] = -np.inf
            t_first = n_rows if k == top else k
            for t in range(t_first, n_rows + 1):
                # max over split points s of prev[s] + F(s..t), in four independent
                # running maxima (a maximum is exact in any order)
                row = gain[t]
                b0 = -np.inf
                b1 = -np.inf
                b2 = -np.inf
                b3 = -np.inf
                s = k - 1
                while s + 4 <= t:
                    v0 = prev[s] + row[s]
                    v1 = prev[s + 1] + row[s + 1]
                    v2 = prev[s + 2] + row[s + 2]
                    v3 = prev[s + 3] + row[s + 3]
                    if v0 > b0:
                        b0 = v0
                    if v1 > b1:
                        b1 = v1
                    if v2 > b2:
                        b2 = v2
                    if v3 > b3:
                        b3 = v3
                    s += 4
                while s < t:
                    v0 = prev[s] + row[s]
                    if v0 > b0:
                        b0 = v0
                    s += 1
                if b1 > b0:
                    b0 = b1
                if b3 > b2:
                    b2 = b3
                cur[t] = b2 if b2 > b0 else b0
            out[k] = h_cols + cur[n_rows] / nf
            for t in range(n_rows + 1):
                prev[t] = cur[t]
    for k in range(top + 1, max_groups + 1):
        out[k] = out[top]
    for k in range(2, max_groups + 1):
        if out[k] < 0.0:  # rounding below an exact zero
            out[k] = 0.0


@njit(nogil=True, cache=True)
def optimize_axis(counts, max_groups):
    """Best mutual information for every number of row groups.

    Parameters
    ----------
    counts : int64[R, L]
        Master count matrix: ``R`` master rows (the axis being grouped, in order)
        by ``L`` fixed columns, non-negative.
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
    size = n_rows + 1
    width = max(n_cols, 1)
    _optimize_into(counts, max_groups, np.zeros(0), out,
                   np.empty((size, width), dtype=np.int64), np.empty(size, dtype=np.int64),
                   np.empty(width, dtype=np.int64),
                   np.empty((size, size)), np.empty(size), np.empty(size))
    return out


@njit(nogil=True, cache=True)
def _family_pass(flat_counts, offsets, master_rows, fixed_bins, max_groups, table, out):
    """Shared loop of :func:`family_scores` and :func:`family_max`: scores of grid
    ``g`` go to ``out[g]`` when ``out`` has a row per grid, else the family's
    largest score is returned."""
    n_grids = offsets.shape[0]
    rows_top = 1
    cols_top = 1
    k_top = 2
    for g in range(n_grids):
        rows_top = max(rows_top, master_rows[g])
        cols_top = max(cols_top, fixed_bins[g])
        k_top = max(k_top, max_groups[g])
    size = rows_top + 1
    cum = np.empty((size, cols_top), dtype=np.int64)
    tot = np.empty(size, dtype=np.int64)
    cols = np.empty(cols_top, dtype=np.int64)
    gain = np.empty((size, size))
    prev = np.empty(size)
    cur = np.empty(size)
    info = np.empty(k_top + 1)
    keep = out.shape[0] == n_grids
    best = -1.0
    for g in range(n_grids):
        size_g = master_rows[g] * fixed_bins[g]
        block = flat_counts[offsets[g]:offsets[g] + size_g].reshape(
            (master_rows[g], fixed_bins[g]))
        _optimize_into(block, max_groups[g], table, info, cum, tot, cols, gain, prev, cur)
        for k in range(2, max_groups[g] + 1):
            score = min(info[k] / np.log2(float(k)), 1.0)
            if keep:
                out[g, k] = score
            if score > best:
                best = score
    return best


@njit(nogil=True, cache=True)
def family_scores(flat_counts, offsets, master_rows, fixed_bins, max_groups, out, table):
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
    table : float64[V]
        :func:`xlog2x_table` of any size (0 evaluates every logarithm).
    """
    _family_pass(flat_counts, offsets, master_rows, fixed_bins, max_groups, table, out)


@njit(nogil=True, cache=True)
def family_max(flat_counts, offsets, master_rows, fixed_bins, max_groups, table):
    """The largest normalised score of :func:`family_scores` over every grid and
    ``k`` (``-1.0`` for an empty family), without the score table."""
    return _family_pass(flat_counts, offsets, master_rows, fixed_bins, max_groups, table,
                        np.empty((0, 0)))
