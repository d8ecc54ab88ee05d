"""Private bounds: public ranges estimated from the data with a declared budget.

Two passes per column, each a noisy histogram on a grid that does not depend
on the data:

1. *First pass* (``FIRST_PASS_SHARE`` of the column's epsilon): one fixed
   histogram -- signed half-octave bins covering the whole float range (or
   ``DOMAIN_BINS`` equal bins of a loose public ``domain``) -- counted in one pass
   over the partitions (exact integers: partitions merge by summing), released
   with exact discrete Laplace noise of scale ``2 / eps_first`` (replacing one row
   moves one count down and one up: L1 sensitivity 2). Bounds are read off it by
   post-processing (:func:`bounds_from_noisy`): the occupied range is the bins
   whose noisy count passes ``T = b ln(K / (2 beta))`` (``K`` bins, scale ``b``,
   ``beta = 1e-3``: with probability at least ``1 - beta`` no empty bin passes),
   widened across empty neighbours (the zero bin and the bins around 1 are
   neighbours on the log grid) and by thin-tail blocks; within it, the bounds
   are the bin edges where the cumulative noisy count reaches ``(1 - coverage) /
   2`` and ``(1 + coverage) / 2`` of the total.
2. *Refining pass* (the rest of the column's epsilon): when the first pass's
   bounds lie far from zero relative to their width (:func:`refinement_grid`),
   the column is counted again into ``DOMAIN_BINS`` equal bins of those bounds --
   a grid chosen from released values only, so choosing it is post-processing --
   and released with discrete Laplace noise of scale ``2 / eps_second``; the
   bounds are read off it (:func:`refined_from_noisy`) or, when nothing in it
   stands out of the noise, the first pass's bounds stand -- unless its end bins,
   which hold every value beyond the first bounds, show that those missed the
   data (:func:`first_bounds_missed`): the side that missed then reaches to zero
   or to the public domain's edge, or the column is unresolved
   (:func:`reach_past_a_miss`). Other
   columns are counted on the first grid again and read with
   :func:`bounds_from_noisy` at the second, smaller noise scale (the first
   bounds stand if that fails).

The two histograms of a column compose to ``eps_first + eps_second = eps_column``
(sequential composition; the second is chosen adaptively from the first's
output). Every reading off equal bins (a ``domain`` grid, the refining grid) is
checked against the mass it leaves out (:func:`holds_the_mass`): a core that was
noise -- one bin passing its threshold far from the data, or amid data too thin to
pass anywhere -- would otherwise give bounds holding none of the data.

The result is a pair of plain numbers per column that can be kept and reused as
public bounds; bounds are always two distinct bin edges (never zero width).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dpmic_dask.errors import InvalidParameterError  # noqa: F401
from dpmic_dask.privacy.boundschecks import (  # noqa: F401 (re-exported)
    BETA,
    check_coverage,
    check_domain,
    first_bounds_missed,
    holds_the_mass,
    missed_sides,
    sum_threshold,
)
from dpmic_dask.privacy.boundsread import (  # noqa: F401 (re-exported)
    LONG_GAP,
    MARGIN_BINS,
    REFINE_MARGIN,
    REFINE_Z,
    block_widen,
    linear_read,
    noise_threshold,
    read_quantiles,
    standing_groups,
)

#: Half-octave exponents of the signed log grid: bin ``e`` holds magnitudes in
#: ``[2**(e/2), 2**((e+1)/2))``; ``E_MIN`` is the smallest normal double, and the
#: outermost edges are ``+-2**1022``, so that bounds read off the grid always have
#: a finite width ``hi - lo`` (larger magnitudes are counted in the outermost bins).
E_MIN, E_MAX = -2044, 2043
#: Bins of a public ``domain`` grid.
DOMAIN_BINS = 1024


@dataclass(frozen=True)
class BoundsGrid:
    """The fixed bins one column is counted into (data-independent).

    ``domain is None``: the signed log grid -- negative magnitude bins (largest
    first), one zero bin ``(-2**-1022, 2**-1022)``, positive magnitude bins; its
    edges are ``edges()``. Otherwise ``DOMAIN_BINS`` equal bins of ``domain``,
    values outside it counted in the first or last bin.
    """

    domain: tuple[float, float] | None = None

    @property
    def size(self) -> int:
        if self.domain is not None:
            return DOMAIN_BINS
        return 2 * (E_MAX - E_MIN + 1) + 1

    def edges(self) -> np.ndarray:
        """``size + 1`` increasing bin edges; bin ``i`` is ``[edges[i], edges[i+1])``
        (the last bin also holds its upper edge and, like the first, everything
        beyond). The log grid's outermost edges are ``+-2**1022``: any two edges
        are then valid public bounds (``hi - lo`` is finite)."""
        return self._edges.copy()

    @cached_property
    def _edges(self) -> np.ndarray:
        if self.domain is not None:
            lo, hi = self.domain
            return np.linspace(lo, hi, DOMAIN_BINS + 1)
        exps = np.arange(E_MIN, E_MAX + 2, dtype=np.float64) / 2.0
        magnitudes = np.exp2(exps)  # up to 2**1022: no overflow
        return np.concatenate((-magnitudes[::-1], magnitudes))

    @property
    def zero_bin(self) -> int:
        """The log grid's zero bin ``(-2**-1022, 2**-1022)``."""
        return E_MAX - E_MIN + 1

    @property
    def one_bin(self) -> int:
        """The log grid's bin ``[1, 2**0.5)``."""
        return self.zero_bin + 1 - E_MIN

    def index(self, values: np.ndarray) -> np.ndarray:
        """Bin of each (non-NaN) value, int64: exactly the bin whose edges hold it."""
        values = np.asarray(values, dtype=np.float64)
        where = np.searchsorted(self._edges, values, side="right") - 1
        return np.clip(where, 0, self.size - 1).astype(np.int64)


