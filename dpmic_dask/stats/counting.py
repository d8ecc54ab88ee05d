"""The one counting path: columns in, exact integer master-grid counts out.

Per row and pair the cost is two histogram increments (one per orientation),
whatever ``B``: each value is binned once, into the union of the common
refinement of all fixed-axis sizes and that of all master-row sizes, and every
master grid is read off the refinement histograms by 2-D prefix sums. Counting
is two steps: a chunk of rows is binned (:func:`bin_chunk`, one 16-bit index
per value) and binned chunks are counted (:func:`count_binned`); every path --
a partition (:func:`partition_counts`), the Dask engine, an in-memory pair
(:func:`pair_counts`) -- goes through them. Counts are exact integers, so
counts of any split of the rows add up (:func:`combine_partials`) to the counts
of the whole. Nothing here knows about Dask.

A value ``x`` with public bounds ``[lo, hi]`` has the 32-bit position
``q = min(floor(clamp((x - lo) / (hi - lo), 0, 1) * 2**32), 2**32 - 1)``; its bin in
a range equipartition of ``s`` bins is ``(q * s) >> 32`` (SPEC section 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpmic_dask.errors import InvalidDataError
from dpmic_dask.stats.kernels.binning import (
    add_histogram_2d,
    bin_column,
    equipartition_bins,
    fixed_point_positions,
)
from dpmic_dask.stats.kernels.readoff import add_cells, column_cells, read_off_orientation

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
        out = []
        for key in sorted(by_groups):
            indices = by_groups[key]
            cols = sorted({c for p in indices for c in pairs[p]})
            local = {c: k for k, c in enumerate(cols)}
            spec = CountSpec(
                tuple(self.columns[c] for c in cols), tuple(self.bounds[c] for c in cols),
                None if self.fill is None else tuple(self.fill[c] for c in cols), self.family,
                tuple((local[pairs[p][0]], local[pairs[p][1]]) for p in indices))
            out.append(Block(spec, tuple(indices), tuple(cols), tuple(group[c] for c in cols)))
        return out

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
class SharedBinning:
    """Column groups binned once for every block that reads them (a block is one
    group with itself or with another, :meth:`CountSpec.blocks`), instead of once
    per block: ``specs[k]`` is group ``k``'s columns; ``takes[b]`` is what block
    ``b`` passes to :func:`gather_chunks`: the groups it reads and where its own
    columns are in their binned chunks, one after the other."""

    specs: tuple[CountSpec, ...]
    groups: tuple[tuple[int, ...], ...]
    takes: tuple[tuple[int, tuple[int, ...]], ...]


def shared_binning(spec: CountSpec, blocks: list[Block], rows: int | None,
                   limit: int) -> SharedBinning | None:
    """How to bin the column groups of ``blocks`` once each: ``None`` for a single
    block, blocks without groups, an unknown number of ``rows``, or when every
    column's binned values (two bytes per value, held until the last block that
    reads them is counted) would pass ``limit`` bytes -- then each block reads
    its own columns and memory stays with the block size."""
    if len(blocks) < 2 or any(b.columns is None or not b.groups for b in blocks):
        return None
    if rows is None or len(spec.columns) * int(rows) * bin_dtype(spec.family).itemsize > limit:
        return None
    members: dict[int, set[int]] = {}
    for block in blocks:
        for col, gid in zip(block.columns or (), block.groups):
            members.setdefault(gid, set()).add(col)
    ids = sorted(members)
    cols = {gid: sorted(members[gid]) for gid in ids}
    number = {gid: k for k, gid in enumerate(ids)}
    groups, takes = [], []
    for block in blocks:
        read = sorted(set(block.groups))
        where: dict[int, int] = {}
        for gid in read:
            for col in cols[gid]:
                where[col] = len(where)
        groups.append(tuple(number[gid] for gid in read))
        takes.append((len(read), tuple(where[c] for c in block.columns or ())))
    return SharedBinning(tuple(spec.subset(cols[gid]) for gid in ids), tuple(groups),
                         tuple(takes))


def gather_chunks(chunks, take: tuple[int, tuple[int, ...]] | None) -> list[BinnedChunk]:
    """A block's binned chunks from its groups' (``chunks``: for each partition in
    turn, one chunk per group the block reads; ``take`` from
    :class:`SharedBinning`); ``chunks`` as they are when ``take`` is ``None``."""
    chunks = list(chunks)
    if take is None:
        return chunks
    per, positions = take
    cols = np.asarray(positions, dtype=np.intp)
    out = []
    for i in range(0, len(chunks), per):
        parts = chunks[i:i + per]
        index = parts[0].index if per == 1 else np.concatenate([c.index for c in parts])
        missing = np.concatenate([c.missing for c in parts])
        out.append(BinnedChunk(np.ascontiguousarray(index[cols]), missing[cols]))
    return out


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


def _kernel_input(values: np.ndarray) -> np.ndarray:
    """float64, C-contiguous and read-only: one numba specialisation for every
    caller (pandas often hands out read-only views, NumPy writable arrays)."""
    values = np.ascontiguousarray(values, dtype=np.float64).view()
    values.setflags(write=False)
    return values


def bin_dtype(family: GridFamily) -> np.dtype:
    """Joint refinement indices fit 16 bits at every practical ``B`` (3,044 fixed
    and 3,045 joint cells at ``B = 200, c = 5``): half the memory and traffic of
    int32."""
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


def bin_chunk(columns, spec: CountSpec) -> BinnedChunk:
    """Bin one chunk of float64 columns (NaN = missing; ``columns[k]`` holds the
    values of ``spec.columns[k]``, all of one length) into the joint refinement
    of both axes (:class:`~dpmic_dask.stats.grids.JointRefinement`).

    A missing value is replaced by the column's public fill value; without one
    the column is flagged and not binned (the release will be refused).
    """
    joint = spec.family.joint
    n_cols = len(spec.columns)
    size = len(columns[0]) if n_cols else 0
    index = np.zeros((n_cols, size), dtype=bin_dtype(spec.family))
    missing = np.zeros(n_cols, dtype=bool)
    for k, values in enumerate(columns):
        if len(values) != size:
            raise ValueError("the columns of a chunk differ in length")
        nan = np.isnan(values)
        if nan.any():
            missing[k] = True
            if spec.fill is None:
                continue  # the release will be refused; nothing to count
            values = np.where(nan, spec.fill[k], values)
        lo, hi = spec.bounds[k]
        bin_column(_kernel_input(values), lo, hi - lo, joint.boundaries, joint.table, index[k])
    return BinnedChunk(index, missing)


def count_binned(chunks, spec: CountSpec) -> PartialCounts:
    """Count binned chunks (:func:`bin_chunk`) into every master grid of every pair.

    Each pair's refinement histograms take two increments per row of every chunk
    and are read off once, whatever the number of chunks: several partitions
    counted in one task pay the read-off (a fixed cost per pair) once, and no
    chunk is copied.
    """
    streamed = streamed_counts(chunks, spec)
    counts = streamed.counts
    out = np.zeros(counts.shape, dtype=counts.dtype)
    for p, row in enumerate(counts):
        out[p] = row
    return PartialCounts(out, streamed.rows, streamed.missing)


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

    def __init__(self, chunks: list[BinnedChunk], spec: CountSpec, rows: int, count: bool):
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
        hist = np.zeros((n_rows, n_fixed), dtype=self.dtype)  # the read-off leaves it at zero
        flat = hist.reshape(-1)
        prefix = np.empty(n_fixed + 1, dtype=self.dtype)
        store = np.empty(layout.store_size, dtype=self.dtype)
        used = sorted({c for pair in pairs for c in pair})
        cells = [_chunk_cells(chunk, used, family) for chunk in self.chunks]
        for first in range(0, len(pairs), batch.shape[0]):
            group = pairs[first:first + batch.shape[0]]
            for k, (a, b) in enumerate(group):
                for o, (row_col, fixed_col) in enumerate(((b, a), (a, b))):
                    for offsets, fixed in cells:
                        add_cells(offsets[row_col], fixed[fixed_col], flat)
                    read_off_orientation(hist, prefix, store,  # type: ignore[call-arg]
                                         *layout.orientations[o], batch[k])
            yield from batch[:len(group)]


def streamed_counts(chunks, spec: CountSpec) -> PartialCounts:
    """:func:`count_binned` with the counts a :class:`StreamedCounts` (nothing is
    counted until it is iterated; pairs are counted in order, a few at a time)."""
    chunks = list(chunks)
    n_cols = len(spec.columns)
    rows = sum(chunk.size for chunk in chunks)
    missing = np.zeros(n_cols, dtype=bool)
    for chunk in chunks:
        if chunk.index.shape[0] != n_cols:
            raise ValueError("a binned chunk has the wrong number of columns")
        missing |= chunk.missing
    count = bool(rows and spec.pairs) and not (missing.any() and spec.fill is None)
    return PartialCounts(StreamedCounts(chunks, spec, rows, count),  # type: ignore[arg-type]
                         rows, missing)


def streamed_binned_partitions(*chunks: BinnedChunk, spec: CountSpec) -> PartialCounts:
    """:func:`streamed_counts` with the chunks as arguments (a task of the engine)."""
    return streamed_counts(chunks, spec)


def _chunk_cells(chunk: BinnedChunk, used, family: GridFamily):
    """Each used column's row-cell offsets (``to_row * Rf``, int32) and fixed cells
    (uint16) in a chunk, computed once per task and shared by every pair."""
    joint = family.joint
    n_fixed = family.refinement_shape[1]
    size = chunk.size
    fixed_dtype = np.uint16 if n_fixed <= 2**16 else np.int32
    offsets: dict[int, np.ndarray] = {}
    fixed: dict[int, np.ndarray] = {}
    for k in used:
        offsets[k] = np.empty(size, dtype=np.int32)
        fixed[k] = np.empty(size, dtype=fixed_dtype)
        column_cells(chunk.index[k], joint.to_row, joint.to_fixed, n_fixed, offsets[k], fixed[k])
    return offsets, fixed


@dataclass(frozen=True, eq=False)
class ReadOffLayout:
    """What :func:`~dpmic_dask.stats.kernels.readoff.read_off_orientation` takes for
    each orientation (``orientations[o]``, its arguments after ``out``'s
    predecessors ``hist, prefix, store``), and the size of the shared store."""

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
        arrays = tuple(_frozen(a) for a in (
            ptr,
            np.ascontiguousarray(flat_tasks[:, 0]),
            np.ascontiguousarray(flat_tasks[:, 1]),
            np.ascontiguousarray(flat_tasks[:, 2]),
            np.concatenate(store_cuts) if store_cuts else np.zeros(0),
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


def count_chunks(chunks, spec: CountSpec) -> PartialCounts:
    """Count chunks of float64 columns (see :func:`bin_chunk`), binning each in turn
    so that the float64 values of one chunk at a time are needed."""
    return count_binned([bin_chunk(chunk, spec) for chunk in chunks], spec)


def count_columns(columns, spec: CountSpec) -> PartialCounts:
    """Count float64 columns (NaN = missing) into every master grid of every pair.

    ``columns[k]`` holds the values of ``spec.columns[k]``.
    """
    return count_chunks([columns], spec)


def column_values(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as float64 with missing values (None, NA, NaN) as NaN.

    A value that is not a number is reported by column name only.
    """
    try:
        return frame[name].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise InvalidDataError(f"column {name!r} holds values that are not numbers") from None


