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
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpmic_dask.errors import InvalidDataError
from dpmic_dask.stats.countspec import (
    BinnedChunk,
    Block,
    CountSpec,
    GatheredChunk,
    PartialCounts,
    bin_dtype,
)
from dpmic_dask.stats.kernels.binning import (
    add_histogram_2d,
    bin_column,
    equipartition_bins,
    fixed_point_positions,
)
from dpmic_dask.stats.kernels.readoff import read_off_orientation
from dpmic_dask.stats.streaming import read_off_layout, streamed_counts

if TYPE_CHECKING:
    from dpmic_dask.stats.grids import GridFamily


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

    def whole(self) -> bool:
        """Whether the blocks should take a partition's chunks of every group (the
        binning task's one output, :func:`gather_chunks` picking theirs) rather
        than their own groups' alone: when that moves at most twice the bytes.

        Picking a group's chunk is a task of its own, on the worker that binned the
        partition; behind a counting task there, it held back the counting tasks
        of other blocks by a second (3 blocks of 2 groups on 16 workers). The
        blocks are then cut anew (:meth:`even`), never into more than these, so
        the bytes moved stay within the bound weighed here."""
        sizes = [len(s.columns) for s in self.specs]
        read = sum(sizes[g] for groups in self.groups for g in groups)
        return len(self.groups) * sum(sizes) <= 2 * read


    def even(self, spec: CountSpec, count: int) -> tuple[list[Block], SharedBinning]:
        """``count`` blocks of ``spec``'s pairs in order, their sizes differing by at
        most one, each reading every group: for when the blocks take a
        partition's chunks of every group (:meth:`whole`), so which pairs a block
        has changes none of its input. Blocks cut by column groups are uneven
        (15, 24 and 6 of 45 pairs): on 2 threads their three tasks left one
        worker with 30 pairs' work and the other with 15. ``count`` comes from
        the public budget and thread count (:func:`~dpmic_dask.stats.limits.even_blocks`)."""
        names = {name: k for k, name in enumerate(spec.columns)}
        order = [names[name] for s in self.specs for name in s.columns]
        group = {c: k for k, s in enumerate(self.specs) for c in (names[n] for n in s.columns)}
        where = {c: k for k, c in enumerate(order)}
        every = tuple(range(len(self.specs)))
        total = len(spec.pairs)
        cuts = [(k * total) // count for k in range(count + 1)]
        blocks = [spec.block(range(lo, hi), group) for lo, hi in zip(cuts[:-1], cuts[1:])
                  if hi > lo]
        takes = tuple((len(every), tuple(where[c] for c in b.columns or ())) for b in blocks)
        return blocks, SharedBinning(self.specs, tuple(every for _ in blocks), takes)

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


def gather_chunks(chunks, take: tuple | None) -> list[BinnedChunk | GatheredChunk]:
    """A block's binned chunks from its groups' (``chunks``: for each partition in
    turn, one chunk per group the block reads; ``take`` from
    :class:`SharedBinning`); ``chunks`` as they are when ``take`` is ``None``.

    A ``take`` of three, ``(per, positions, groups)``, reads each of ``chunks`` as
    one partition's chunks of every group (a tuple), of which the block reads
    those at ``groups``. With a ``take``, each partition's columns are views
    (:class:`~dpmic_dask.stats.countspec.GatheredChunk`), not copies."""
    chunks = list(chunks)
    if take is None:
        return chunks
    per, positions, *whole = take
    if whole:
        chunks = [part[g] for part in chunks for g in whole[0]]
    out: list[BinnedChunk | GatheredChunk] = []
    for i in range(0, len(chunks), per):
        parts = chunks[i:i + per]
        columns = [column for c in parts for column in c.index]
        missing = np.concatenate([c.missing for c in parts])
        out.append(GatheredChunk(tuple(columns[k] for k in positions),
                                 missing[np.asarray(positions, dtype=np.intp)], parts[0].size))
    return out


def _kernel_input(values: np.ndarray) -> np.ndarray:
    """float64, C-contiguous and read-only: one numba specialisation for every
    caller (pandas often hands out read-only views, NumPy writable arrays)."""
    values = np.ascontiguousarray(values, dtype=np.float64).view()
    values.setflags(write=False)
    return values


def bin_chunk(columns, spec: CountSpec) -> BinnedChunk:
    """Bin one chunk of float64 columns (NaN = missing; ``columns[k]`` holds the
    values of ``spec.columns[k]``, all of one length) into the joint refinement
    of both axes (:class:`~dpmic_dask.stats.grids.JointRefinement`).

    A missing value is replaced by the column's public fill value; without one
    the column is flagged (the release will be refused). Missing values are
    found by the binning kernel itself, in the same pass.
    """
    joint = spec.family.joint
    n_cols = len(spec.columns)
    size = len(columns[0]) if n_cols else 0
    index = np.empty((n_cols, size), dtype=bin_dtype(spec.family))
    missing = np.zeros(n_cols, dtype=bool)
    for k, values in enumerate(columns):
        if len(values) != size:
            raise ValueError("the columns of a chunk differ in length")
        lo, hi = spec.bounds[k]
        # without a fill value a missing value is binned as the lower bound: the
        # column is flagged and the release refused, nothing counted
        fill = np.nan if spec.fill is None else float(spec.fill[k])
        missing[k] = bin_column(_kernel_input(values), lo, hi - lo, joint.boundaries,
                                joint.table, fill, index[k]) > 0
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
                            take: tuple | None = None) -> PartialCounts:
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
    bin_column(_kernel_input(values), lo, hi - lo, joint.boundaries, joint.table, np.nan, index)
    return ColumnBins(joint.to_fixed[index], joint.to_row[index])


def refinement_histograms(x: ColumnBins, y: ColumnBins, family: GridFamily) -> np.ndarray:
    """Refinement histograms of a pair, int64[2, row cells, fixed cells] (orientation
    ``"x"``: y's row cells by x's fixed cells; ``"y"``: the mirror image)."""
    hist = np.zeros((2,) + family.refinement_shape, dtype=np.int64)
    add_histogram_2d(y.rows, x.fixed, hist[0])
    add_histogram_2d(x.rows, y.fixed, hist[1])
    return hist


#: The wrap log of a histogram of int64 counts (none wrap).
_NO_WRAPS = np.zeros(0, dtype=np.int64)


def master_counts(hist: np.ndarray, family: GridFamily) -> np.ndarray:
    """Read every master grid off a pair's refinement histograms (flat int64 counts)."""
    layout = read_off_layout(family)
    out = np.zeros(family.n_cells, dtype=np.int64)
    prefix = np.empty(family.refinement_shape[1] + 1, dtype=np.int64)
    colsum = np.empty(family.refinement_shape[1], dtype=np.int64)
    store = np.empty(layout.store_size, dtype=np.int64)
    for o in range(2):
        scratch = np.array(hist[o], dtype=np.int64)  # the read-off clears its input
        read_off_orientation(scratch, _NO_WRAPS, prefix, colsum,  # type: ignore[call-arg]
                             store, *layout.orientations[o], out)
    return out
