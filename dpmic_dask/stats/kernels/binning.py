"""Fixed-point binning and histogram kernels (SPEC section 2)."""

from __future__ import annotations

import numpy as np
from numba import njit

#: Positions are 32-bit fixed-point fractions of the public range.
POSITION_BITS = 32
POSITION_SCALE = float(2**POSITION_BITS)
POSITION_MAX = 2**POSITION_BITS - 1
#: Refinement look-up tables are indexed by the top bits of a position.
TABLE_SHIFT = 16


@njit(nogil=True, cache=True, inline="always")
def fixed_point_position(value, lo, width):
    """Return the 32-bit fixed-point position (int64) of ``value`` in ``[lo, lo+width]``.

    ``u = (value - lo) / width`` in IEEE double, clamped to ``[0, 1]`` (so +-inf
    clamp too); the position is ``min(floor(u * 2**32), 2**32 - 1)``.
    """
    u = (value - lo) / width
    if not u > 0.0:  # also catches NaN, which callers exclude; never index with it
        return np.int64(0)
    if u >= 1.0:
        return np.int64(POSITION_MAX)
    p = np.int64(np.floor(u * POSITION_SCALE))
    return min(p, np.int64(POSITION_MAX))


@njit(nogil=True, cache=True)
def fixed_point_positions(values, lo, width, out):
    """Fill ``out`` (int64[n]) with the positions of ``values`` (float64[n])."""
    for i in range(values.shape[0]):
        out[i] = fixed_point_position(values[i], lo, width)


@njit(nogil=True, cache=True)
def equipartition_bins(positions, n_bins, out):
    """Fill ``out`` (int64[n]) with ``(position * n_bins) >> 32``, the bin in a range
    equipartition of ``n_bins`` parts, for ``positions`` (int64[n])."""
    for i in range(positions.shape[0]):
        out[i] = (positions[i] * n_bins) >> POSITION_BITS


@njit(nogil=True, cache=True, inline="always")
def refinement_index(position, boundaries, table):
    """Number of ``boundaries`` (sorted int64[m]) that are <= ``position``.

    ``table`` (uint16 or int64 [2**16]) holds, for each value ``t`` of the top 16 bits, the
    number of boundaries below ``t << 16``; a short forward scan finishes the job.
    """
    idx = np.int64(table[position >> TABLE_SHIFT])
    m = boundaries.shape[0]
    while idx < m and boundaries[idx] <= position:
        idx += 1
    return idx


#: Values a :func:`bin_column` block positions before looking their cells up
#: (its positions stay in L1).
BIN_BLOCK = 512


@njit(nogil=True, cache=True)
def bin_column(values, lo, width, bounds, table, fill, out):
    """Bin one column into a refinement; the number of missing (NaN) values.

    ``values``: float64[n]; ``lo``, ``width``: the public lower bound and
    ``hi - lo``; ``bounds``: int64[m], sorted refinement boundaries, with their
    look-up ``table`` (uint16 or int64 [2**16]); ``fill``: the column's public
    fill value for a missing value (NaN: none, and a missing value's cell is
    that of the lower bound: the caller refuses the release); ``out``: uint16[n]
    or int32[n], filled with refinement indices.

    Positions are those of :func:`fixed_point_position` (the same division,
    clamp and floor, in a branch-free form a block at a time, so that it
    vectorises: a NaN or a quotient not above 0 is 0, one at or above 1 is the
    largest position), then each block's cells are looked up
    (:func:`refinement_index`). Finding the missing values here, not in a pass
    of their own, and the blocks take 2.1 ns a value against 3.0.
    """
    n = values.shape[0]
    pos = np.empty(BIN_BLOCK, np.int64)
    missing = 0
    m = bounds.shape[0]
    for start in range(0, n, BIN_BLOCK):
        stop = min(n, start + BIN_BLOCK)
        for i in range(start, stop):
            v = values[i]
            gap = v != v
            missing += gap
            v = fill if gap else v
            u = (v - lo) / width
            u = u if u > 0.0 else 0.0  # also NaN
            u = u if u < 1.0 else 1.0
            p = np.int64(u * POSITION_SCALE)
            pos[i - start] = p if p < POSITION_MAX else POSITION_MAX
        for i in range(start, stop):
            p = pos[i - start]
            idx = np.int64(table[p >> TABLE_SHIFT])
            while idx < m and bounds[idx] <= p:
                idx += 1
            out[i] = idx
    return missing


