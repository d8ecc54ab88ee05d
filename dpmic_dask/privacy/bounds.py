"""Private bounds: public ranges estimated from the data with a declared budget.

Every column is counted into one fixed, data-independent histogram -- signed
half-octave bins covering the whole float range (or ``bins`` equal bins of a
loose public ``domain``) -- in one pass over the partitions; the counts are
exact integers, so partitions merge by summing. Each column's histogram is
released once with exact discrete Laplace noise of scale ``2 / eps_column``
(replacing one row moves one count down and one up: L1 sensitivity 2). The
bounds are then read off the noisy histogram, which is post-processing:

* the occupied range is the bins whose noisy count passes ``T = b ln(K / (2
  beta))`` (``K`` bins, scale ``b``, ``beta = 1e-3``: with probability at least
  ``1 - beta`` no empty bin passes), widened by neighbouring bins that pass a
  lower threshold (:func:`bounds_from_noisy`);
* within it, the lower bound is the lower edge of the bin where the cumulative
  noisy count reaches ``(1 - coverage) / 2`` of the total, the upper bound the
  upper edge of the bin where it reaches ``(1 + coverage) / 2``.

The result is a pair of plain numbers per column that can be kept and reused as
public bounds. Bin edges are powers of ``sqrt(2)``, so on the log grid a bound
overshoots the quantile it estimates by at most a factor ``sqrt(2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dpmic_dask.errors import InvalidParameterError

#: Half-octave exponents of the signed log grid: bin ``e`` holds magnitudes in
#: ``[2**(e/2), 2**((e+1)/2))``; ``E_MIN`` is the smallest normal double, and the
#: outermost edges are ``+-2**1022``, so that bounds read off the grid always have
#: a finite width ``hi - lo`` (larger magnitudes are counted in the outermost bins).
E_MIN, E_MAX = -2044, 2043
#: Probability that some empty bin's noisy count passes the threshold.
BETA = 1e-3
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


def noise_threshold(scale: float, tests: int, beta: float = BETA) -> float:
    """``T`` with ``P(some of `tests` empty bins' noisy counts > T) <= beta``: each
    exceeds ``T`` with probability ``exp(-T / scale) / 2`` at most."""
    return scale * math.log(tests / (2.0 * beta))


#: Bins tested on each side when the occupied range is widened.
EXTEND_TESTS = 8
#: Bins added outward on each side of the estimated quantiles.
MARGIN_BINS = 1
#: A bound this many times nearer zero than the other (same sign) becomes zero.
SNAP_TO_ZERO = 16.0


def bounds_from_noisy(noisy: np.ndarray, grid: BoundsGrid, coverage: float,
                      scale: float) -> tuple[float, float] | None:
    """Read one column's bounds off its noisy histogram (post-processing only).

    1. Occupied core: bins whose noisy count passes the threshold for all ``K``
       bins (with probability ``>= 1 - beta`` no empty bin anywhere does).
    2. Widening: a neighbouring bin just outside the range is added while its
       noisy count passes the (lower) threshold for ``EXTEND_TESTS`` tests, so
       thin tails next to the data are kept without letting far, empty bins in.
    3. Within the range, noisy counts (negative ones as 0) give the cumulative
       distribution; the bounds are the lower edge of the bin where it reaches
       ``(1 - coverage) / 2`` and the upper edge of the bin where it reaches
       ``(1 + coverage) / 2``. A single bin gives its own edges, so ``lo < hi``.

    ``None`` when no bin passes: too few rows for this budget.
    """
    edges = grid.edges()
    core = np.flatnonzero(noisy > noise_threshold(scale, noisy.size))
    if core.size == 0:
        return None
    first, last = int(core[0]), int(core[-1])
    near = noise_threshold(scale, EXTEND_TESTS)
    while first > 0 and noisy[first - 1] > near:
        first -= 1
    while last < noisy.size - 1 and noisy[last + 1] > near:
        last += 1
    kept = np.clip(noisy[first:last + 1].astype(np.float64), 0.0, None)
    cumulative = np.cumsum(kept)
    total = cumulative[-1]
    low = int(np.searchsorted(cumulative, (1 - coverage) / 2 * total, side="right"))
    high = int(np.searchsorted(cumulative, (1 + coverage) / 2 * total, side="left"))
    low = min(low, kept.size - 1)
    high = min(max(high, low), kept.size - 1)
    # one more bin outward on each side: the thresholds drop thin tails
    lo_bin = max(first + low - MARGIN_BINS, 0)
    hi_bin = min(first + high + MARGIN_BINS, noisy.size - 1)
    lo, hi = float(edges[lo_bin]), float(edges[hi_bin + 1])
    if grid.domain is None:
        # On the log grid, a bound much nearer zero than the other means the data
        # run down towards zero in ever thinner half-octaves: include zero.
        if 0 < lo < hi / SNAP_TO_ZERO:
            lo = 0.0
        elif lo / SNAP_TO_ZERO < hi < 0:
            hi = 0.0
    return lo, hi


def check_coverage(coverage) -> float:
    """The share of values the bounds aim to contain: a number in (0, 1)."""
    if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) \
            or not 0 < coverage < 1:
        raise InvalidParameterError("coverage must be a number between 0 and 1 (exclusive)")
    return float(coverage)


def check_domain(domain) -> tuple[float, float] | None:
    """A loose public ``(lo, hi)`` to grid instead of the whole float range, or None."""
    if domain is None:
        return None
    try:
        lo, hi = (float(v) for v in domain)
    except (TypeError, ValueError):
        raise InvalidParameterError("domain must be (lo, hi), two finite numbers") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError("domain must be (lo, hi), finite, with lo < hi")
    return lo, hi
