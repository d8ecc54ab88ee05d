"""The copula test without bins: signs at released medians (the quadrant release).

When the noise would misplace bins at released quantiles (few rows for the
budget, many columns), Kendall's tau on equal-width bins ties the rows of skewed
columns and its vector's L1 sensitivity ``p^2 / n`` makes large Laplace noise.
This release needs neither:

1. **Medians** (:func:`median_cuts`): from the first pass's exact fine
   histograms (2048 equal-width bins per column), each column's cut is chosen by
   report-noisy-max (OpenDP's exact noisy top-1) of ``-|C(k) - n / 2|`` over the
   2049 cuts ``k``, ``C(k)`` the rows below fine bin ``k``: replacing one row
   moves every ``C(k)`` by at most 1, so the scores' L-infinity sensitivity is 1.
   The columns' picks share :data:`~dpmic_dask.causal.copulabins.MARGIN_SHARE`
   of the budget equally.
2. **One vector release** (:class:`QuadrantBudget`): every row's sign vector
   ``s`` (``+1`` at or above its column's cut, ``-1`` below) gives the ``p`` sums
   ``M_a = sum s_a`` and the ``P`` sums ``C_ab = sum s_a s_b``: integers, with
   L1 sensitivity ``floor((p + 1)^2 / 2)`` and L2 ``sqrt(2 floor((p + 1)^2 / 2))
   <= p + 1`` under replacing one row (half of tau's L1 for large ``p``), released
   with discrete Laplace (pure DP) or discrete Gaussian (zCDP) noise.
3. **Post-processing** (:func:`tetrachoric`): the Gaussian copula's correlation of
   each pair from its 2 x 2 table of signs (the tetrachoric correlation, which
   holds for any cut, not only the median), and for the tests its slope in the
   released concordance and its sampling variance at independence.

Per privacy unit (adding or removing up to ``k`` rows) the same release holds
with the sensitivities :func:`quadrant_unit_l1` and :func:`quadrant_unit_l2` and
scores of sensitivity ``k / 2`` (:mod:`dpmic_dask.causal.copulaunit`).

``docs/privacy.md``, section 10, "Signs at released medians", and section 12,
"Causal discovery per unit", have the proofs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from dpmic_dask.causal.copulabins import MARGIN_BINS
from dpmic_dask.causal.tables import equal_width_bins
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.noise import with_count_noise
from dpmic_dask.privacy.selection import NoisyTopK
from dpmic_dask.stats.kindbase import number_axis

#: Gauss-Legendre nodes of the integral of the bivariate normal density over the
#: correlation (Plackett's identity), used by :func:`orthant`.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(48)
#: Released shares above a cut are kept inside this distance of 0 and 1; a column
#: whose share is within it is one-sided (:func:`one_sided`), and a released
#: histogram with all but this share of the rows in one bin is read the same way.
ONE_SIDE = 1e-3
_EDGE = ONE_SIDE
#: A released share is also one-sided within this many standard deviations of
#: its noise of 0 or 1: a constant column's noisy share lands that far inside,
#: and the few rows a share that close leaves on one side are the noise's, so
#: the pair's 2 x 2 table -- and a tetrachoric correlation read off it -- is noise.
FLAT_Z = 4.0
#: ... up to this share: where the noise is wider, every share is mostly noise
#: (the release warns so) and reading them all as one-sided would name every
#: column as piled at one side, an explanation the data need not bear.
FLAT_MOST = 0.05
#: Largest absolute tetrachoric correlation returned.
_MOST = 0.999
#: Quasi-random draws of the latent normals behind a test's covariance of sign
#: products, where four or more columns are involved (:func:`concordance_variance`).
QMC_POINTS = 8192


def quadrant_l1(p: int) -> int:
    """L1 sensitivity of ``(M, C)``: ``f`` flipped signs change ``2 f`` sums of one
    column and ``2 f (p - f)`` sums of pairs, each by 2; the largest over integer
    ``f`` is ``floor((p + 1)^2 / 2)``."""
    return (p + 1) ** 2 // 2


def quadrant_l2(p: int) -> float:
    """L2 sensitivity of ``(M, C)``: ``sqrt(4 f (p - f + 1)) = sqrt(2 L1)``."""
    return math.sqrt(2.0 * quadrant_l1(p))


def quadrant_unit_l1(p: int, k: int) -> int:
    """L1 sensitivity of ``(M, C)`` when one unit of up to ``k`` rows is added or
    removed: each row adds ``+-1`` to every one of the ``p + P`` sums."""
    return k * (p + p * (p - 1) // 2)


def quadrant_unit_l2(p: int, k: int) -> float:
    """L2 sensitivity of the same: ``k sqrt(p + P)`` (triangle inequality)."""
    return k * math.sqrt(p + p * (p - 1) // 2)


def median_scores(histogram: np.ndarray, n: int) -> np.ndarray:
    """``-|C(k) - n / 2|`` for the cuts ``k = 0 .. len(histogram)`` (``C(k)``: the
    counts of fine bins below ``k``)."""
    below = np.concatenate(([0], np.cumsum(np.asarray(histogram, dtype=np.int64))))
    return -np.abs(below - 0.5 * n)


def median_selector(part: PrivacyCost, p: int):
    """The noisy top-1 that picks one column's cut, with ``part`` shared by ``p``."""
    (each,) = part.measure.split(part, [1.0 / p])
    return NoisyTopK(k=1, budget=each.amount(), delta=part.delta, statistic="median rank")


