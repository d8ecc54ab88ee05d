"""The data-independent family of master grids (SPEC section 2, "clumped" masters).

For a maximum grid size ``B`` and master factor ``c``, each orientation has one
master grid per fixed-axis size ``l = 2 .. B // 2``: the fixed axis is a range
equipartition into ``l`` bins and the other axis a range equipartition into
``c * kmax(l)`` master rows, which OptimizeAxis groups into ``k = 2 .. kmax(l)``
contiguous groups. Orientation ``"x"`` fixes the x axis; ``"y"`` is its mirror.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from dpmic_dask.checks import check_clump_factor, check_max_cells
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.kernels.binning import POSITION_BITS, TABLE_SHIFT

ORIENTATIONS = ("x", "y")


# ----------------------------------------------------------- boundaries (SPEC section 2)
# A value's 32-bit position ``q`` is in bin ``(q * s) >> 32`` of a range equipartition
# of ``s`` bins, so every boundary is an exact integer position and the sorted union of
# the boundaries of any set of sizes is a common refinement of all of them.

def equipartition_boundaries(n_bins: int) -> np.ndarray:
    """Positions ``ceil(j * 2**32 / n_bins)`` for ``j = 1 .. n_bins - 1`` (int64).

    A position ``q`` is in bin ``j`` or above exactly when ``q`` is at least the
    ``j``-th boundary.
    """
    j = np.arange(1, n_bins, dtype=np.int64)
    return -((-j << POSITION_BITS) // n_bins)


def _lookup_table(boundaries: np.ndarray) -> np.ndarray:
    """For each value ``t`` of a position's top bits, the number of ``boundaries``
    below ``t << TABLE_SHIFT`` (the binning kernel's starting point)."""
    starts = np.arange(2 ** (POSITION_BITS - TABLE_SHIFT), dtype=np.int64) << TABLE_SHIFT
    # 16-bit entries where they fit: 128 KB, which stays in a core's L2 cache
    # (int64 entries, 512 KB, did not; binning took a third longer)
    small = boundaries.size <= np.iinfo(np.uint16).max
    table = np.searchsorted(boundaries, starts, side="left").astype(
        np.uint16 if small else np.int64)
    boundaries.setflags(write=False)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=64)