def bin_partition(frame: pd.DataFrame, spec: CountSpec) -> BinnedChunk:
    """Bin one partition (a pandas DataFrame) for counting."""
    return bin_chunk([column_values(frame, name) for name in spec.columns], spec)


def count_binned_partitions(*chunks: BinnedChunk, spec: CountSpec,
                            take: tuple[int, tuple[int, ...]] | None = None) -> PartialCounts:
    """:func:`count_binned` with the chunks as arguments (a task of the engine);
    ``take``: the chunks are column groups' (:func:`gather_chunks`)."""
    return count_binned(gather_chunks(chunks, take), spec)


def partition_counts(frame: pd.DataFrame, spec: CountSpec) -> PartialCounts:
    """Count one partition (a pandas DataFrame) into every master grid of every pair."""
    return count_binned([bin_partition(frame, spec)], spec)


def pair_counts(x: np.ndarray, y: np.ndarray, x_bounds, y_bounds, family: GridFamily) -> np.ndarray:
    """Flat int64 master counts of the pair ``(x, y)`` (checked inputs, no NaN)."""
    spec = CountSpec(("x", "y"), (tuple(x_bounds), tuple(y_bounds)), None, family)
    return count_columns([x, y], spec).counts[0].astype(np.int64)


def empty_partial(spec: CountSpec) -> PartialCounts:
    """The counts of no rows (a frame without partitions)."""
    return PartialCounts(
        np.zeros((len(spec.pairs), spec.family.n_cells), dtype=np.int64),
        0,
        np.zeros(len(spec.columns), dtype=bool),
    )


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