def median_cuts(histograms: np.ndarray, n: int, part: PrivacyCost,
                sensitivity: float = 1.0) -> np.ndarray:
    """Each column's released cut (a fine-bin index ``0 .. MARGIN_BINS``), by
    noisy top-1 of :func:`median_scores` (L-infinity ``sensitivity``: 1 under
    replacing one row with public ``n``; ``k / 2`` per unit of up to ``k`` rows, ``n``
    each histogram's own total); call only after the charge."""
    selector = median_selector(part, histograms.shape[0])
    cuts = [selector.select(MARGIN_BINS + 1, median_scores(h, n), sensitivity)[0]
            for h in histograms]
    return np.asarray(cuts, dtype=np.int64)


@dataclass
class SignSums:
    """``M`` (int64[p]), the upper triangle of ``C`` (int64[P]), missing flags and
    rows of some partitions; they add up."""

    sums: np.ndarray
    cross: np.ndarray
    missing: np.ndarray
    rows: int

    def __add__(self, other: SignSums) -> SignSums:
        return SignSums(self.sums + other.sums, self.cross + other.cross,
                        self.missing | other.missing, self.rows + other.rows)

    def vector(self) -> np.ndarray:
        return np.concatenate([self.sums, self.cross])


def sign_partition(frame, codings, cuts) -> SignSums:
    """One partition's sign sums: each column's fine bin (:data:`MARGIN_BINS`
    equal-width bins of its public bounds, values clamped) against its cut."""
    p = len(codings)
    n = len(frame)
    signs = np.empty((n, p), dtype=np.float64)
    missing = np.zeros(p, dtype=bool)
    for j, coding in enumerate(codings):
        fine, nan = equal_width_bins(number_axis(frame[coding.name]), coding.bounds,
                                     MARGIN_BINS)
        missing[j] = bool(nan.any())
        signs[:, j] = np.where(fine >= cuts[j], 1.0, -1.0)
    # products of +-1 summed in float64: exact below 2^53 rows
    cross = np.rint(signs.T @ signs)[np.triu_indices(p, 1)].astype(np.int64)
    return SignSums(np.rint(signs.sum(axis=0)).astype(np.int64), cross, missing, n)


def combine_signs(a: SignSums, b: SignSums) -> SignSums:
    """Exact, associative sum of two partitions' sign sums."""
    return a + b


@dataclass(frozen=True)
class QuadrantBudget:
    """The one release of the sign sums: integer noise on each of ``p + P`` sums."""

    total: PrivacyCost
    p: int
    n: int
    #: 0: replace one row; ``k >= 1``: add or remove one unit of up to ``k`` rows
    k: int = 0

    def _sensitivities(self) -> tuple[float, float]:
        if self.k:
            return float(quadrant_unit_l1(self.p, self.k)), quadrant_unit_l2(self.p, self.k)
        return float(quadrant_l1(self.p)), quadrant_l2(self.p)

    @property
    def sensitivity(self) -> float:
        return self.total.sensitivity(*self._sensitivities())

    @property
    def count_scale(self) -> float:
        """Discrete Laplace scale or Gaussian sigma of every released sum."""
        return self.total.noise_scale(*self._sensitivities())

    @property
    def scale(self) -> float:
        """The same per row: the noise scale of each released concordance ``C / n``."""
        return self.count_scale / self.n

    @property
    def variance(self) -> float:
        """Variance of one released concordance's noise."""
        return self.total.law.variance(self.count_scale) / self.n**2

    def release(self, exact: np.ndarray) -> np.ndarray:
        """``exact`` (the ``p + P`` sums) with one exact integer draw each."""
        return with_count_noise(exact, self.total.law.draw(self.count_scale, int(exact.size)))

    def describe(self) -> str:
        pairs = self.p * (self.p - 1) // 2
        return (f"one release of {self.p} + {pairs} sums of signs at the medians: "
                f"{self.total.law.scale_words} {self.count_scale:.4g} each "
                f"({self.total.norm} sensitivity {self.sensitivity:.4g} of the whole vector)")