def column_histograms(columns, grid: BoundsGrid) -> np.ndarray:
    """Exact counts, int64[len(columns), grid.size], of float64 columns (no NaN)."""
    out = np.zeros((len(columns), grid.size), dtype=np.int64)
    for k, values in enumerate(columns):
        out[k] = np.bincount(grid.index(values), minlength=grid.size)
    return out


#: Threshold of the widening tests (each as if one of this many bins).
EXTEND_TESTS = 8
#: Bins looked at beyond the current edge when the occupied range is widened: an
#: empty bin between occupied ones (the [1.41, 2) bin of an integer column) is
#: crossed. On the log grid the zero bin and the bins of magnitude 0.5..2 are
#: neighbours too (a binary or count column's 0 and 1).
GAP_BINS = 4
#: Thin tails: blocks of ``BLOCK_BINS`` bins are added outward while their noisy
#: sum passes ``BLOCK_Z`` standard deviations of the noise in the block.
BLOCK_BINS = 2
BLOCK_Z = 4.0
#: A bound this many times nearer zero than the other (same sign) becomes zero.
SNAP_TO_ZERO = 16.0
#: A bound nearer zero than this (an edge next to the zero bin) becomes zero when
#: the other is not.
TINY = 2.0 ** -1000

#: Share of each column's epsilon spent on the first (grid) pass; the rest pays
#: for the refining pass (:func:`refinement_grid`).
FIRST_PASS_SHARE = 0.3
#: The refining pass is read when the first pass's bounds have one sign and
#: ``|hi| / |lo| <= REFINE_RATIO`` on the log grid (data far from zero relative to
#: their spread), or span at most ``1 / REFINE_RATIO`` of a public domain.
REFINE_RATIO = 8.0
#: Resolutions of the refining pass: ``REFINE_BINS / g`` bins for each ``g``.
REFINE_LEVELS = (1, 4, 16)
#: On a public domain grid, the first pass also looks at sums of ``g`` bins.
DOMAIN_LEVELS = (1, 4, 16, 64)
def _neighbours(grid: BoundsGrid, i: int, step: int) -> list[int]:
    """Bins tested beyond bin ``i`` going down (``step = -1``) or up (``+1``)."""
    size = grid.size
    out = [j for j in range(i + step, i + step * (GAP_BINS + 1), step) if 0 <= j < size]
    if grid.domain is None:
        zero, one = grid.zero_bin, grid.one_bin
        mirror = 2 * zero - one  # the bin of (-1.41, -1]
        if step < 0 and zero < i <= one + GAP_BINS:
            out.append(zero)  # small positive values: zero is next
        if step > 0 and mirror - GAP_BINS <= i < zero:
            out.append(zero)
        if i == zero:  # from zero to the magnitudes around 1 (0.5 to 2)
            around = range(one - 2, one + 2) if step > 0 else range(mirror - 1, mirror + 3)
            out += list(around)
    return out


