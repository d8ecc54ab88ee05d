"""Reading the check of public bounds off its noisy histograms
(:mod:`dpmic_dask.release.bounds_check`): post-processing of released counts
with public constants only -- the shortest run holding most of the clipped
mass, whether the bounds look far wider than the values, whether the reading
settles that at all, and piles at a bound."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Equal-width bins of each checked column's public range.
CHECK_BINS = 16
#: The run of bins reported holds this share of the clipped noisy mass.
COVERAGE = 0.99
#: A run spanning at most this share of the range makes the bounds "far wider".
NARROW = 0.25
#: ... and only when the noisy total is at least this many noise scales (then 1%
#: of the rows is at least two noise scales, and the clipped noise of an empty bin,
#: about half a scale on average, cannot pass for the data's tail).
MIN_TOTAL_SCALES = 200
#: An end bin holding at least this share of the noisy total, while the other end
#: bin holds under ``PILED_OTHER`` of it, is said (the values there may lie beyond
#: the bound, clamped), whether or not the bounds look wide: the clipped mass of
#: the other bins can hide such a pile from the run's reading. A 0/1 column, or a
#: zero-inflated one with most values elsewhere, is not a pile.
PILED = 0.9
PILED_OTHER = 0.01
#: ... plus this many noise scales: an empty end bin's noise alone passes 1% of
#: the rows in about 1 release in 20 at 233 scales of rows (then a pile went
#: unsaid); past 6 scales, in about 1 in 800 (discrete Laplace). A 0/1 column with
#: 5% or more of either value stays apart from 400 noise scales of rows.
PILED_NOISE = 6.0
#: An end bin holding at least this share of the noisy total, and at least
#: ``SPIKE`` times the bin next to it plus ``PILED_NOISE`` noise scales, is said
#: too (``ColumnCheck.at_bound``): values beyond the bound are clamped into it and
#: look the same as values at the bound (a smooth column's end bin holds about as
#: much as its neighbour; one cut by its bounds, far more).
AT_BOUND = 0.1
SPIKE = 4.0
#: One bin (not an end bin) holding at least this share of the noisy total is
#: said (``ColumnCheck.one_bin``): the column is about constant, or its bounds far
#: wider than its values.
ONE_BIN = 0.9


@dataclass(frozen=True)
class ColumnCheck:
    """What the noisy histogram of one column says (post-processing only): the
    shortest run of bins ``first..last`` holding ``COVERAGE`` of the clipped noisy
    mass (``None`` if the clipped mass is 0), the run's edges in axis numbers,
    and whether the bounds look far wider than the values (``wide``)."""

    run: tuple | None
    edges: tuple | None
    ratio: float | None
    confident: bool
    wide: bool
    #: ``"lower"`` or ``"upper"``: the end bin at that bound holds at least
    #: :data:`PILED` of the noisy total (values beyond the bound are clamped into
    #: it and look the same as values just inside); its share is ``piled_share``
    piled: str | None = None
    piled_share: float | None = None
    #: Whether the reading settles the question: the bounds look wide, or the
    #: mass outside every window of ``NARROW`` of the range exceeds what the
    #: clipped noise of empty bins gives (:func:`rules_out_narrow`). A confident
    #: column that is not settled could hold all its values in such a window.
    settled: bool = True
    #: End bins (not :attr:`piled`) holding at least :data:`AT_BOUND` of the noisy
    #: total and far more than their neighbours: ``(("lower" | "upper", share),
    #: ...)`` -- values at the bound, or beyond it and clamped.
    at_bound: tuple = ()
    #: ``(bin, share)``: an inner bin holding at least :data:`ONE_BIN` of the noisy
    #: total (the column about constant, or its bounds far wider than its values).
    one_bin: tuple | None = None
    #: Whether the end bin facing the one :attr:`at_bound` holds far more than its
    #: neighbour too, however few rows (a column of two values, one at each bound).
    other_end_spike: bool = False

    @property
    def said(self) -> bool:
        """Whether the reading says something of its own about the column."""
        return bool(self.wide or self.piled or self.at_bound or self.one_bin)


def shortest_run(noisy, coverage: float = COVERAGE) -> tuple[int, int] | None:
    """The shortest run of consecutive bins holding ``coverage`` of the clipped-at-0
    mass of ``noisy`` (ties: the run with more mass, then the leftmost); ``None``
    when nothing is left after clipping. Exact integer arithmetic."""
    mass = np.maximum(np.asarray(noisy, dtype=np.int64), 0)
    whole = int(mass.sum())
    if whole <= 0:
        return None
    # coverage as a fraction p/q, compared in integers: q * run >= p * whole
    p, q = (coverage).as_integer_ratio()
    prefix = np.concatenate(([0], np.cumsum(mass)))
    for length in range(1, mass.size + 1):
        sums = prefix[length:] - prefix[:-length]
        ok = [i for i, s in enumerate(sums.tolist()) if q * s >= p * whole]
        if ok:
            start = max(ok, key=lambda i: (int(sums[i]), -i))
            return start, start + length - 1
    return 0, mass.size - 1  # pragma: no cover - the whole range always holds it


def read_check(noisy, bounds, scale: float) -> ColumnCheck:
    """The rule, on released values only: the shortest run holding ``COVERAGE`` of
    the clipped noisy mass; the bounds are far wider than the values when the run
    spans at most ``NARROW`` of the range and the noisy total (before clipping) is
    at least ``MIN_TOTAL_SCALES`` noise scales."""
    noisy = np.asarray(noisy, dtype=np.int64)
    confident = bool(int(noisy.sum()) >= MIN_TOTAL_SCALES * scale)
    run = shortest_run(noisy)
    if run is None:
        return ColumnCheck(None, None, None, confident, False)
    first, last = run
    lo, hi = bounds
    width = hi - lo
    edges = (lo + width * first / CHECK_BINS,
             hi if last == CHECK_BINS - 1 else lo + width * (last + 1) / CHECK_BINS)
    span = last - first + 1
    ratio = CHECK_BINS / span
    piled, share = None, None
    if confident:  # the end bins' shares of the noisy total (unbiased, unclipped)
        total = float(noisy.sum())
        for side, count, other in (("lower", noisy[0], noisy[-1]),
                                   ("upper", noisy[-1], noisy[0])):
            # the other end nearly empty: not a 0/1 column, nor one spanning its bounds
            if count >= PILED * total and other < PILED_OTHER * total + PILED_NOISE * scale:
                piled, share = side, float(count) / total
    wide = confident and span <= NARROW * CHECK_BINS
    settled = wide or (confident and rules_out_narrow(noisy, scale))
    at_bound, one_bin, spike = (), None, False
    if confident and not wide and piled is None:
        at_bound = heavy_ends(noisy, PILED_NOISE * scale)
        if len(at_bound) == 1:
            other = "upper" if at_bound[0][0] == "lower" else "lower"
            spike = bool(heavy_ends(noisy, PILED_NOISE * scale, share=0.0, only=other))
    top = int(np.argmax(noisy))
    if confident and piled is None and 0 < top < CHECK_BINS - 1 and \
            noisy[top] >= ONE_BIN * float(noisy.sum()):  # said so, wide or not
        one_bin = (top, float(noisy[top]) / float(noisy.sum()))
    return ColumnCheck(run, edges, ratio, confident, wide, piled, share, settled, at_bound,
                       one_bin, spike)


def heavy_ends(noisy, allowance: float, share: float = AT_BOUND, only: str | None = None,
               total: float | None = None) -> tuple:
    """The end bins (or the ``only`` one) holding at least ``share`` of ``total``
    (by default the noisy total) and at least :data:`SPIKE` times their neighbour
    (clipped at 0) plus ``allowance`` counts of noise: ``(side, share)`` each
    (post-processing of released counts)."""
    total = float(np.sum(noisy)) if total is None else float(total)
    out = []
    for side, end, next_to in (("lower", 0, 1), ("upper", -1, -2)):
        count = float(noisy[end])
        if only not in (None, side):
            continue
        if count >= share * total and \
                count >= SPIKE * max(float(noisy[next_to]), 0.0) + allowance:
            out.append((side, count / total))
    return tuple(out)


#: Noise allowances of :func:`rules_out_narrow`: the empty bins' clipped noise is
#: allowed its mean plus this many standard deviations.
NOISE_SDS = 4.0


def clipped_noise_moments(scale: float) -> tuple[float, float]:
    """Mean and variance of ``max(Z, 0)`` for discrete Laplace ``Z`` of ``scale``
    (``r = exp(-1 / scale)``: ``E = r / ((1 + r)(1 - r))``, ``E[max(Z, 0)**2] =
    r / (1 - r)**2``); about ``scale / 2`` and ``3 scale**2 / 4``."""
    r = math.exp(-1.0 / scale)
    mean = r / ((1.0 + r) * (1.0 - r))
    return mean, r / (1.0 - r) ** 2 - mean * mean


def rules_out_narrow(noisy, scale: float) -> bool:
    """Whether the noisy counts show more than ``1 - COVERAGE`` of the rows outside
    every window of ``NARROW`` of the bins, after allowing the bins outside the
    window the clipped noise they would hold if empty (mean plus
    :data:`NOISE_SDS` standard deviations). Without it, a column whose values
    all sit in one bin could be read as "not wide" only because the clipped noise
    of its 15 empty bins (about 7.5 noise scales) outweighs 1% of the rows (2
    scales at 200 scales of rows). Public constants and released counts only."""
    mass = np.maximum(np.asarray(noisy, dtype=np.int64), 0).astype(np.float64)
    window = int(NARROW * mass.size)
    inside = max(float(mass[i:i + window].sum()) for i in range(mass.size - window + 1))
    outside = float(mass.sum()) - inside
    empty = mass.size - window
    mean, variance = clipped_noise_moments(scale)
    allowance = empty * mean + NOISE_SDS * math.sqrt(empty * variance)
    return outside - allowance > (1.0 - COVERAGE) * float(np.asarray(noisy).sum())


#: A categorical column with a public list: flagged when at least this share of its
#: rows (noisy) is outside the list, in its one "other" bin.
OUTSIDE = 0.5


@dataclass(frozen=True)
class ListCheck:
    """What the noisy counts of a categorical column's rows inside and outside its
    public list say (post-processing only): ``share`` the clipped noisy share
    outside, ``confident`` whether the noisy total is at least
    :data:`MIN_TOTAL_SCALES` noise scales, ``outside`` whether at least
    :data:`OUTSIDE` of the rows look outside the list (said only when confident)."""

    share: float | None
    confident: bool
    outside: bool


def read_list(noisy, scale: float) -> ListCheck:
    """The rule for a categorical column, on its two released counts (rows in its
    list, with the null category, and rows in "other") only."""
    inside, other = (int(x) for x in np.asarray(noisy, dtype=np.int64))
    total = inside + other
    confident = bool(total >= MIN_TOTAL_SCALES * scale)
    clipped = max(inside, 0) + max(other, 0)
    share = max(other, 0) / clipped if clipped > 0 else None
    return ListCheck(share, confident, confident and share is not None and share >= OUTSIDE)


__all__ = ["AT_BOUND", "CHECK_BINS", "COVERAGE", "MIN_TOTAL_SCALES", "NARROW", "NOISE_SDS",
           "ONE_BIN", "OUTSIDE", "PILED", "PILED_NOISE", "PILED_OTHER", "SPIKE", "ColumnCheck",
           "ListCheck", "heavy_ends",
           "clipped_noise_moments", "read_check", "read_list", "rules_out_narrow",
           "shortest_run"]