def _density(h, k, r):
    """The standard bivariate normal density at ``(h, k)`` with correlation ``r``."""
    det = 1.0 - r * r
    return np.exp(-(h * h - 2.0 * r * h * k + k * k) / (2.0 * det)) / (
        2.0 * math.pi * np.sqrt(det))


def orthant(h, k, r):
    """``P(Z1 <= h, Z2 <= k)`` at correlation ``r`` (arrays of one shape) less
    ``Phi(h) Phi(k)``: the integral of the density over the correlation from 0 to
    ``r`` (Plackett's identity), by Gauss-Legendre quadrature."""
    half = 0.5 * r
    nodes = half[..., None] * (_NODES + 1.0)
    inner = (_density(h[..., None], k[..., None], nodes) * _WEIGHTS).sum(axis=-1)
    return half * inner


def one_sided(released: np.ndarray, p: int, n: int, edge: float = _EDGE,
              spread: float = 0.0) -> np.ndarray:
    """Which columns' released share of sign ``+1`` is within ``edge + FLAT_Z
    spread`` (at most ``edge + FLAT_MOST``) of 0 or 1 (``spread``: the standard
    deviation of one share's noise):
    (nearly) every row on one side of the cut, as for values piled at a bound or
    a constant column, or no more rows on the other side than the noise could
    show. Their correlations are read as 0 (:func:`tetrachoric`)."""
    near = edge + min(FLAT_Z * spread, FLAT_MOST)
    raw = 0.5 * (1.0 + np.asarray(released[:p], dtype=np.float64) / n)
    return ~((raw > near) & (raw < 1.0 - near))


def share_spread(noise_var: float, count_sd: float = 0.0, n: int = 1) -> float:
    """The standard deviation of a released share of sign ``+1``, ``(1 + M / n) /
    2``, from the variance ``noise_var`` of one released sum divided by ``n`` and,
    where ``n`` is itself a noisy count (per unit), that count's standard
    deviation ``count_sd`` (a constant column's ``M`` is ``+-`` the true count)."""
    return 0.5 * math.sqrt(noise_var + (count_sd / max(n, 1)) ** 2)


def tetrachoric(released: np.ndarray, p: int, n: int, spread: float = 0.0):
    """Post-processing of the released sums: ``(r, slope, sampling, h)``.

    ``r``: each pair's tetrachoric correlation (its share of rows with both signs
    ``+1`` matched by the bivariate normal orthant at the released shares; 0 for a
    column whose released share of ``+1`` is within 0.001 of 0 or 1, or within
    ``FLAT_Z`` times its noise's standard deviation ``spread`` of them,
    :func:`one_sided`);
    ``slope``: ``d r / d (C_ab / n) = 1 / (4 density)``; ``sampling``: ``n`` times
    the variance of ``r`` at independence, ``pi_a (1 - pi_a) pi_b (1 - pi_b) /
    (phi(h_a) phi(h_b))^2`` (``pi^2 / 4`` at the medians), each p x p; ``h``: each
    column's latent cut (a sign ``+1`` is ``Z <= h`` of a standard normal ``Z``)."""
    iu = np.triu_indices(p, 1)
    sums, cross = released[:p] / n, released[p:] / n
    share = np.clip(0.5 * (1.0 + sums), _EDGE, 1.0 - _EDGE)  # of rows with sign +1
    # a column with (nearly) every row on one side of its cut shows no dependence
    degenerate = one_sided(released, p, n, spread=spread)
    inv = np.vectorize(NormalDist().inv_cdf)
    h = inv(share)  # a sign +1 is "Z <= h" of a standard normal Z (orientation only)
    a, b = iu
    both = 0.25 * (1.0 + sums[a] + sums[b] + cross)
    lower = np.maximum(0.0, share[a] + share[b] - 1.0)
    upper = np.minimum(share[a], share[b])
    both = np.clip(both, lower + 1e-9, upper - 1e-9) - share[a] * share[b]
    lo, hi = np.full(a.size, -_MOST), np.full(a.size, _MOST)
    for _ in range(40):  # bisection: the orthant grows with r
        mid = 0.5 * (lo + hi)
        above = orthant(h[a], h[b], mid) > both
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    rho = np.where(degenerate[a] | degenerate[b], 0.0, 0.5 * (lo + hi))
    r = np.eye(p)
    r[iu] = rho
    r.T[iu] = rho
    slope = np.zeros((p, p))
    slope[iu] = 0.25 / _density(h[a], h[b], rho)
    slope.T[iu] = slope[iu]
    dens = np.exp(-0.5 * h * h) / math.sqrt(2.0 * math.pi)
    each = share * (1.0 - share) / dens**2
    sampling = np.outer(each, each)
    return r, slope, sampling, h


