"""Master-grid counts of a column pair: bin once, count once, read every grid off.

Per row and pair the cost is two histogram increments (one per orientation),
whatever ``B``: each column is binned into the common refinement of all fixed-axis
sizes and of all master-row sizes, and every master grid is read off the
refinement histograms by 2-D prefix sums. Counts are exact integers, so counts of
any split of the rows add up to the counts of the whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grids import GridFamily
from .kernels.binning import add_histogram_2d, bin_column, read_off_grids


@dataclass(frozen=True)
class ColumnBins:
    """One column's refinement indices: ``fixed`` and ``rows`` (int32[n] each)."""

    fixed: np.ndarray
    rows: np.ndarray


def bin_values(values: np.ndarray, bounds: tuple[float, float], family: GridFamily) -> ColumnBins:
    """Bin float64 ``values`` (no NaN; clamped to checked ``bounds``) for ``family``."""
    lo, hi = bounds
    n = values.shape[0]
    fixed = np.empty(n, dtype=np.int32)
    rows = np.empty(n, dtype=np.int32)
    bin_column(
        values, lo, hi - lo,
        family.fixed_boundaries, family.fixed_table,
        family.row_boundaries, family.row_table,
        fixed, rows,
    )
    return ColumnBins(fixed, rows)


def refinement_histograms(x: ColumnBins, y: ColumnBins, family: GridFamily) -> np.ndarray:
    """Refinement histograms of a pair, int64[2, row cells, fixed cells].

    Index 0 is orientation ``"x"`` (y's row cells by x's fixed cells), index 1
    orientation ``"y"`` (x's row cells by y's fixed cells).
    """
    hist = np.zeros((2,) + family.refinement_shape, dtype=np.int64)
    add_histogram_2d(y.rows, x.fixed, hist[0])
    add_histogram_2d(x.rows, y.fixed, hist[1])
    return hist


def new_prefix_scratch(family: GridFamily) -> np.ndarray:
    """Scratch array for the 2-D prefix sums of one orientation's histogram."""
    rows, cols = family.refinement_shape
    return np.empty((rows + 1, cols + 1), dtype=np.int64)


def master_counts(hist: np.ndarray, family: GridFamily) -> np.ndarray:
    """Read every master grid off a pair's refinement histograms.

    Returns the pair's flat int64 count vector (layout in :class:`GridFamily`).
    """
    out = np.empty(family.n_cells, dtype=np.int64)
    read_off_grids(hist, new_prefix_scratch(family), *family.kernel_layout, out)
    return out


def pair_counts(x: np.ndarray, y: np.ndarray, x_bounds, y_bounds, family: GridFamily) -> np.ndarray:
    """Flat master counts of the pair ``(x, y)`` for ``family`` (checked inputs)."""
    hist = refinement_histograms(
        bin_values(x, x_bounds, family), bin_values(y, y_bounds, family), family
    )
    return master_counts(hist, family)


def grid_block(counts: np.ndarray, family: GridFamily, index: int) -> np.ndarray:
    """View of grid ``index``'s ``master_rows x fixed_bins`` matrix in flat ``counts``."""
    g = family.grids[index]
    return counts[g.offset:g.offset + g.n_cells].reshape(g.master_rows, g.fixed_bins)
