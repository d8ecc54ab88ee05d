"""The copula test's bins from released marginal histograms.

Equal-width bins of loose public bounds put most rows of a skewed column (a
price, a count, ``exp`` of a Gaussian) in a few bins, where Kendall's ``tau_a``
counts their pairs as ties and shrinks towards 0 (``docs/causal.md``, Limits).
The release therefore spends a small share of its budget
(:data:`MARGIN_SHARE`) on one histogram per column over :data:`MARGIN_BINS`
equal-width fine bins of its public bounds -- one vector of ``p`` histograms,
L1 sensitivity ``2 p`` and L2 ``sqrt(2 p)`` under replacing one row -- and
places the copula's ``B`` bins at the quantiles of the noisy histograms
(:func:`quantile_lookup`; post-processing). Each column is then coded by its
fine bin and the released lookup (:class:`~dpmic_dask.causal.tables.ColumnCoding`
with ``lookup``), so the tau vector's proof (any binning fixed before it is
counted) is unchanged. ``docs/privacy.md``, section 10, "Bins from released
marginals".
"""

from __future__ import annotations

import math

import numpy as np

from dpmic_dask.causal.tables import ColumnCoding, LevelCounts, equal_width_bins
from dpmic_dask.stats.kindbase import number_axis

#: Equal-width fine bins of each column's histogram.
MARGIN_BINS = 2048
#: Share of the copula release's budget spent on the marginal histograms.
MARGIN_SHARE = 0.1
#: The bins go to noisy quantiles only when the noise of a cumulative count over all
#: fine bins (its standard deviation: ``sqrt(MARGIN_BINS)`` times one count's) is at
#: most this share of the rows; otherwise they stay equal-width (misplaced bins tie rows).
QUANTILE_ERROR = 0.1


def fine_margin_codings(codings) -> tuple[ColumnCoding, ...]:
    """``codings`` as :data:`MARGIN_BINS` equal-width bins of their bounds."""
    return tuple(ColumnCoding(c.name, MARGIN_BINS, bounds=c.bounds) for c in codings)


def margin_partition(frame, codings) -> LevelCounts:
    """One partition's fine histograms of ``codings`` (from :func:`fine_margin_codings`):
    per column the counts of its fine bins (int64[p, MARGIN_BINS]), missing flags and
    the row count; partitions add up (:func:`~dpmic_dask.causal.tables.combine_counts`)."""
    counts = np.zeros((len(codings), MARGIN_BINS), dtype=np.int64)
    missing = np.zeros(len(codings), dtype=bool)
    for j, coding in enumerate(codings):
        fine, nan = equal_width_bins(number_axis(frame[coding.name]), coding.bounds,
                                     MARGIN_BINS)
        missing[j] = bool(nan.any())
        counts[j] = np.bincount(fine, minlength=MARGIN_BINS)
    return LevelCounts(counts, missing, len(frame))


def margin_scale(part, p: int) -> float:
    """Noise scale of every fine count: L1 ``2 p``, L2 ``sqrt(2 p)`` (replace one row:
    one count down and one up in each column's histogram)."""
    return part.noise_scale(2.0 * p, math.sqrt(2.0 * p))


def quantile_lookup(histogram: np.ndarray, bins: int) -> bytes:
    """The copula bin of each fine bin: ``bins`` bins at the quantiles of
    ``histogram`` (noisy counts): its running sum, made non-decreasing and
    non-negative, is the cumulative distribution (zero-mean noise adds no mass to
    empty stretches, and its error grows like a random walk), and a fine bin goes
    to the bin of its middle's cumulative share. Equal-width bins when the total
    is not positive. Non-decreasing: a bin is a run of fine bins."""
    h = np.asarray(histogram, dtype=np.float64)
    fine = h.shape[0]
    cumulative = np.clip(np.maximum.accumulate(np.cumsum(h)), 0.0, None)
    total = cumulative[-1]
    if not total > 0:
        return ((np.arange(fine) * bins) // fine).astype(np.uint8).tobytes()
    before = np.concatenate(([0.0], cumulative[:-1]))
    middle = (before + cumulative) / (2.0 * total)
    return np.minimum(bins - 1, np.floor(middle * bins)).astype(np.uint8).tobytes()


def binned_codings(codings, lookups, bins: int) -> tuple[ColumnCoding, ...]:
    """``codings`` coded into ``bins`` bins through the released ``lookups``."""
    return tuple(ColumnCoding(c.name, bins, bounds=c.bounds, lookup=bytes(lk))
                 for c, lk in zip(codings, lookups))


__all__ = ["MARGIN_BINS", "MARGIN_SHARE", "QUANTILE_ERROR", "binned_codings",
           "fine_margin_codings", "margin_partition", "margin_scale", "quantile_lookup"]
