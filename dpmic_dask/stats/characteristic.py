"""Characteristic matrix and MICr from master counts (counts in, numbers out).

The same functions serve in-memory arrays and the distributed engine: they only
see a pair's flat master-count vector (:mod:`dpmic_dask.counts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dpmic_dask.stats.grids import GridFamily
from dpmic_dask.stats.kernels.optimize import family_max, family_scores, xlog2x_table

#: Largest ``v log2 v`` table kept per process (entries; 1 MiB of float64, about a
#: core's L2 cache: at 10**6 rows a table of every count was slower, 1.9 against
#: 1.5 ms per pair). Counts above it are evaluated directly, with the same result.
TABLE_LIMIT = 1 << 17

_table = np.zeros(0)


def xlog2x_lookup(total: int) -> np.ndarray:
    """A ``v log2 v`` table covering ``0 .. total`` (or :data:`TABLE_LIMIT` entries),
    shared by every call in the process and grown on demand."""
    global _table
    need = min(int(total) + 1, TABLE_LIMIT)
    table = _table
    if table.size < need:
        table = xlog2x_table(min(max(need, 2 * table.size), TABLE_LIMIT))
        table.setflags(write=False)
        _table = table
    return table


@lru_cache(maxsize=64)
def _layout(family: GridFamily) -> tuple[np.ndarray, ...]:
    """``family.grid_arrays()``, built once per family (families are cached too)."""
    arrays = family.grid_arrays()
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _as_counts(counts) -> np.ndarray:
    """Contiguous int32 or int64 counts for the kernels (a task's exact int32 counts
    are read as they are, not copied to int64)."""
    counts = np.asarray(counts)
    dtype = counts.dtype if counts.dtype in (np.int32, np.int64) else np.int64
    return np.ascontiguousarray(counts, dtype=dtype)


def _table_for(counts: np.ndarray, family: GridFamily) -> np.ndarray:
    """The ``v log2 v`` table sized by the first grid's total (the number of rows for
    exact counts). Any size gives the same scores; larger values are evaluated."""
    first = family.grids[0]
    return xlog2x_lookup(int(counts[first.offset:first.offset + first.n_cells].sum()))


@dataclass(frozen=True)
class CharacteristicMatrix:
    """Normalised mutual information of the best grid for every size.

    Attributes
    ----------
    matrix : float64[B//2 + 1, B//2 + 1]
        ``matrix[kx, ky]`` is the best ``I / log2 min(kx, ky)`` over the family's
        grids with ``kx`` bins on x and ``ky`` on y; NaN where no grid has that size.
    mic : float
        The maximum entry (MICr when built from MICr's grid family), in ``[0, 1]``.
    x_bins, y_bins : int
        Grid size ``(kx, ky)`` of the first maximal entry.
    orientation : str
        ``"x"`` if the maximum was attained with x as the fixed axis, else ``"y"``.
    """

    matrix: np.ndarray
    mic: float
    x_bins: int
    y_bins: int
    orientation: str


def grid_scores(counts: np.ndarray, family: GridFamily) -> np.ndarray:
    """Score table float64[G, kmax_max + 1]: ``[g, k]`` = normalised MI of grid ``g`` with
    ``k`` groups (NaN where ``k`` is not allowed for that grid)."""
    offsets, rows, fixed, kmax = _layout(family)
    counts = _as_counts(counts)
    out = np.full((family.n_grids, int(kmax.max()) + 1), np.nan)
    family_scores(counts, offsets, rows, fixed, kmax, out, _table_for(counts, family))
    return out


def characteristic_matrix(counts: np.ndarray, family: GridFamily) -> CharacteristicMatrix:
    """Characteristic matrix of one pair from its flat master counts."""
    scores = grid_scores(counts, family)
    size = family.B // 2 + 1
    matrix = np.full((size, size), np.nan)
    best = (-1.0, 0, 0, "x")
    for g, grid in enumerate(family.grids):
        for k in range(2, grid.max_groups + 1):
            value = scores[g, k]
            if grid.orientation == "x":
                kx, ky = grid.fixed_bins, k
            else:
                kx, ky = k, grid.fixed_bins
            if np.isnan(matrix[kx, ky]) or value > matrix[kx, ky]:
                matrix[kx, ky] = value
            if value > best[0]:
                best = (value, kx, ky, grid.orientation)
    mic, kx, ky, orientation = best
    return CharacteristicMatrix(matrix, float(min(max(mic, 0.0), 1.0)), kx, ky, orientation)


def micr_from_counts(counts: np.ndarray, family: GridFamily) -> float:
    """MICr of one pair from its flat master counts (non-private): the largest entry
    of :func:`characteristic_matrix`, reduced in the kernel."""
    counts = _as_counts(counts)
    offsets, rows, fixed, kmax = _layout(family)
    best = family_max(counts, offsets, rows, fixed, kmax, _table_for(counts, family))
    return float(min(max(best, 0.0), 1.0))
