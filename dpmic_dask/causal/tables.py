"""Contingency tables of a PC level, counted in one pass over the data.

Every conditional-independence test of the PC algorithm reads one table of
``(strata of the conditioning set, x bins, y bins)`` counts. A level needs many
of them; :class:`LevelTables` lays them out in one flat int64 vector, and
:func:`count_partition` fills that vector from one partition (plain pandas and
numpy, numba for the counting loop), so that a backend's ``reduce`` sums the
partitions' vectors exactly: one pass over the data per level, whatever the
number of tests.

Columns are binned first, per partition, into small integer codes:

* a column with public bounds ``(lo, hi)`` into a range equipartition of
  ``bins`` parts by the package's fixed-point rule (SPEC section 2: the 32-bit
  position ``q`` of a value is in bin ``(q * bins) >> 32``; values outside the
  bounds are clamped);
* a column with a public category list into its categories, in the list's
  order, plus one last "other" bin for any value not in the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from numba import njit

from dpmic_dask.stats.kernels.binning import equipartition_bins, fixed_point_positions
from dpmic_dask.stats.kindbase import number_axis


@dataclass(frozen=True)
class ColumnCoding:
    """How one column becomes codes ``0 .. size - 1`` (public: bounds or categories)."""

    name: object
    size: int
    bounds: tuple[float, float] | None = None
    categories: tuple | None = None
    #: bounded columns: the bin of each of ``len(lookup)`` equal-width fine bins of
    #: the bounds, one byte each (public: released bins), instead of ``size``
    #: equal-width bins (bytes: cheap to hash, tokenize and ship to the workers)
    lookup: bytes | None = None

    def codes(self, values: np.ndarray) -> tuple[np.ndarray, bool]:
        """``(codes as uint8, whether any value was missing)``; a missing value gets
        code 0 (the release refuses missing values before its charge)."""
        if self.categories is not None:
            return self._category_codes(values)
        if self.lookup is not None:
            fine, missing = equal_width_bins(values, self.bounds, len(self.lookup))
            return _as_array(self.lookup)[fine], bool(missing.any())
        out, missing = equal_width_bins(values, self.bounds, self.size)
        return out.astype(np.uint8), bool(missing.any())

    def _category_codes(self, values) -> tuple[np.ndarray, bool]:
        series = np.asarray(values)
        # NaN, None, NaT and pd.NA alike (an object or categorical column too)
        absent = np.asarray(pd.isna(series), dtype=bool)
        out = np.full(series.shape[0], self.size - 1, dtype=np.uint8)  # "other"
        present = series[~absent] if absent.any() else series  # pd.NA never compared
        codes = out[~absent] if absent.any() else out
        for code, category in enumerate(self.categories):  # type: ignore[arg-type]
            codes[present == category] = code
        if absent.any():
            out[~absent] = codes
        return out, bool(absent.any())


def equal_width_bins(values, bounds, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Each value's bin (int64) among ``n_bins`` equal-width bins of ``bounds``
    (values clamped into them; SPEC section 2's fixed-point positions), and where
    values are missing (NaN, counted in bin 0; the releases refuse them before
    their charge)."""
    x = np.asarray(values, dtype=np.float64)
    missing = np.isnan(x)
    lo, hi = bounds
    positions = np.empty(x.shape[0], dtype=np.int64)
    fixed_point_positions(np.where(missing, lo, x), lo, hi - lo, positions)
    out = np.empty(x.shape[0], dtype=np.int64)
    equipartition_bins(positions, n_bins, out)
    return out, missing


def _as_array(lookup: bytes) -> np.ndarray:
    return np.frombuffer(lookup, dtype=np.uint8)


@dataclass(frozen=True)
class TableKey:
    """One test's table: the pair ``(x, y)`` (column indices, ``x < y``) given the
    conditioning set ``cond`` (sorted column indices)."""

    x: int
    y: int
    cond: tuple[int, ...]