def concordances(released: np.ndarray, p: int, n: int) -> np.ndarray:
    """The released pairs' concordances ``C / n`` as a p x p matrix (1 on the diagonal)."""
    out = np.eye(p)
    iu = np.triu_indices(p, 1)
    out[iu] = released[p:] / n
    out.T[iu] = out[iu]
    return out


def _halton(count: int, dims: int) -> np.ndarray:
    """The first ``count`` points of the Halton sequence in ``dims`` dimensions."""
    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71]
    out = np.empty((count, dims))
    idx = np.arange(1, count + 1)
    for d in range(dims):
        base, f, value, i = primes[d % len(primes)], 1.0, np.zeros(count), idx.copy()
        while i.any():
            f /= base
            value += f * (i % base)
            i //= base
        out[:, d] = value
    return out


@lru_cache(maxsize=8)
def _normal_points(dims: int) -> np.ndarray:
    """:data:`QMC_POINTS` fixed standard normal points in ``dims`` dimensions (a
    Halton sequence through the normal quantile function; deterministic)."""
    inv = np.vectorize(NormalDist().inv_cdf)
    return inv(_halton(QMC_POINTS, dims))


def concordance_variance(grad: np.ndarray, beta: np.ndarray, r: np.ndarray,
                         h: np.ndarray) -> float:
    """``n`` times the sampling variance of ``sum grad_ab beta_ab`` over the pairs
    ``a < b`` of a k x k submatrix (``grad``: upper triangle used; ``beta``: the
    concordances ``E[s_a s_b]``; ``r``: the correlations; ``h``: the latent cuts).

    Three columns or fewer: exactly, ``Var(s_a s_b) = 1 - beta_ab^2`` and, for pairs
    sharing a column (``s_a^2 = 1``), ``Cov(s_a s_b, s_a s_c) = beta_bc - beta_ab
    beta_ac``. More: pairs sharing no column need a fourth moment of the signs,
    which the copula gives but no closed form does, so the whole covariance is
    that of the sign products of :data:`QMC_POINTS` fixed quasi-random draws of
    the latent normals at ``r`` and ``h`` (``docs/privacy.md``)."""
    k = beta.shape[0]
    pairs = [(x, y) for x in range(k) for y in range(x + 1, k)]
    g = np.array([grad[x, y] for x, y in pairs])
    if k > 3:
        latent = _normal_points(k) @ np.linalg.cholesky(r).T
        signs = np.where(latent <= h, 1.0, -1.0)
        products = np.stack([signs[:, x] * signs[:, y] for x, y in pairs], axis=1)
        projected = (products - products.mean(axis=0)) @ g
        return float(projected @ projected) / QMC_POINTS
    b = np.clip(beta, -1.0, 1.0)
    cov = np.empty((len(pairs), len(pairs)))
    for u, (x, y) in enumerate(pairs):
        for v, (w, t) in enumerate(pairs):
            if (x, y) == (w, t):
                cov[u, v] = 1.0 - b[x, y] ** 2
            else:
                shared = ({x, y} & {w, t}).pop()
                e, f = ({x, y} - {shared}).pop(), ({w, t} - {shared}).pop()
                cov[u, v] = b[e, f] - b[x, y] * b[w, t]
    total = float(g @ cov @ g)
    # noise can make the released concordances inconsistent (a matrix that is not
    # positive semi-definite): then the pairs' own variances, never a negative one
    return total if total > 0 else float((g * g) @ np.diag(cov))


__all__ = ["FLAT_Z", "ONE_SIDE", "QuadrantBudget", "SignSums", "combine_signs",
           "concordance_variance", "concordances", "median_cuts", "median_scores",
           "median_selector", "one_sided", "quadrant_l1", "quadrant_l2", "quadrant_unit_l1",
           "quadrant_unit_l2", "share_spread", "sign_partition", "tetrachoric"]
