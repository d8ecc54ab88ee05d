"""Counting many pairs without holding their histograms: binned chunks are read
off into every master grid pair by pair in batches (:class:`StreamedCounts`),
through the precomputed :class:`ReadOffLayout` of a grid family (which cells of
the refinement histograms make each master cell).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.stats.countspec import (
    BinnedChunk,
    CountSpec,
    GatheredChunk,
    PartialCounts,
    count_dtype,
)
from dpmic_dask.stats.kernels.readoff import add_pair, read_off_orientation, wrap_capacity

if TYPE_CHECKING:
    from dpmic_dask.stats.grids import GridFamily


#: Pairs a :class:`StreamedCounts` counts before handing them out: counting and
#: evaluating in turn pair by pair evicted each other's working sets from the
#: cache (2.8 against 2.3 ms per pair, CPU time, at 10**5 rows and B = 200);
#: batches of a few pairs keep both phases in cache and hold 5 MB, not 26.
STREAM_BATCH = 8


class StreamedCounts:
    """Every pair's master counts of some binned chunks, counted a few pairs at a
    time (:data:`STREAM_BATCH`) as they are iterated: iteration yields each pair's
    int32 (int64 past ``2**31`` rows) counts in a buffer that later pairs
    overwrite, so a consumer must use a pair's counts before asking for the
    next. A task that counts and evaluates a block this way holds a few pairs'
    counts instead of the block's (26 MB for 41 pairs at ``B = 200``).
    ``shape`` is ``(pairs, cells)`` as for an array."""

    def __init__(self, chunks: list[BinnedChunk | GatheredChunk], spec: CountSpec, rows: int,
                 count: bool):
        self.spec = spec
        self.chunks = chunks
        self.dtype = count_dtype(rows)
        self.shape = (len(spec.pairs), spec.family.n_cells)
        self.nbytes = self.shape[1] * self.dtype.itemsize
        self._count = count

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        family = self.spec.family
        pairs = self.spec.pairs
        if not self._count:
            out = np.zeros(self.shape[1], dtype=self.dtype)
            for _ in pairs:
                yield out
            return
        batch = np.zeros((min(STREAM_BATCH, len(pairs)), self.shape[1]), dtype=self.dtype)
        layout = read_off_layout(family)
        n_rows, n_fixed = family.refinement_shape
        # both orientations' byte histograms (the read-off leaves them at zero)
        # and their log of wrapped cells (x's from the front, y's from the back)
        hist = np.zeros((2, n_rows, n_fixed), dtype=np.uint8)
        flat_x, flat_y = hist[0].reshape(-1), hist[1].reshape(-1)
        # sized from the indices themselves: the kernels do not check bounds
        wraps = np.empty(wrap_capacity(sum(max((len(c) for c in chunk.index), default=0)
                                           for chunk in self.chunks)), dtype=np.int64)
        ends = np.zeros(2, dtype=np.int64)
        prefix = np.empty(n_fixed + 1, dtype=self.dtype)
        colsum = np.empty(n_fixed, dtype=self.dtype)
        store = np.empty(layout.store_size, dtype=self.dtype)
        add = _adder(family)
        for first in range(0, len(pairs), batch.shape[0]):
            group = pairs[first:first + batch.shape[0]]
            for k, (a, b) in enumerate(group):
                ends[:] = 0
                for chunk in self.chunks:
                    add(chunk.index[a], chunk.index[b], flat_x, flat_y, wraps, ends)
                logs = (np.sort(wraps[:ends[0]]), np.sort(wraps[wraps.size - ends[1]:]))
                for o in range(2):
                    read_off_orientation(hist[o], logs[o], prefix,  # type: ignore[call-arg]
                                         colsum, store, *layout.orientations[o], batch[k])
            yield from batch[:len(group)]


def streamed_counts(chunks, spec: CountSpec) -> PartialCounts:
    """:func:`count_binned` with the counts a :class:`StreamedCounts` (nothing is
    counted until it is iterated; pairs are counted in order, a few at a time)."""
    chunks = list(chunks)
    n_cols = len(spec.columns)
    rows = sum(chunk.size for chunk in chunks)
    missing = np.zeros(n_cols, dtype=bool)
    for chunk in chunks:
        if len(chunk.index) != n_cols:
            raise ValueError("a binned chunk has the wrong number of columns")
        missing |= chunk.missing
    count = bool(rows and spec.pairs) and not (missing.any() and spec.fill is None)
    return PartialCounts(StreamedCounts(chunks, spec, rows, count),  # type: ignore[arg-type]
                         rows, missing)


def streamed_binned_partitions(*chunks: BinnedChunk, spec: CountSpec) -> PartialCounts:
    """:func:`streamed_counts` with the chunks as arguments (a task of the engine)."""
    return streamed_counts(chunks, spec)


def _adder(family: GridFamily):
    """The increments of one pair's two orientations straight from its columns'
    joint indices: ``add(a_index, b_index, flat_x, flat_y, wraps, ends)`` (byte
    histograms and their wrap log,
    :func:`~dpmic_dask.stats.kernels.readoff.add_pair`). Through a look-up
    of each joint cell's row offset (and fixed cell, where the joint refinement
    is finer than the fixed one), so a task holds no per-value cells beside its
    binned input (they were 6 bytes per value and used column, three times the
    input the task's memory budget counts); the wrap log is at most 16 bytes per 256 rows."""
    joint = family.joint
    n_fixed = family.refinement_shape[1]
    row_offsets = np.ascontiguousarray(joint.to_row * n_fixed, dtype=np.int64)
    to_fixed = (None if np.array_equal(joint.to_fixed, np.arange(joint.cells))
                else np.ascontiguousarray(joint.to_fixed, dtype=np.int64))
    return lambda a, b, x, y, w, e: add_pair(a, b, row_offsets, to_fixed, x, y, w, e)


@dataclass(frozen=True, eq=False)
class ReadOffLayout:
    """What :func:`~dpmic_dask.stats.kernels.readoff.read_off_orientation` takes for
    each orientation (``orientations[o]``, its arguments after ``out``'s
    predecessors ``hist, wraps, prefix, colsum, store``), and the size of the shared store."""

    store_size: int
    orientations: tuple[tuple[np.ndarray, ...], ...]


def _frozen(values) -> np.ndarray:
    out = np.ascontiguousarray(values, dtype=np.int64)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=16)