def confirmed_core(core: np.ndarray, noisy: np.ndarray, grid: BoundsGrid,
                   confirm) -> np.ndarray:
    """The core bins, less the isolated groups the other pass does not confirm
    (:func:`standing_groups`).

    Core bins split into groups at gaps of more than ``LONG_GAP`` bins (the zero
    bin and the magnitudes around 1 are neighbours, :func:`_neighbours`). Without
    this, one empty bin whose noise passed the threshold (probability ``beta`` per
    reading) far from the data became a bound: ``(0, 4.2e51)`` for values in
    ``[0, 1]``."""
    if confirm is None or core.size < 2:
        return core
    cuts = [k + 1 for k, (a, b) in enumerate(zip(core[:-1], core[1:]))
            if b - a > LONG_GAP + 1 and b not in _neighbours(grid, int(a), +1)
            and a not in _neighbours(grid, int(b), -1)]
    groups = np.split(core, cuts)
    return np.concatenate([groups[k] for k in standing_groups(groups, noisy, confirm)])


def occupied_range(noisy: np.ndarray, grid: BoundsGrid, scale: float, confirm=None):
    """``(first, last, kept)``: the bins that pass the threshold for all ``K``
    bins (isolated groups of them confirmed by the other pass, when given:
    :func:`confirmed_core`), widened by neighbouring bins (:func:`_neighbours`,
    crossing empty ones) that pass the lower threshold for ``EXTEND_TESTS``
    tests, then by thin-tail blocks; ``kept`` marks the bins read as mass.
    ``None`` when no bin passes."""
    core = np.flatnonzero(noisy > noise_threshold(scale, noisy.size))
    core = confirmed_core(core, noisy, grid, confirm)
    if core.size == 0:
        return None
    kept = noisy > noise_threshold(scale, EXTEND_TESTS)
    kept[core] = True
    first, last = int(core[0]), int(core[-1])
    while True:
        below = [j for j in _neighbours(grid, first, -1) if kept[j] and j < first]
        if not below:
            break
        first = min(below)
    while True:
        above = [j for j in _neighbours(grid, last, +1) if kept[j] and j > last]
        if not above:
            break
        last = max(above)
    wide_first, wide_last = block_widen(noisy, first, last, scale, BLOCK_Z, BLOCK_BINS)
    kept[wide_first:first] = True
    kept[last + 1:wide_last + 1] = True
    return wide_first, wide_last, kept


def _weights(noisy, first: int, last: int, kept) -> np.ndarray:
    """Noisy counts of ``first..last`` (negative ones as 0) as mass, except runs of
    more than ``LONG_GAP`` bins between kept bins (nothing there passed a test)."""
    weights = np.clip(noisy[first:last + 1].astype(np.float64), 0.0, None)
    marked = np.flatnonzero(kept[first:last + 1])
    for a, b in zip(marked[:-1], marked[1:]):
        if b - a - 1 > LONG_GAP:
            weights[a + 1:b] = 0.0
    return weights


#: The inner edge of the log grid's outermost bins (``2**1021.5``, about
#: ``3e307``): ``+-inf``, and any value at least this large in size, fall past it.
OUTER_EDGE = float(np.exp2(E_MAX / 2.0))


def finite_part(noisy: np.ndarray) -> np.ndarray:
    """A log-grid histogram without its two outermost bins (magnitudes past
    ``2**1021.5``, about ``3e307``, where ``-inf`` and ``+inf`` are counted): no
    bound is read there, and the values there are clamped to the bounds read off
    the rest (post-processing; their noisy counts are reported, :func:`outer_rows`)."""
    out = np.array(noisy, copy=True)
    out[[0, -1]] = 0
    return out


def outer_rows(noisy: np.ndarray, scale: float) -> float:
    """The noisy count of a log-grid histogram's two outermost bins (infinite
    values, and values past about ``3e307``) when one of them passes the noise
    threshold of two tests, else 0 (post-processing)."""
    ends = np.asarray(noisy, dtype=np.float64)[[0, -1]]
    if not (ends > noise_threshold(scale, 2)).any():
        return 0.0
    return float(np.clip(ends, 0.0, None).sum())


