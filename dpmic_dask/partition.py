"""Per-partition counting: plain pandas/numpy in, integer counts out.

Nothing here knows about Dask. :func:`partition_counts` turns one partition of
a table into :class:`PartialCounts`; partials of any split of the rows add up
(:func:`combine_partials`) to the partial of the whole table.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from .errors import InvalidDataError
from .grids import GridFamily
from .kernels.binning import bin_column, count_pairs


@dataclass(frozen=True)
class CountSpec:
    """What to count: the columns, their public bounds and fill values, the grids.

    ``fill`` maps a column to the public value that replaces its missing values,
    or is ``None`` when missing values are to be reported (``nulls="raise"``).
    """

    columns: tuple[str, ...]
    bounds: tuple[tuple[float, float], ...]
    fill: tuple[float, ...] | None
    family: GridFamily

    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """Column index pairs ``(i, j)``, ``i < j``, in a fixed order."""
        return tuple(combinations(range(len(self.columns)), 2))


@dataclass(frozen=True)
class PartialCounts:
    """Exact counts of some rows: ``counts[p]`` is pair ``p``'s flat master counts
    (int32 for one partition, int64 once summed),
    ``rows`` the number of rows, ``missing[k]`` whether column ``k`` had a missing
    value (only meaningful with ``nulls="raise"``)."""

    counts: np.ndarray
    rows: int
    missing: np.ndarray


def empty_partial(spec: CountSpec) -> PartialCounts:
    return PartialCounts(
        np.zeros((len(spec.pairs), spec.family.n_cells), dtype=np.int64),
        0,
        np.zeros(len(spec.columns), dtype=bool),
    )


def column_values(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as float64 with missing values (None, NA, NaN) as NaN.

    A value that is not a number is reported by column name only.
    """
    try:
        return frame[name].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise InvalidDataError(f"column {name!r} holds values that are not numbers") from None


def partition_counts(frame: pd.DataFrame, spec: CountSpec) -> PartialCounts:
    """Count one partition into every master grid of every pair."""
    family = spec.family
    n = len(frame)
    n_cols = len(spec.columns)
    fixed = np.empty((n_cols, n), dtype=np.int32)
    rows = np.empty((n_cols, n), dtype=np.int32)
    missing = np.zeros(n_cols, dtype=bool)
    for k, name in enumerate(spec.columns):
        values = column_values(frame, name)
        nan = np.isnan(values)
        if nan.any():
            missing[k] = True
            if spec.fill is None:
                continue  # the release will be refused; nothing to count
            values = np.where(nan, spec.fill[k], values)
        lo, hi = spec.bounds[k]
        bin_column(values, lo, hi - lo, family.fixed_boundaries, family.fixed_table,
                   family.row_boundaries, family.row_table, fixed[k], rows[k])
    pairs = np.array(spec.pairs, dtype=np.int64).reshape(-1, 2)
    out = np.zeros((pairs.shape[0], family.n_cells), dtype=np.int64)
    if n and pairs.shape[0] and not (missing.any() and spec.fill is None):
        hist = np.empty((2,) + family.refinement_shape, dtype=np.int64)
        prefix = np.empty((hist.shape[1] + 1, hist.shape[2] + 1), dtype=np.int64)
        count_pairs(fixed, rows, pairs[:, 0].copy(), pairs[:, 1].copy(), hist, prefix,
                    *family.kernel_layout, out)
    # A partition's counts fit in int32 (exactly); halving them halves the memory of
    # partials waiting to be summed. Sums are always int64 (combine_partials).
    if n < 2**31:
        out = out.astype(np.int32)
    return PartialCounts(out, n, missing)


def combine_partials(parts) -> PartialCounts:
    """Exact sum of partial counts (any order, any grouping)."""
    parts = list(parts)
    counts = parts[0].counts.astype(np.int64)  # a copy, widened before any addition
    missing = parts[0].missing.copy()
    rows = parts[0].rows
    for part in parts[1:]:
        counts += part.counts
        missing |= part.missing
        rows += part.rows
    return PartialCounts(counts, rows, missing)
