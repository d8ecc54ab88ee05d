"""Reading bounds off noisy histograms: the pieces the log grid's reading and the
equal-bin reading share (quantiles, thin-tail widening, thresholds, the
confirmation of isolated groups by a column's other pass) and the equal-bin
reading itself (:func:`linear_read`: a public ``domain`` grid and the refining
pass). Post-processing of released counts only; the mechanism and its proof are
in :mod:`dpmic_dask.privacy.bounds` and ``docs/privacy.md``."""

from __future__ import annotations

import math

import numpy as np

from dpmic_dask.privacy.boundschecks import BETA, holds_the_mass


def noise_threshold(scale: float, tests: int, beta: float = BETA) -> float:
    """``T`` with ``P(some of `tests` empty bins' noisy counts > T) <= beta``: each
    exceeds ``T`` with probability ``exp(-T / scale) / 2`` at most."""
    return scale * math.log(tests / (2.0 * beta))


#: Runs of more than ``LONG_GAP`` bins that passed no threshold, between bins that
#: did (the gap between zero and the magnitudes of a binary or count column), are
#: not read as mass: their noise alone would move the quantiles.
LONG_GAP = 64
#: Bins added outward on each side of the estimated quantiles.
MARGIN_BINS = 1
#: The refining pass's widening blocks pass at ``REFINE_Z`` noise deviations.
REFINE_Z = 2.5
#: Its margin: the found range's width over ``REFINE_MARGIN`` on each side.
REFINE_MARGIN = 4


def read_quantiles(weights: np.ndarray, coverage: float) -> tuple[int, int]:
    """Bins (indices into ``weights``) where the cumulative weight reaches
    ``(1 - coverage) / 2`` and ``(1 + coverage) / 2`` of the total."""
    cumulative = np.cumsum(weights)
    total = cumulative[-1]
    low = int(np.searchsorted(cumulative, (1 - coverage) / 2 * total, side="right"))
    high = int(np.searchsorted(cumulative, (1 + coverage) / 2 * total, side="left"))
    low = min(low, weights.size - 1)
    return low, min(max(high, low), weights.size - 1)


def block_widen(noisy, first: int, last: int, scale: float, z: float, block: int):
    """Add blocks of ``block`` bins outward while the next one, two or four blocks
    together have a noisy sum above ``z`` standard deviations of their noise
    (``scale sqrt(2 k)`` for ``k`` bins): one thin block does not stop the
    widening where the next ones hold mass."""
    def passes(a: int, b: int) -> bool:
        return b > a and float(noisy[a:b].sum()) > z * scale * math.sqrt(2.0 * (b - a))

    while first > 0:
        step = next((m for m in WIDEN_LOOKAHEAD
                     if passes(max(first - m * block, 0), first)), None)
        if step is None:
            break
        first = max(first - step * block, 0)
    while last < noisy.size - 1:
        step = next((m for m in WIDEN_LOOKAHEAD
                     if passes(last + 1, min(last + 1 + m * block, noisy.size))), None)
        if step is None:
            break
        last = min(last + step * block, noisy.size - 1)
    return first, last


#: Blocks looked at together when a widening step would stop.
WIDEN_LOOKAHEAD = (1, 2, 4)


def confirm_level(scale: float) -> float:
    """What the other pass's noisy sum over an empty group passes with probability
    ``beta`` at most for one bin: ``scale ln(1 / (2 beta))`` (a group of more
    bins is held to the same level)."""
    return scale * math.log(1.0 / (2.0 * BETA))


def standing_groups(groups: list[np.ndarray], noisy: np.ndarray, confirm) -> list[int]:
    """Which groups of core bins (arrays of bin indices) stand: the one with the
    largest noisy sum, and each other whose sum in ``confirm = (other_noisy,
    other_scale)`` -- the same column's other pass on the same grid, with
    independent noise -- passes :func:`confirm_level` (an empty group passes with
    probability ``beta`` at most). All of them without ``confirm``."""
    if confirm is None or len(groups) < 2:
        return list(range(len(groups)))
    other, other_scale = confirm
    other = np.asarray(other)
    heaviest = max(range(len(groups)), key=lambda k: float(noisy[groups[k]].sum()))
    return [k for k, g in enumerate(groups)
            if k == heaviest or float(other[g].sum()) > confirm_level(other_scale)]


def _aggregate_threshold(scale: float, bins: int, g: int, beta: float = BETA) -> float:
    """``T`` with ``P(some of `bins` sums of ``g`` Laplace(scale) > T) <= beta``:
    by Chernoff at ``lambda = 1 / (2 scale)``, one sum exceeds ``T`` with
    probability at most ``exp(-T / (2 scale)) (4/3)**g``. (Discrete Laplace of
    scale ``b`` is dominated the same way.)"""
    if g == 1:
        return noise_threshold(scale, bins, beta)
    return 2.0 * scale * (math.log(bins / beta) + g * math.log(4.0 / 3.0))


def linear_read(noisy: np.ndarray, edges: np.ndarray, coverage: float, scale: float,
                 levels, *, guard_edges: bool) -> tuple[float, float] | None:
    """Read bounds off a noisy histogram of equal bins (post-processing).

    1. Occupied core at the finest resolution (``levels``: sums of ``g``
       neighbouring bins) where some sum passes its threshold.
    2. Widened by blocks of an eighth of the core's width while a block's noisy sum
       passes ``REFINE_Z`` noise deviations.
    3. Quantiles as in :func:`bounds_from_noisy`, then a margin of a quarter of
       their distance (at least one bin) on each side.
    4. The bins outside must not hold more than the tail, up to noise
       (:func:`holds_the_mass`).

    ``None`` when nothing passes, when the reading fails step 4, or
    (``guard_edges``) when the range reaches an edge bin of the grid.
    """
    size = noisy.size
    for g in levels:
        sums = noisy.reshape(-1, g).sum(axis=1)
        core = np.flatnonzero(sums > _aggregate_threshold(scale, sums.size, g))
        if core.size:
            break
    else:
        return None
    first, last = int(core[0]) * g, int(core[-1]) * g + g - 1
    block = max(g, (last - first + 1) // 8)
    first, last = block_widen(noisy, first, last, scale, REFINE_Z, block)
    if guard_edges and (first == 0 or last == size - 1):
        return None
    weights = np.clip(noisy[first:last + 1].astype(np.float64), 0.0, None)
    low, high = read_quantiles(weights, coverage)
    margin = max(MARGIN_BINS, math.ceil((high - low + 1) / REFINE_MARGIN))
    lo_bin = max(first + low - margin, 0)
    hi_bin = min(first + high + margin, size - 1)
    if not holds_the_mass(noisy, lo_bin, hi_bin, coverage, scale):
        return None
    return float(edges[lo_bin]), float(edges[hi_bin + 1])
