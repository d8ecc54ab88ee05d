"""Goodness-of-fit helpers for noise distributions (their power is tested too)."""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats

ALPHA = 1e-4  # per-test false alarm rate for unseeded (CSPRNG) samples


def rerun_once(test):
    """Run a test of unseeded noise a second time, on fresh draws, when its first
    run fails: a correct sampler then fails with probability about ALPHA**2 (not
    ALPHA, which over the suite's ~60 checks fails about one CI run in 170), while
    a sampler at a wrong scale fails both runs. Seeded tests rerun identically."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except AssertionError:
            return test(*args, **kwargs)

    return run


def discrete_laplace_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    r = np.exp(-1.0 / scale)
    return (1 - r) / (1 + r) * r ** np.abs(support)


def discrete_gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    wide = np.arange(-int(40 * sigma) - 50, int(40 * sigma) + 51)
    norm = np.exp(-wide.astype(float) ** 2 / (2 * sigma ** 2)).sum()
    return np.exp(-support.astype(float) ** 2 / (2 * sigma ** 2)) / norm


def chi_square_pvalue(samples: np.ndarray, pmf, min_expected: float = 20.0) -> float:
    """Chi-square p-value of integer ``samples`` against ``pmf(support)``.

    Values are binned individually where the expected count is at least
    ``min_expected``; both tails are merged into one bin each.
    """
    samples = np.asarray(samples, dtype=np.int64)
    n = samples.size
    lo, hi = -1, 1
    # grow the central support while every cell keeps enough expected mass
    while pmf(np.array([lo - 1]))[0] * n >= min_expected:
        lo -= 1
    while pmf(np.array([hi + 1]))[0] * n >= min_expected:
        hi += 1
    support = np.arange(lo, hi + 1)
    p_mid = pmf(support)
    p_low = max(0.0, (1.0 - p_mid.sum()) / 2)  # symmetric distributions
    expected = np.concatenate(([p_low], p_mid, [p_low])) * n
    observed = np.concatenate((
        [(samples < lo).sum()],
        np.bincount(samples[(samples >= lo) & (samples <= hi)] - lo, minlength=support.size),
        [(samples > hi).sum()],
    ))
    keep = expected > 0
    expected = expected[keep] * observed[keep].sum() / expected[keep].sum()
    return float(stats.chisquare(observed[keep], expected).pvalue)


def ks_pvalue(samples: np.ndarray, cdf) -> float:
    return float(stats.kstest(samples, cdf).pvalue)
