"""Checks on private bounds: whether a reading off a noisy histogram holds the
data's mass (the runs of bins outside it sum to no more than the tail and the
noise allow), and the checks of the ``coverage`` and ``domain`` arguments.
Post-processing of released counts only."""

from __future__ import annotations

import math

import numpy as np

from dpmic_dask.errors import InvalidParameterError

#: Probability that some empty bin's noisy count passes the threshold.
BETA = 1e-3


def sum_threshold(scale: float, m: int, p: float) -> float:
    """``t`` with ``P(sum of m Laplace(scale) draws > t) <= p`` (Chernoff, at the
    best ``lambda`` for ``t``: ``exp(-lambda t) (1 - (scale lambda)^2)^-m``; discrete
    Laplace of scale ``b`` is dominated the same way). About ``4.5`` standard
    deviations of the sum for large ``m`` at ``p = 4e-5``."""
    target = math.log(p)

    def log_bound(t: float) -> float:
        x = t / scale
        u = (math.sqrt(m * m + x * x) - m) / x  # the best lambda, times scale
        return -u * x - m * math.log1p(-u * u)

    lo, hi = 0.0, scale * (2.0 * math.sqrt(-m * target) - 2.0 * target + 1.0)
    while log_bound(hi) > target:
        hi *= 2.0
    for _ in range(50):
        mid = (lo + hi) / 2.0
        if log_bound(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def _outside_windows(size: int, lo_bin: int, hi_bin: int):
    """Runs of bins outside ``lo_bin..hi_bin`` next to them: 1, 2, 4, ... bins
    outward and the whole rest, on each side."""
    for start, stop, down in ((0, lo_bin, True), (hi_bin + 1, size, False)):
        rest = stop - start
        m = 1
        while rest > 0:
            m = min(m, rest)
            yield (stop - m, stop) if down else (start, start + m)
            if m == rest:
                break
            m *= 2


def holds_the_mass(noisy: np.ndarray, lo_bin: int, hi_bin: int, coverage: float,
                   scale: float, beta: float = BETA) -> bool:
    """Whether the bins ``lo_bin..hi_bin`` of an equal-bin histogram hold the mass
    (post-processing): ``False`` when a run of bins outside them next to them
    (:func:`_outside_windows`) has a noisy sum above ``1 - coverage`` of the noisy
    total plus :func:`sum_threshold` for its length -- more than the tail the
    bounds may leave out, beyond what noise reaches with probability ``beta`` over
    all runs. A reading whose core was noise (one bin that passed its threshold
    far from the data, or in the middle of data too thin to pass anywhere else)
    leaves the rest of the data outside and fails this."""
    size = noisy.size
    windows = list(_outside_windows(size, lo_bin, hi_bin))
    if not windows:
        return True
    allowed = (1.0 - coverage) * max(float(noisy.sum()), 0.0)
    cumulative = np.concatenate(([0.0], np.cumsum(noisy, dtype=np.float64)))
    p = beta / len(windows)
    for a, b in windows:
        if cumulative[b] - cumulative[a] > allowed + sum_threshold(scale, b - a, p):
            return False
    return True


def missed_sides(noisy: np.ndarray, coverage: float, scale: float,
                 beta: float = BETA) -> tuple[bool, bool]:
    """``(below, above)``: whether the refining pass's noisy histogram shows the
    first pass's bounds missed data below (above) them (post-processing): its end
    bins also hold every value beyond those bounds, and the end bin has a noisy
    count above ``1 - coverage`` of the noisy total plus what noise reaches with
    probability ``beta`` over the two."""
    allowed = (1.0 - coverage) * max(float(noisy.sum()), 0.0)
    limit = allowed + sum_threshold(scale, 1, beta / 2.0)
    return bool(noisy[0] > limit), bool(noisy[-1] > limit)


def first_bounds_missed(noisy: np.ndarray, coverage: float, scale: float,
                        beta: float = BETA) -> bool:
    """Whether the first pass's bounds missed the data on either side
    (:func:`missed_sides`). The first bounds then cannot stand as they are (nor
    can bounds read inside them)."""
    return any(missed_sides(noisy, coverage, scale, beta))


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


__all__ = ["BETA", "check_coverage", "check_domain", "first_bounds_missed", "holds_the_mass",
           "missed_sides",
           "sum_threshold"]