@dataclass(frozen=True)
class LevelTables:
    """The flat layout of every table one PC level reads.

    Table ``t`` occupies ``offsets[t] : offsets[t] + cells[t]`` and is read as an
    array of shape ``(strata, kx, ky)``; the stratum of a row is its conditioning
    codes in mixed radix (the first conditioning column most significant).
    """

    codings: tuple[ColumnCoding, ...]
    keys: tuple[TableKey, ...]

    def shape(self, key: TableKey) -> tuple[int, int, int]:
        strata = 1
        for c in key.cond:
            strata *= self.codings[c].size
        return strata, self.codings[key.x].size, self.codings[key.y].size

    @cached_property
    def _layout(self):
        width = 2 + max((len(k.cond) for k in self.keys), default=0)
        cols = np.zeros((len(self.keys), width), dtype=np.int64)
        mults = np.zeros((len(self.keys), width), dtype=np.int64)
        offsets = np.zeros(len(self.keys) + 1, dtype=np.int64)
        for t, key in enumerate(self.keys):
            strata, kx, ky = self.shape(key)
            cols[t, 0], mults[t, 0] = key.x, ky
            cols[t, 1], mults[t, 1] = key.y, 1
            step = kx * ky
            for j, c in enumerate(reversed(key.cond)):
                cols[t, 2 + j], mults[t, 2 + j] = c, step
                step *= self.codings[c].size
            offsets[t + 1] = offsets[t] + strata * kx * ky
        return cols, mults, offsets

    @property
    def cells(self) -> int:
        return int(self._layout[2][-1])

    def table(self, counts: np.ndarray, t: int) -> np.ndarray:
        """Table ``t`` of the summed ``counts`` as ``(strata, kx, ky)``."""
        offsets = self._layout[2]
        return counts[offsets[t]:offsets[t + 1]].reshape(self.shape(self.keys[t]))


@njit(nogil=True, cache=True)
def add_table_counts(codes, cols, mults, offsets, out):
    """Add every row of ``codes`` (uint8[p, n], one column per row of the array) to
    every table: table ``t``'s cell is ``offsets[t] + sum_k codes[cols[t, k], r] *
    mults[t, k]`` (int64 arrays; unused slots have multiplier 0); ``out``
    (int64[cells]) is updated in place. One table at a time, so its cells stay in
    cache."""
    n = codes.shape[1]
    tables = cols.shape[0]
    width = cols.shape[1]
    index = np.empty(n, dtype=np.int64)
    for t in range(tables):
        base = offsets[t]
        for r in range(n):
            index[r] = base
        for k in range(width):
            m = mults[t, k]
            if m == 0:
                continue
            column = codes[cols[t, k]]
            for r in range(n):
                index[r] += column[r] * m
        for r in range(n):
            out[index[r]] += 1


@dataclass
class LevelCounts:
    """The summed counts of one level (what a partition returns, and their sum)."""

    counts: np.ndarray
    missing: np.ndarray
    rows: int

    def __add__(self, other: LevelCounts) -> LevelCounts:
        return LevelCounts(self.counts + other.counts, self.missing | other.missing,
                           self.rows + other.rows)


def count_partition(frame, layout: LevelTables) -> LevelCounts:
    """Counts of one partition (a pandas frame holding the coded columns, in the
    order of ``layout.codings``) for every table of ``layout``."""
    n = len(frame)
    codes = np.empty((len(layout.codings), n), dtype=np.uint8)
    missing = np.zeros(len(layout.codings), dtype=bool)
    for j, coding in enumerate(layout.codings):
        column = frame[coding.name]
        values = column.to_numpy() if coding.bounds is None else number_axis(column)
        codes[j], missing[j] = coding.codes(values)
    out = np.zeros(layout.cells, dtype=np.int64)
    cols, mults, offsets = layout._layout
    if n and len(layout.keys):
        add_table_counts(codes, cols, mults, offsets[:-1].copy(), out)
    return LevelCounts(out, missing, n)


def combine_counts(a: LevelCounts, b: LevelCounts) -> LevelCounts:
    """Exact, associative sum of two partitions' counts."""
    return a + b
