"""Exact fixed-point binning rules (SPEC section 2), as small pure functions.

A value ``x`` with public bounds ``[lo, hi]`` has the 32-bit position
``q = min(floor(clamp((x - lo) / (hi - lo), 0, 1) * 2**32), 2**32 - 1)``; its bin in a
range equipartition of ``s`` bins is ``(q * s) >> 32``. Master boundaries are
therefore exact integer positions, and the sorted union of the boundaries of any
set of sizes is a common refinement of all of them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .kernels.binning import (
    POSITION_BITS,
    TABLE_SHIFT,
    equipartition_bins,
    fixed_point_positions,
)


def positions(values: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """Fixed-point positions (int64) of float64 ``values`` within checked ``bounds``."""
    lo, hi = bounds
    out = np.empty(values.shape[0], dtype=np.int64)
    fixed_point_positions(values, lo, hi - lo, out)
    return out


def bins(values: np.ndarray, bounds: tuple[float, float], n_bins: int) -> np.ndarray:
    """Bin index (int64) of each value in a range equipartition of ``n_bins`` bins."""
    pos = positions(values, bounds)
    out = np.empty_like(pos)
    equipartition_bins(pos, n_bins, out)
    return out


def equipartition_boundaries(n_bins: int) -> np.ndarray:
    """Positions ``ceil(j * 2**32 / n_bins)`` for ``j = 1 .. n_bins - 1`` (int64).

    A position ``q`` is in bin ``j`` or above exactly when ``q`` is at least the
    ``j``-th boundary.
    """
    j = np.arange(1, n_bins, dtype=np.int64)
    return -((-j << POSITION_BITS) // n_bins)


@lru_cache(maxsize=64)
def _refinement(sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    parts = [equipartition_boundaries(s) for s in sizes]
    boundaries = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
    starts = np.arange(2 ** (POSITION_BITS - TABLE_SHIFT), dtype=np.int64) << TABLE_SHIFT
    table = np.searchsorted(boundaries, starts, side="left").astype(np.int64)
    boundaries.setflags(write=False)
    table.setflags(write=False)
    return boundaries, table


def refinement(sizes) -> tuple[np.ndarray, np.ndarray]:
    """Common refinement of range equipartitions of the given sizes.

    Returns ``(boundaries, table)``: the sorted distinct boundary positions (int64)
    and the look-up table the binning kernel uses to find a position's cell.
    Refinement cell ``r`` holds the positions in ``[boundaries[r-1], boundaries[r])``.
    """
    return _refinement(tuple(sorted(set(int(s) for s in sizes))))


def refinement_cuts(boundaries: np.ndarray, n_bins: int) -> np.ndarray:
    """Prefix-sum cut points that read an ``n_bins`` equipartition off a refinement.

    Returns int64[n_bins + 1] ``cuts`` such that equipartition bin ``j`` is the union
    of refinement cells ``cuts[j] .. cuts[j+1]-1``. Every boundary of the
    equipartition must be one of ``boundaries``.
    """
    own = equipartition_boundaries(n_bins)
    idx = np.searchsorted(boundaries, own)
    if idx.size and not np.array_equal(boundaries[np.minimum(idx, boundaries.size - 1)], own):
        raise ValueError("refinement does not contain the equipartition's boundaries")
    return np.concatenate(([0], idx + 1, [boundaries.size + 1])).astype(np.int64)