def read_off_layout(family: GridFamily) -> ReadOffLayout:
    """The read-off plan of a family (built once per family, from its
    ``kernel_layout``): grids of one orientation with the same row cuts share
    store rows, which hold the 2-D prefix sums at those row cuts and at the union
    of those grids' fixed cuts."""
    (row_cuts, row_start, fixed_cuts, fixed_start, orientation, offsets, rows,
     fixed) = family.kernel_layout
    n_rows = family.refinement_shape[0]
    size = 0
    per_orientation = []
    for o in range(2):
        grids = [g for g in range(offsets.size) if orientation[g] == o]
        by_rows: dict[tuple[int, ...], list[int]] = {}
        for g in grids:
            cuts = tuple(int(v) for v in row_cuts[row_start[g]:row_start[g] + rows[g] + 1])
            by_rows.setdefault(cuts, []).append(g)
        tasks: list[list[tuple[int, int, int]]] = [[] for _ in range(n_rows)]
        store_cuts: list[np.ndarray] = []
        zero: list[np.ndarray] = []
        base: dict[int, int] = {}
        widths: dict[int, int] = {}
        columns: dict[int, np.ndarray] = {}
        cut_start = 0
        for cuts, members in by_rows.items():
            union = np.unique(np.concatenate(
                [fixed_cuts[fixed_start[g]:fixed_start[g] + fixed[g] + 1] for g in members]))
            width = int(union.size)
            for g in members:
                base[g] = size
                widths[g] = width
                columns[g] = np.searchsorted(
                    union, fixed_cuts[fixed_start[g]:fixed_start[g] + fixed[g] + 1])
            zero.append(np.arange(size, size + width))
            for i, cut in enumerate(cuts[1:], start=1):
                tasks[cut - 1].append((size + i * width, cut_start, width))
            store_cuts.append(union)
            cut_start += width
            size += len(cuts) * width
        ptr = np.zeros(n_rows + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(t) for t in tasks])
        flat_tasks = np.array([t for row in tasks for t in row], dtype=np.int64).reshape(-1, 3)
        grid_cut_start = np.cumsum([0] + [columns[g].size for g in grids])[:-1]
        all_cuts = np.concatenate(store_cuts) if store_cuts else np.zeros(0, dtype=np.int64)
        # Each row's fixed cuts: the union, increasing, of the cuts its copies read.
        read_by_row = [np.unique(np.concatenate([all_cuts[start:start + length]
                                                 for _, start, length in row]
                                                or [np.zeros(0, np.int64)]))
                       for row in tasks]
        cut_ptr = np.zeros(n_rows + 1, dtype=np.int64)
        cut_ptr[1:] = np.cumsum([c.size for c in read_by_row])
        arrays = tuple(_frozen(a) for a in (
            cut_ptr,
            np.concatenate(read_by_row) if read_by_row else np.zeros(0),
            ptr,
            np.ascontiguousarray(flat_tasks[:, 0]),
            np.ascontiguousarray(flat_tasks[:, 1]),
            np.ascontiguousarray(flat_tasks[:, 2]),
            all_cuts,
            np.concatenate(zero) if zero else np.zeros(0),
            offsets[grids],
            rows[grids],
            fixed[grids],
            np.array([base[g] for g in grids]),
            np.array([widths[g] for g in grids]),
            grid_cut_start,
            np.concatenate([columns[g] for g in grids]) if grids else np.zeros(0),
        ))
        per_orientation.append(arrays)
    return ReadOffLayout(size, tuple(per_orientation))