def _refinement(sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    parts = [equipartition_boundaries(s) for s in sizes]
    boundaries = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
    return boundaries, _lookup_table(boundaries)


def refinement(sizes) -> tuple[np.ndarray, np.ndarray]:
    """Common refinement of range equipartitions of the given sizes.

    Returns ``(boundaries, table)``: the sorted distinct boundary positions (int64)
    and the look-up table the binning kernel uses to find a position's cell.
    Refinement cell ``r`` holds the positions in ``[boundaries[r-1], boundaries[r])``.
    """
    return _refinement(tuple(sorted(set(int(s) for s in sizes))))


@dataclass(frozen=True, eq=False)
class JointRefinement:
    """The union of two refinements' boundaries: a value is binned once, into joint
    cell ``j`` (:func:`refinement_index` over ``boundaries``), and its cell in each
    refinement is a look-up, ``to_fixed[j]`` and ``to_row[j]``. A joint cell lies
    inside one cell of each refinement, since neither has a boundary within it.
    One 16-bit index per value instead of two halves what binned data holds.
    """

    boundaries: np.ndarray
    table: np.ndarray
    to_fixed: np.ndarray
    to_row: np.ndarray

    @property
    def cells(self) -> int:
        return int(self.boundaries.size + 1)


def joint_refinement(fixed_boundaries: np.ndarray, row_boundaries: np.ndarray) -> JointRefinement:
    """Join two sorted boundary sets (see :class:`JointRefinement`).

    Joint cell ``j >= 1`` holds positions ``[b[j-1], b[j])``; the number of a
    refinement's boundaries at or below a position in it is the number at or
    below ``b[j-1]`` (and 0 in cell 0, below every boundary).
    """
    boundaries = np.union1d(fixed_boundaries, row_boundaries).astype(np.int64)
    below = lambda own: np.concatenate(  # noqa: E731
        ([0], np.searchsorted(own, boundaries, side="right"))).astype(np.int64)
    to_fixed, to_row = below(fixed_boundaries), below(row_boundaries)
    to_fixed.setflags(write=False)
    to_row.setflags(write=False)
    return JointRefinement(boundaries, _lookup_table(boundaries), to_fixed, to_row)


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


# ----------------------------------------------------------- the master grid family


def max_groups(fixed_bins: int, B: int) -> int:
    """``kmax(l)``: ``l`` when ``l <= sqrt(B)``, else ``floor(B / l)``."""
    return fixed_bins if fixed_bins * fixed_bins <= B else B // fixed_bins


def fixed_axis_sizes(B: int) -> range:
    """The fixed-axis sizes ``l = 2 .. floor(B / 2)``."""
    return range(2, B // 2 + 1)


@dataclass(frozen=True)
class MasterGrid:
    """One master grid of the family.

    Attributes
    ----------
    orientation : ``"x"`` (x axis fixed into ``fixed_bins`` columns, y rows grouped)
        or ``"y"`` (the mirror image).
    fixed_bins : int, ``l``.
    max_groups : int, ``kmax(l)``.
    master_rows : int, ``c * kmax(l)``.
    offset : int, where the grid's ``master_rows x fixed_bins`` counts start in a
        pair's flat count vector.
    """

    orientation: str
    fixed_bins: int
    max_groups: int
    master_rows: int
    offset: int

    @property
    def n_cells(self) -> int:
        return self.master_rows * self.fixed_bins


@dataclass(frozen=True, eq=False)
class GridFamily:
    """All master grids for ``(B, c)`` and the axis refinements that produce them.

    A pair's counts are one flat int64 vector of length ``n_cells``: every grid's
    ``master_rows x fixed_bins`` matrix, row-major, at its ``offset``. Each axis
    is binned twice: into the common refinement of all fixed-axis sizes
    (``fixed_boundaries``) and of all master-row sizes (``row_boundaries``).
    """

    B: int
    c: int
    grids: tuple[MasterGrid, ...]
    fixed_boundaries: np.ndarray
    fixed_table: np.ndarray
    row_boundaries: np.ndarray
    row_table: np.ndarray
    fixed_cuts: dict
    row_cuts: dict

    def __reduce__(self):
        # Rebuilt from (B, c) on the receiving side: tasks ship two integers.
        return master_grid_family, (self.B, self.c)

    @property
    def n_grids(self) -> int:
        return len(self.grids)

    @property
    def n_cells(self) -> int:
        last = self.grids[-1]
        return last.offset + last.n_cells

    @property
    def refinement_shape(self) -> tuple[int, int]:
        """Shape ``(row cells, fixed cells)`` of one orientation's refinement histogram."""
        return self.row_boundaries.size + 1, self.fixed_boundaries.size + 1

    @cached_property
    def joint(self) -> JointRefinement:
        """The common refinement of both axis refinements: one index per value."""
        return joint_refinement(self.fixed_boundaries, self.row_boundaries)

    @cached_property
    def kernel_layout(self) -> tuple[np.ndarray, ...]:
        """Arrays the counting kernels take: ``(row_cuts, row_cut_start, fixed_cuts,
        fixed_cut_start, orientation, offsets, master_rows, fixed_bins)``, int64.

        Grid ``g`` reads ``master_rows[g] + 1`` row cuts from ``row_cut_start[g]`` and
        ``fixed_bins[g] + 1`` fixed cuts from ``fixed_cut_start[g]``; orientation is
        0 for ``"x"`` and 1 for ``"y"``.
        """
        row_parts, row_start, fixed_parts, fixed_start = [], [], [], []
        r = f = 0
        for grid in self.grids:
            row_start.append(r)
            fixed_start.append(f)
            row_parts.append(self.row_cuts[grid.master_rows])
            fixed_parts.append(self.fixed_cuts[grid.fixed_bins])
            r += grid.master_rows + 1
            f += grid.fixed_bins + 1
        offsets, rows, fixed, _ = self.grid_arrays()
        orientation = np.array([ORIENTATIONS.index(g.orientation) for g in self.grids], np.int64)
        as64 = lambda parts: np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)  # noqa: E731
        return (as64(row_parts), np.array(row_start, np.int64), as64(fixed_parts),
                np.array(fixed_start, np.int64), orientation, offsets, rows, fixed)

    def grid_arrays(self) -> tuple[np.ndarray, ...]:
        """``(offsets, master_rows, fixed_bins, max_groups)`` as int64 arrays."""
        cols = ("offset", "master_rows", "fixed_bins", "max_groups")
        return tuple(
            np.array([getattr(g, name) for g in self.grids], dtype=np.int64) for name in cols
        )


@lru_cache(maxsize=32)
def _family(B: int, c: int) -> GridFamily:
    grids = []
    offset = 0
    for orientation in ORIENTATIONS:
        for l in fixed_axis_sizes(B):
            k = max_groups(l, B)
            grid = MasterGrid(orientation, l, k, c * k, offset)
            grids.append(grid)
            offset += grid.n_cells
    fixed_sizes = sorted({g.fixed_bins for g in grids})
    row_sizes = sorted({g.master_rows for g in grids})
    fixed_b, fixed_t = refinement(fixed_sizes)
    row_b, row_t = refinement(row_sizes)
    return GridFamily(
        B=B,
        c=c,
        grids=tuple(grids),
        fixed_boundaries=fixed_b,
        fixed_table=fixed_t,
        row_boundaries=row_b,
        row_table=row_t,
        fixed_cuts={s: refinement_cuts(fixed_b, s) for s in fixed_sizes},
        row_cuts={s: refinement_cuts(row_b, s) for s in row_sizes},
    )


def master_grid_family(B: int, c: int) -> GridFamily:
    """The master grid family for maximum grid size ``B`` (>= 4) and factor ``c`` (>= 1).

    It has ``G = 2 * (B // 2 - 1)`` grids and depends on ``(B, c)`` only.
    """
    return _family(check_max_cells(B), check_clump_factor(c))


# ------------------------------------------- grids statistics declare beside the masters


def tau_bins(family: GridFamily) -> int:
    """The finest range equipartition both refinements of ``family`` contain: the
    largest master-row size that is also a fixed-axis size (``c * floor(sqrt(B))``
    when it is at most ``B // 2``; 70 at ``B = 200, c = 5``)."""
    common = set(family.row_cuts) & set(family.fixed_cuts)
    return max(common) if common else 0


@dataclass(frozen=True, eq=False)
class CountLayout(GridFamily):
    """The master grid family of ``(B, c)`` plus the square grids that statistics
    declare (:meth:`~dpmic_dask.stats.statistics.PairStatistic.grids`), one
    ``m x m`` range equipartition (y rows by x columns) per size in ``extra``,
    stored after the master cells in that order.

    Every extra grid is read off the same refinement histograms in the same
    pass, so all statistics of a pair come from one count vector: MICr reads the
    master cells (``grids`` is the master family's), a statistic with its own
    grid reads :meth:`square_block`.
    """

    extra: tuple[int, ...] = ()

    def __reduce__(self):
        return count_layout, (self.B, self.c, self.extra)

    @property
    def master_cells(self) -> int:
        last = self.grids[-1]
        return last.offset + last.n_cells

    @property
    def n_cells(self) -> int:
        return self.master_cells + sum(m * m for m in self.extra)

    def square_block(self, counts: np.ndarray, m: int) -> np.ndarray:
        """The ``m x m`` grid (rows: y bins, columns: x bins) in a pair's counts."""
        start = self.master_cells
        for size in self.extra:
            if size == m:
                return counts[start:start + m * m].reshape(m, m)
            start += size * size
        raise KeyError(f"this layout has no {m} x {m} grid (it has {list(self.extra)})")

    @cached_property
    def kernel_layout(self) -> tuple[np.ndarray, ...]:
        (row_cuts, row_start, fixed_cuts, fixed_start, orientation, offsets, rows,
         fixed) = GridFamily.kernel_layout.func(self)  # type: ignore[attr-defined]
        row_parts, fixed_parts = [row_cuts], [fixed_cuts]
        row_begin, fixed_begin, begin = [], [], []
        r, f, o = row_cuts.size, fixed_cuts.size, self.master_cells
        for m in self.extra:
            row_parts.append(self.row_cuts[m])
            fixed_parts.append(self.fixed_cuts[m])
            row_begin.append(r)
            fixed_begin.append(f)
            begin.append(o)
            r, f, o = r + m + 1, f + m + 1, o + m * m
        cat = lambda parts: np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)  # noqa: E731
        sizes = list(self.extra)
        return (cat(row_parts), cat([row_start, row_begin]), cat(fixed_parts),
                cat([fixed_start, fixed_begin]), cat([orientation, [0] * len(sizes)]),
                cat([offsets, begin]), cat([rows, sizes]), cat([fixed, sizes]))


@lru_cache(maxsize=32)
def _count_layout(B: int, c: int, extra: tuple[int, ...]) -> GridFamily:
    base = _family(B, c)
    if not extra:
        return base
    for m in extra:
        if m < 2 or m not in base.row_cuts or m not in base.fixed_cuts:
            raise InvalidParameterError(
                f"B = {B}, c = {c} has no {m} x {m} equipartition in both refinements; "
                "choose another B or c (nothing was charged)")
    fields = {name: getattr(base, name) for name in base.__dataclass_fields__}
    return CountLayout(**fields, extra=extra)


def count_layout(B: int, c: int, extra=()) -> GridFamily:
    """The one count layout of ``(B, c)`` holding the master family and the square
    grids of sizes ``extra`` (the union of what the released statistics declare,
    :func:`~dpmic_dask.stats.statistics.union_layout`); the master family alone
    when ``extra`` is empty, so MICr's counts do not change."""
    sizes = tuple(sorted({int(m) for m in extra}))
    return _count_layout(check_max_cells(B), check_clump_factor(c), sizes)