def grid_block(counts: np.ndarray, family: GridFamily, index: int) -> np.ndarray:
    """View of grid ``index``'s ``master_rows x fixed_bins`` matrix in flat ``counts``."""
    g = family.grids[index]
    return counts[g.offset:g.offset + g.n_cells].reshape(g.master_rows, g.fixed_bins)


# ------------------------------------------ the stages one by one (tests, benchmarks)


def positions(values: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """Fixed-point positions (int64) of float64 ``values`` within checked ``bounds``."""
    lo, hi = bounds
    out = np.empty(values.shape[0], dtype=np.int64)
    fixed_point_positions(_kernel_input(values), lo, hi - lo, out)
    return out


def bins(values: np.ndarray, bounds: tuple[float, float], n_bins: int) -> np.ndarray:
    """Bin index (int64) of each value in a range equipartition of ``n_bins`` bins."""
    pos = positions(values, bounds)
    out = np.empty_like(pos)
    equipartition_bins(pos, n_bins, out)
    return out


@dataclass(frozen=True)
class ColumnBins:
    """One column's refinement indices: ``fixed`` and ``rows`` (int64)."""

    fixed: np.ndarray
    rows: np.ndarray


def bin_values(values: np.ndarray, bounds: tuple[float, float], family: GridFamily) -> ColumnBins:
    """Bin float64 ``values`` (no NaN) into both refinements of ``family`` (through
    the joint refinement, as the engine does)."""
    lo, hi = bounds
    joint = family.joint
    index = np.empty(values.shape[0], dtype=bin_dtype(family))
    bin_column(_kernel_input(values), lo, hi - lo, joint.boundaries, joint.table, index)
    return ColumnBins(joint.to_fixed[index], joint.to_row[index])


def refinement_histograms(x: ColumnBins, y: ColumnBins, family: GridFamily) -> np.ndarray:
    """Refinement histograms of a pair, int64[2, row cells, fixed cells] (orientation
    ``"x"``: y's row cells by x's fixed cells; ``"y"``: the mirror image)."""
    hist = np.zeros((2,) + family.refinement_shape, dtype=np.int64)
    add_histogram_2d(y.rows, x.fixed, hist[0])
    add_histogram_2d(x.rows, y.fixed, hist[1])
    return hist


def master_counts(hist: np.ndarray, family: GridFamily) -> np.ndarray:
    """Read every master grid off a pair's refinement histograms (flat int64 counts)."""
    layout = read_off_layout(family)
    out = np.zeros(family.n_cells, dtype=np.int64)
    prefix = np.empty(family.refinement_shape[1] + 1, dtype=np.int64)
    store = np.empty(layout.store_size, dtype=np.int64)
    for o in range(2):
        scratch = np.array(hist[o], dtype=np.int64)  # the read-off clears its input
        read_off_orientation(scratch, prefix, store, *layout.orientations[o],  # type: ignore[call-arg]
                             out)
    return out