@njit(nogil=True, cache=True)
def add_counts(index, out):
    """Add one count per value to ``out[index[i]]`` (``index``: uint16 or int32
    refinement indices; ``out``: int64, updated in place): a column's marginal,
    0.6 ns a value against 1.5 for ``numpy.bincount`` (which widens the indices
    to a new int64 array first)."""
    for i in range(index.shape[0]):
        out[index[i]] += 1


@njit(nogil=True, cache=True)
def add_histogram_2d(row_index, col_index, out):
    """Add one count per row to ``out[row_index[i], col_index[i]]``.

    ``row_index``, ``col_index``: int32[n]; ``out``: int64[r, c], updated in place.
    """
    for i in range(row_index.shape[0]):
        out[row_index[i], col_index[i]] += 1


@njit(nogil=True, cache=True)
def read_off_grids(hist, prefix, row_cuts, row_cut_start, fixed_cuts, fixed_cut_start,
                   orientation, offsets, master_rows, fixed_bins, out):
    """Read every master grid of one pair off its refinement histograms.

    Parameters
    ----------
    hist : int32 or int64 [2, Rr, Rf]
        Refinement histograms of orientations "x" (0) and "y" (1).
    prefix : [Rr + 1, Rf + 1], the dtype of ``hist``
        Scratch space for 2-D prefix sums (overwritten).
    row_cuts, fixed_cuts : int64[...]
        Concatenated cut arrays; grid ``g`` uses ``master_rows[g] + 1`` row cuts
        from ``row_cut_start[g]`` and ``fixed_bins[g] + 1`` fixed cuts from
        ``fixed_cut_start[g]``.
    orientation, offsets, master_rows, fixed_bins : int64[G]
    out : [n_cells], the dtype of ``hist``, filled with each grid's row-major counts at its offset.
    """
    n_r, n_f = hist.shape[1], hist.shape[2]
    for o in range(2):
        for f in range(n_f + 1):
            prefix[0, f] = 0
        for r in range(n_r):
            prefix[r + 1, 0] = 0
            run = 0
            for f in range(n_f):
                run += hist[o, r, f]
                prefix[r + 1, f + 1] = prefix[r, f + 1] + run
        for g in range(offsets.shape[0]):
            if orientation[g] != o:
                continue
            rs = row_cut_start[g]
            fs = fixed_cut_start[g]
            pos = offsets[g]
            for i in range(master_rows[g]):
                r0 = row_cuts[rs + i]
                r1 = row_cuts[rs + i + 1]
                for j in range(fixed_bins[g]):
                    f0 = fixed_cuts[fs + j]
                    f1 = fixed_cuts[fs + j + 1]
                    out[pos] = prefix[r1, f1] - prefix[r0, f1] - prefix[r1, f0] + prefix[r0, f0]
                    pos += 1


@njit(nogil=True, cache=True)
def add_pair_histograms(index_by_col, a, b, to_row, to_fixed, hist):
    """Add the rows of one chunk to the refinement histograms of the pair ``(a, b)``.

    ``index_by_col``: uint16 or int32 [C, n] joint refinement indices per column;
    ``to_row``, ``to_fixed``: int64 look-ups from a joint cell to its row and
    fixed refinement cells; ``hist``: [2, Rr, Rf], orientation 0 counting ``b``'s
    row cell against ``a``'s fixed cell, orientation 1 the mirror image. Two
    increments per row, whatever the grid family.
    """
    h0 = hist[0]
    h1 = hist[1]
    xa = index_by_col[a]
    xb = index_by_col[b]
    for i in range(index_by_col.shape[1]):
        ja = xa[i]
        jb = xb[i]
        h0[to_row[jb], to_fixed[ja]] += 1
        h1[to_row[ja], to_fixed[jb]] += 1