def bounds_from_noisy(noisy: np.ndarray, grid: BoundsGrid, coverage: float,
                      scale: float, confirm=None) -> tuple[float, float] | None:
    """Read one column's bounds off its noisy histogram (post-processing only).

    1. Occupied range (:func:`occupied_range`): bins whose noisy count passes the
       threshold for all ``K`` bins (with probability ``>= 1 - beta`` no empty bin
       anywhere does), widened across empty neighbours and by thin-tail blocks.
    2. Within it, noisy counts (negative ones as 0, long empty runs as 0) give the
       cumulative distribution; the bounds are the lower edge of the bin where it
       reaches ``(1 - coverage) / 2`` and the upper edge of the bin where it
       reaches ``(1 + coverage) / 2``, one bin further out on each side. Bounds are
       bin edges, so ``lo < hi`` always (never zero width).

    ``None`` when no bin passes: too few rows for this budget.
    """
    edges = grid.edges()
    if grid.domain is not None:  # equal bins: read as the refining pass reads
        return linear_read(noisy, edges, coverage, scale, DOMAIN_LEVELS, guard_edges=False)
    noisy = finite_part(noisy)
    if confirm is not None:
        confirm = (finite_part(confirm[0]), confirm[1])
    found = occupied_range(noisy, grid, scale, confirm)
    if found is None:
        return None
    first, last, kept = found
    low, high = read_quantiles(_weights(noisy, first, last, kept), coverage)
    # one bin further out where the quantile is the range's outermost bin (a thin
    # tail beyond may have passed no test); inside it, the tail beyond was read
    lo_bin = max(first + low - (MARGIN_BINS if low == 0 else 0), 0)
    hi_bin = min(first + high + (MARGIN_BINS if first + high == last else 0), noisy.size - 1)
    lo, hi = float(edges[lo_bin]), float(edges[hi_bin + 1])
    if grid.domain is None:
        # On the log grid, a bound much nearer zero than the other means the data
        # run down towards zero in ever thinner half-octaves: include zero.
        if 0 < lo < hi / SNAP_TO_ZERO:
            lo = 0.0
        elif lo / SNAP_TO_ZERO < hi < 0:
            hi = 0.0
        # an edge of the zero bin's neighbours is zero for all purposes
        if -TINY < lo < 0 < TINY <= hi:
            lo = 0.0
        elif lo <= -TINY < 0 < hi < TINY:
            hi = 0.0
    return lo, hi


def refinement_grid(first: tuple[float, float] | None, grid: BoundsGrid) -> BoundsGrid | None:
    """The refining pass's grid: ``DOMAIN_BINS`` equal bins of the first pass's
    bounds, when those are far from zero relative to their width (one sign,
    ``|hi| / |lo| <= REFINE_RATIO``; on a domain grid, at most ``1 / REFINE_RATIO``
    of the domain). A function of the first pass's released bounds only. ``None``:
    no refinement (the first pass's bounds stand)."""
    if first is None:
        return None
    lo, hi = first
    if grid.domain is None:
        narrow = (0 < lo and hi <= REFINE_RATIO * lo) or (hi < 0 and lo >= REFINE_RATIO * hi)
    else:
        narrow = (hi - lo) * REFINE_RATIO <= grid.domain[1] - grid.domain[0]
    if not narrow:
        return None
    fine = BoundsGrid((lo, hi))
    edges = fine.edges()
    if not (np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)):
        return None  # too narrow to split into distinct floats
    return fine


def reach_past_a_miss(first: tuple[float, float], grid: BoundsGrid, noisy: np.ndarray,
                      coverage: float, scale: float) -> tuple[float, float] | None:
    """Bounds for a column whose refining pass shows the first pass's bounds
    missed data (post-processing; :func:`missed_sides` on the refining
    histogram ``noisy``), or ``None`` (unresolved).

    - On a public domain grid, a side that missed moves out to the domain's edge
      (every value is clamped into the domain).
    - On the log grid, a miss on the side towards zero moves that bound to zero:
      the first pass's noise hid the thin half-octaves between the data and zero
      (uniform data on ``[0, 1]`` read as ``(0.177, 1.41)``, about 1 release in
      200 per customer at 17,000 rows and ``eps_c = 0.14``, with 18% of the values
      below 0.177), and bounds reaching zero are what the first pass reads when
      it sees them (a bound nearer zero than a sixteenth of the other snaps to it).
    - A miss away from zero (or on both sides) is not placed: ``None``.
    """
    below, above = missed_sides(noisy, coverage, scale)
    lo, hi = first
    if grid.domain is not None:
        return (grid.domain[0] if below else lo, grid.domain[1] if above else hi)
    if below and not above and lo > 0:
        return 0.0, hi
    if above and not below and hi < 0:
        return lo, 0.0
    return None


def refined_from_noisy(noisy: np.ndarray, fine: BoundsGrid, coverage: float,
                       scale: float) -> tuple[float, float] | None:
    """Read the bounds off the refining pass's noisy histogram (post-processing):
    :func:`linear_read`, ``None`` (keep the first pass's bounds) when nothing
    stands out, the reading leaves the mass outside, or the range reaches an edge
    bin -- the edge bins also hold every value beyond the first pass's bounds, so
    the data were not inside them (:func:`first_bounds_missed` says whether that
    refutes the first bounds)."""
    return linear_read(noisy, fine.edges(), coverage, scale, REFINE_LEVELS, guard_edges=True)
