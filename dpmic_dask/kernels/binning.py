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
    if u <= 0.0:
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

    ``table`` (int64[2**16]) holds, for each value ``t`` of the top 16 bits, the
    number of boundaries below ``t << 16``; a short forward scan finishes the job.
    """
    idx = table[position >> TABLE_SHIFT]
    m = boundaries.shape[0]
    while idx < m and boundaries[idx] <= position:
        idx += 1
    return idx


@njit(nogil=True, cache=True)
def bin_column(values, lo, width, fixed_bounds, fixed_table, row_bounds, row_table,
               fixed_out, row_out):
    """Bin one column into both axis refinements in a single pass.

    Parameters
    ----------
    values : float64[n]
    lo, width : float64, the public lower bound and ``hi - lo``
    fixed_bounds, row_bounds : int64[m1], int64[m2], sorted refinement boundaries
    fixed_table, row_table : int64[2**16], look-up tables for the boundaries
    fixed_out, row_out : int32[n], filled with refinement indices
    """
    for i in range(values.shape[0]):
        p = fixed_point_position(values[i], lo, width)
        fixed_out[i] = refinement_index(p, fixed_bounds, fixed_table)
        row_out[i] = refinement_index(p, row_bounds, row_table)


@njit(nogil=True, cache=True)
def add_histogram_2d(row_index, col_index, out):
    """Add one count per row to ``out[row_index[i], col_index[i]]``.

    ``row_index``, ``col_index``: int32[n]; ``out``: int64[r, c], updated in place.
    """
    for i in range(row_index.shape[0]):
        out[row_index[i], col_index[i]] += 1
