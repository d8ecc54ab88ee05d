"""What the counting path passes around: what to count (:class:`CountSpec`, and
the :class:`Block` of pairs counted together), a binned chunk of rows
(:class:`BinnedChunk`, one small integer per value), and exact partial counts
(:class:`PartialCounts`) that add up over any split of the rows. The path itself
is :mod:`dpmic_dask.stats.counting`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dpmic_dask.stats.grids import GridFamily


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
    pair_list: tuple[tuple[int, int], ...] | None = None

    def __dask_tokenize__(self):
        # A spec is fixed by these public values; without this Dask hashes the
        # family's arrays and every pair tuple for each task that takes the spec.
        family = self.family
        return ("CountSpec", self.columns, self.bounds, self.fill, type(family).__name__,
                family.__reduce__()[1], self.pair_list)

    @cached_property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """Column index pairs ``(i, j)``, ``i < j``: ``pair_list`` if given, else every
        pair in lexicographic order (computed once)."""
        if self.pair_list is not None:
            return self.pair_list
        return tuple(combinations(range(len(self.columns)), 2))

    def blocks(self, pairs_per_block: int) -> list[Block]:
        """Split the pairs into blocks of at most ``pairs_per_block`` pairs.

        Columns are cut into groups of ``g = floor(sqrt(pairs_per_block))``; a block is
        one group with itself or with a later group, so a task reads at most ``2 g``
        columns and holds at most ``g * g`` pairs' counts. The split depends on the
        number of columns and the (public) budget only. One block when all fit.
        """
        pairs = self.pairs
        if len(pairs) <= pairs_per_block:
            return [Block(self, tuple(range(len(pairs))))]
        g = max(1, int(np.sqrt(pairs_per_block)))
        group = {col: col // g for col in range(len(self.columns))}
        by_groups: dict[tuple[int, int], list[int]] = {}
        for index, (i, j) in enumerate(pairs):
            by_groups.setdefault((group[i], group[j]), []).append(index)
        return [self.block(by_groups[key], group) for key in sorted(by_groups)]

    def block(self, indices, group) -> Block:
        """The block of the pairs at ``indices`` (in this spec's pair order), its
        columns in this spec's order; ``group`` maps a column index to its group."""
        pairs = self.pairs
        cols = sorted({c for p in indices for c in pairs[p]})
        local = {c: k for k, c in enumerate(cols)}
        spec = CountSpec(
            tuple(self.columns[c] for c in cols), tuple(self.bounds[c] for c in cols),
            None if self.fill is None else tuple(self.fill[c] for c in cols), self.family,
            tuple((local[pairs[p][0]], local[pairs[p][1]]) for p in indices))
        return Block(spec, tuple(indices), tuple(cols), tuple(group[c] for c in cols))

    def subset(self, cols) -> CountSpec:
        """The spec of some of the columns (by index), without pairs (for binning)."""
        cols = list(cols)
        return CountSpec(tuple(self.columns[c] for c in cols), tuple(self.bounds[c] for c in cols),
                         None if self.fill is None else tuple(self.fill[c] for c in cols),
                         self.family, ())


@dataclass(frozen=True)
class Block:
    """Some pairs of a :class:`CountSpec`, counted together: ``spec`` over the block's
    own columns; ``indices`` of its pairs in the whole request's pair order;
    ``columns`` the whole request's indices of the block's columns."""

    spec: CountSpec
    indices: tuple[int, ...]
    columns: tuple[int, ...] | None = None
    groups: tuple[int, ...] = ()

    def column_indices(self) -> tuple[int, ...]:
        return self.columns if self.columns is not None else tuple(range(len(self.spec.columns)))


@dataclass(frozen=True)
class PartialCounts:
    """Exact counts of some rows: ``counts[p]`` is pair ``p``'s flat master counts
    (int32 for one partition, int64 once summed), ``rows`` the number of rows,
    ``missing[k]`` whether column ``k`` had a missing value (only meaningful with
    ``nulls="raise"``)."""

    counts: np.ndarray
    rows: int
    missing: np.ndarray

    def __sizeof__(self) -> int:
        # What a scheduler sees of an object it holds (``sys.getsizeof``).
        return object.__sizeof__(self) + self.counts.nbytes + self.missing.nbytes



@dataclass(frozen=True)
class GatheredChunk:
    """A block's columns of one partition's binned chunks, without copying them:
    ``index[k]`` is a view of column ``k``'s joint indices in the chunk that holds
    it (a tuple of 1-D arrays where a :class:`BinnedChunk` has one 2-D array),
    ``missing`` and ``size`` as there. Made inside a counting task and never sent:
    copying the block's columns out was a copy of the task's whole input
    (0.07 task-s and 200 MB at 10^7 x 10)."""

    index: tuple[np.ndarray, ...]
    missing: np.ndarray
    size: int

def bin_dtype(family: GridFamily) -> np.dtype:
    """Joint refinement indices fit 16 bits at every practical ``B`` (3,044 joint
    cells, the fixed refinement's, at ``B = 200, c = 5``): half the memory and
    traffic of int32."""
    return np.dtype(np.uint16 if family.joint.cells <= 2**16 else np.int32)


def count_dtype(rows: int) -> np.dtype:
    """Counts of fewer than ``2**31`` rows are exact in int32 (histograms, prefix
    sums and master counts alike); sums of partials are always int64."""
    return np.dtype(np.int32 if rows < 2**31 else np.int64)


@dataclass(frozen=True)
class BinnedChunk:
    """Some rows binned for counting: ``index[k]`` holds column ``k``'s joint
    refinement indices (:func:`bin_dtype`, ``[C, n]``), ``missing[k]`` whether it
    had a missing value. Two bytes per value instead of the eight of a float64,
    and all a counting task needs: a partition is binned as soon as it is read,
    and its values are freed."""

    index: np.ndarray
    missing: np.ndarray

    @property
    def size(self) -> int:
        return int(self.index.shape[1])

    def __sizeof__(self) -> int:
        # What a scheduler sees of an object it holds (``sys.getsizeof``).
        return object.__sizeof__(self) + self.index.nbytes + self.missing.nbytes
