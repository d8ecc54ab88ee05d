"""Gaussian-copula tests from one released Kendall tau matrix, and exact Fisher z.

Continuous (and ordinal) columns are tested without coarse binning:

1. **One pass** (:func:`grid_partition`, summed by the backend's ``reduce``):
   every column is coded into ``B`` fine equal-width bins of its public bounds
   (:func:`copula_bins`: 256, fewer only when ``P B^2`` counts would exceed
   :data:`MAX_GRID_CELLS`), and every pair's ``B x B`` count grid is summed
   exactly over the partitions. From the grids, ``tau_a = (C - D) / (n (n-1)/2)``
   of every pair, where a pair of rows tied in a bin counts 0
   (:func:`tau_matrix`).
2. **One release** (:class:`CopulaBudget`): the vector of all ``P = p (p-1)/2``
   values plus Gaussian noise of ``sigma = (2 p / n) / sqrt(2 rho)`` (zCDP) or
   Laplace noise of scale ``(p^2 / n) / eps`` (pure DP). ``2 p / n`` and
   ``p^2 / n`` are the L2 and L1 sensitivities of the whole vector under
   replacing one row (``docs/privacy.md``, section 10).
3. **Post-processing**: ``r = sin(pi tau / 2)`` (the Gaussian copula's
   correlation), the nearest positive-definite correlation matrix
   (:func:`nearest_correlation`), and for every test of PC a partial correlation
   from the inverse of the correlation submatrix, Fisher-z transformed and
   standardised by its sampling variance plus the released noise's variance
   (:func:`CorrelationTests`).

``test="fisherz"`` (exact only, NOT PRIVATE) is causal-learn's Fisher z test on
Pearson correlations of the raw values: the same skeleton as causal-learn's
``pc(data, indep_test="fisherz", stable=True)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from dpmic_dask.causal.citests import concordance
from dpmic_dask.causal.quadrant import concordance_variance
from dpmic_dask.causal.tables import ColumnCoding
from dpmic_dask.privacy.costs import PrivacyCost, measure_for
from dpmic_dask.privacy.mechanisms.base import LATTICE
from dpmic_dask.stats.kindbase import number_axis
from dpmic_dask.stats.sensitivity import safe_up

#: Fine bins per column of the copula grids (at most; codes fit in uint8).
COPULA_BINS = 256
#: Counts (int64) of all pair grids together: one pass holds them all.
MAX_GRID_CELLS = 2**25
#: Sampling variance of a Kendall-copula correlation over Pearson's at
#: independence: ``(pi / 2)^2 Var(tau) = (pi^2 / 4) (4 / (9 n)) = (pi^2 / 9) / n``.
KENDALL_VARIANCE = math.pi**2 / 9.0
#: Smallest eigenvalue kept by :func:`nearest_correlation`.
MIN_EIGENVALUE = 1e-6


def copula_bins(pairs: int) -> int:
    """Fine bins per column for ``pairs`` pairs (public): :data:`COPULA_BINS`, or
    fewer so that all grids fit :data:`MAX_GRID_CELLS` counts (one pass)."""
    return int(max(16, min(COPULA_BINS, math.isqrt(MAX_GRID_CELLS // max(pairs, 1)))))


def fine_codings(codings, bins: int) -> tuple[ColumnCoding, ...]:
    """The bounded columns of ``codings`` coded into ``bins`` fine bins."""
    return tuple(ColumnCoding(c.name, bins, bounds=c.bounds) for c in codings)


@dataclass
class PairGrids:
    """Summed pair grids (int64[P, B, B] flattened; int32 for one partition),
    missing flags and rows; for
    ``moments`` also the centred sums of the raw values (exact Fisher z)."""

    counts: np.ndarray
    missing: np.ndarray
    rows: int
    moments: tuple | None = None

    def __add__(self, other: PairGrids) -> PairGrids:
        moments = None
        if self.moments is not None and other.moments is not None:
            moments = tuple(a + b for a, b in zip(self.moments, other.moments))
        return PairGrids(np.add(self.counts, other.counts, dtype=np.int64),
                         self.missing | other.missing, self.rows + other.rows, moments)


def grid_partition(frame, codings, moments: bool = False) -> PairGrids:
    """The pair grids of one partition (every pair ``i < j`` of ``codings``, in
    order), and with ``moments`` the sums ``(x - mid)`` and their cross products
    (``mid`` the middle of the public bounds)."""
    p = len(codings)
    bins = codings[0].size
    n = len(frame)
    codes = np.empty((p, n), dtype=np.int64)
    missing = np.zeros(p, dtype=bool)
    values = np.zeros((p, n if moments else 0), dtype=np.float64)
    for j, coding in enumerate(codings):
        column = number_axis(frame[coding.name])
        c, missing[j] = coding.codes(column)
        codes[j] = c
        if moments:
            lo, hi = coding.bounds
            x = np.asarray(column, dtype=np.float64)
            values[j] = np.where(np.isnan(x), 0.0, x - 0.5 * (lo + hi))
    pairs = p * (p - 1) // 2
    # one partition's counts fit int32 (half the memory of the 2^25 counts of all
    # pairs); sums widen to int64
    out = np.zeros((pairs, bins * bins), dtype=np.int32 if n < 2**31 else np.int64)
    t = 0
    for i in range(p):
        scaled = codes[i] * bins
        for j in range(i + 1, p):
            if n:
                out[t] = np.bincount(scaled + codes[j], minlength=bins * bins)
            t += 1
    sums = None
    if moments:
        sums = (values.sum(axis=1), values @ values.T)
    return PairGrids(out.reshape(-1), missing, n, sums)


def combine_grids(a: PairGrids, b: PairGrids) -> PairGrids:
    """Exact, associative sum of two partitions' grids."""
    return a + b


def tau_matrix(grids: PairGrids, p: int, bins: int, n: int) -> np.ndarray:
    """Kendall's ``tau_a`` of every pair from the summed grids: a symmetric
    ``p x p`` matrix with a unit diagonal."""
    counts = grids.counts.reshape(-1, bins, bins)
    s = np.empty(counts.shape[0], dtype=np.float64)
    chunk = max(1, 2**22 // (bins * bins))
    for start in range(0, counts.shape[0], chunk):
        s[start:start + chunk] = concordance(counts[start:start + chunk])
    tau = np.eye(p)
    iu = np.triu_indices(p, 1)
    tau[iu] = s / (n * (n - 1) / 2.0)
    tau.T[iu] = tau[iu]
    return tau


def pearson_matrix(grids: PairGrids, n: int) -> np.ndarray:
    """Pearson correlations of the raw values from the summed moments."""
    assert grids.moments is not None, "the grids were summed without moments"
    total, cross = grids.moments
    cov = cross / n - np.outer(total, total) / n**2
    sd = np.sqrt(np.diag(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = cov / np.outer(sd, sd)
    np.fill_diagonal(r, 1.0)
    return r


def nearest_correlation(r: np.ndarray) -> np.ndarray:
    """A positive-definite correlation matrix near ``r`` (post-processing):
    eigenvalues floored at :data:`MIN_EIGENVALUE`, then the unit diagonal
    restored."""
    sym = 0.5 * (r + r.T)
    w, v = np.linalg.eigh(sym)
    if w.min() >= MIN_EIGENVALUE:
        return sym
    fixed = (v * np.maximum(w, MIN_EIGENVALUE)) @ v.T
    d = np.sqrt(np.diag(fixed))
    out = fixed / np.outer(d, d)
    np.fill_diagonal(out, 1.0)
    return out


def copula_correlation(tau: np.ndarray) -> np.ndarray:
    """``sin(pi tau / 2)`` of (clamped) ``tau``, projected to a correlation matrix."""
    return nearest_correlation(np.sin(0.5 * math.pi * np.clip(tau, -1.0, 1.0)))


# ------------------------------------------------------------------ sensitivities


def tau_vector_l2(p: int, n: int) -> float:
    """L2 sensitivity of the vector of all ``tau_a`` of ``p`` columns under
    replacing one row (public ``n``): ``2 p / n`` (``docs/privacy.md``)."""
    return safe_up(2.0 * p / n)


def tau_vector_l1(p: int, n: int) -> float:
    """L1 sensitivity of the same vector: ``p^2 / n``."""
    return safe_up(p * p / n)


@dataclass(frozen=True)
class CopulaBudget:
    """The one release of the tau matrix: Gaussian (zCDP) or Laplace (pure DP)
    noise on every one of the ``P`` values, from public quantities only."""

    total: PrivacyCost
    p: int
    n: int

    @classmethod
    def plan(cls, eps: float, delta: float, *, p: int, n: int) -> CopulaBudget:
        return cls(measure_for(delta).total(eps, delta), p, n)

    @property
    def pairs(self) -> int:
        return self.p * (self.p - 1) // 2

    def _sensitivities(self) -> tuple[float, float]:
        return tau_vector_l1(self.p, self.n), tau_vector_l2(self.p, self.n)

    @property
    def sensitivity(self) -> float:
        """L2 (zCDP) or L1 (pure DP) sensitivity of the vector of all tau values."""
        return self.total.sensitivity(*self._sensitivities())

    @property
    def scale(self) -> float:
        """Gaussian sigma or Laplace scale of every released tau (sensitivity widened
        by the rounding of each value to the lattice)."""
        l1, l2 = self._sensitivities()
        l1 = safe_up(l1 + self.pairs * LATTICE)
        l2 = safe_up(l2 + math.sqrt(self.pairs) * LATTICE)
        return self.total.noise_scale(l1, l2)

    @property
    def variance(self) -> float:
        """Variance of one released tau's noise."""
        return self.total.law.variance(self.scale)

    def release(self, tau: np.ndarray) -> np.ndarray:
        """``tau`` (p x p) with exact lattice noise on every pair (one draw each,
        mirrored), unclamped: the released values."""
        iu = np.triu_indices(self.p, 1)
        units = np.rint(tau[iu] / LATTICE).astype(np.int64)
        draws = np.asarray(self.total.law.draw(self.scale / LATTICE, len(units)), dtype=np.int64)
        out = np.eye(self.p)
        out[iu] = (units + draws) * LATTICE
        out.T[iu] = out[iu]
        return out

    def describe(self) -> str:
        law = self.total.law.scale_words
        return (f"one release of {self.pairs} Kendall tau values: {law} {self.scale:.4g} "
                f"each ({self.total.norm} sensitivity "
                f"{self.sensitivity:.4g}"
                " of the whole vector)")


# ------------------------------------------------------------------ the tests


def _partial(sub: np.ndarray):
    """``(partial correlation of the first two given the rest, precision)``."""
    prec = np.linalg.inv(sub)
    r = -prec[0, 1] / math.sqrt(abs(prec[0, 0] * prec[1, 1]))
    return r, prec


def partial_gradient(prec: np.ndarray) -> np.ndarray:
    """d(partial correlation of 0, 1 given the rest) / d r_ab for every ``a < b``
    of the submatrix (``dP = -P E_ab P``), as a k x k upper-triangular array."""
    k = prec.shape[0]
    s = math.sqrt(prec[0, 0] * prec[1, 1])
    grad = np.zeros((k, k))
    for a in range(k):
        for b in range(a + 1, k):
            # d prec[x, y] = -(prec[x, a] prec[b, y] + prec[x, b] prec[a, y])
            d01 = -(prec[0, a] * prec[b, 1] + prec[0, b] * prec[a, 1])
            d00 = -2.0 * prec[0, a] * prec[b, 0]
            d11 = -2.0 * prec[1, a] * prec[b, 1]
            grad[a, b] = (-d01 / s + prec[0, 1] / (2.0 * s**3)
                          * (d00 * prec[1, 1] + prec[0, 0] * d11))
    return grad


class CorrelationTests:
    """Partial-correlation tests on a correlation matrix ``r``.

    ``kind="copula"``: ``r = sin(pi tau / 2)`` of released (noisy) ``tau`` with
    noise variance ``noise_var`` per value; the Fisher z of a partial correlation
    is standardised by ``sqrt(KENDALL_VARIANCE / (n - |S| - 3) + v_noise)``, where
    ``v_noise`` is the released noise's variance carried to z by the delta method
    (through ``sin``, the inverse of the submatrix and ``atanh``). With ``slope``
    and ``beta`` (signs at released medians, :mod:`~dpmic_dask.causal.quadrant`;
    ``cuts``: the columns' latent cuts, 0 by default)
    ``r`` is the tetrachoric matrix, ``slope`` its derivative in each released
    concordance ``beta`` (``C / n``), and the sampling variance is the delta
    method's over the concordances' covariance
    (:func:`~dpmic_dask.causal.quadrant.concordance_variance`); ``sampling`` (``n``
    times each pair's variance at independence) only sets the report's figure,
    with ``flat`` (columns with nearly every row on one side of the cut, whose
    pairs no test sees) left out of it.
    ``kind="fisherz"``: causal-learn's Fisher z on Pearson ``r`` (no noise).
    """

    def __init__(self, r: np.ndarray, n: int, alpha: float, kind: str,
                 tau: np.ndarray | None = None, noise_var: float = 0.0,
                 slope: np.ndarray | None = None, sampling: np.ndarray | None = None,
                 beta: np.ndarray | None = None, cuts: np.ndarray | None = None,
                 flat: np.ndarray | None = None):
        self.r = r
        self.n = n
        self.alpha = alpha
        self.kind = kind
        self.noise_var = noise_var
        self.threshold = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        self.beta = beta
        self.cuts = np.zeros(r.shape[0]) if cuts is None else cuts
        # a typical pair's sampling variance (times n) and slope at independence,
        # for the report's smallest visible correlation
        self.sampling0, self.slope0 = KENDALL_VARIANCE, 0.5 * math.pi
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None
        if kind == "copula" and slope is not None:  # signs at released medians
            self.slope = slope
            iu = np.triu_indices(r.shape[0], 1)
            if flat is not None:
                keep = ~(np.asarray(flat)[iu[0]] | np.asarray(flat)[iu[1]])
                iu = (iu[0][keep], iu[1][keep])
            if sampling is not None and iu[0].size:
                self._pairs = (np.asarray(sampling)[iu], np.asarray(slope)[iu])
        elif kind == "copula":
            assert tau is not None, "the copula test needs the tau matrix"
            t = np.clip(tau, -1.0, 1.0)
            self.slope = 0.5 * math.pi * np.cos(0.5 * math.pi * t)  # dr / dtau
        self.offset = self.threshold

    def zscore(self, i: int, j: int, cond: tuple[int, ...]) -> float:
        """The standardised statistic ``|z|`` of ``i`` and ``j`` given ``cond``."""
        idx = [i, j, *cond]
        sub = self.r[np.ix_(idx, idx)]
        r, prec = _partial(sub)
        if abs(r) >= 1.0:
            r = (1.0 - np.finfo(float).eps) * np.sign(r)
        z = math.atanh(r)
        dof = self.n - len(cond) - 3
        if dof <= 0:
            # too few rows for a set this large: the test cannot reject, the edge stays
            # (post-processing of released values; never a refusal after the charge)
            return math.inf
        if self.kind == "fisherz":
            return math.sqrt(dof) * abs(z)
        if self.beta is None:
            variance = KENDALL_VARIANCE / dof
            if not self.noise_var > 0:
                return abs(z) / math.sqrt(variance)
        grad = partial_gradient(prec) * self.slope[np.ix_(idx, idx)]
        if self.beta is not None:  # signs: the concordances' covariance, delta method
            variance = concordance_variance(grad, self.beta[np.ix_(idx, idx)], sub,
                                            self.cuts[idx]) / (
                self.n * (1.0 - r * r) ** 2)
        v_r = float((grad**2).sum()) * self.noise_var
        variance += v_r / (1.0 - r * r) ** 2
        if not variance > 0:  # nothing varies (every sign alike): no test, the edge stays
            return math.inf
        return abs(z) / math.sqrt(variance)

    def margin(self, i: int, j: int, cond: tuple[int, ...]) -> tuple[float, float]:
        """``(margin, statistic)``: negative margin reads as independence. For
        ``fisherz`` the margin is ``alpha - p`` (causal-learn's rule)."""
        z = self.zscore(i, j, cond)
        if self.kind == "fisherz":
            pvalue = 2.0 * (1.0 - NormalDist().cdf(z))
            return self.alpha - pvalue, z
        return z - self.threshold, z

    def smallest_visible(self) -> float:
        """The smallest |correlation| a level-0 test detects (at ``r = 0``)."""
        if self.n <= 3:  # no degrees of freedom: no test can see anything
            return 1.0
        if self._pairs is None:
            return self._visible(self.sampling0, self.slope0)
        # each pair's own figure, their median (a constant column's pairs, whose
        # signs are all on one side, were left out: with them in the median a
        # correlation of 0.83 was said to be the smallest seen, for 0.05)
        seen = [self._visible(float(a), float(b)) for a, b in zip(*self._pairs)]
        return float(np.median(seen))

    def _visible(self, sampling: float, slope: float) -> float:
        """The smallest |correlation| a level-0 test of a pair with this sampling
        variance (times ``n``) and slope at independence detects."""
        variance = sampling / (self.n - 3) + slope**2 * self.noise_var
        if not variance >= 0 or not math.isfinite(variance):
            return 1.0
        return math.tanh(self.threshold * math.sqrt(variance))


class CorrelationMargins:
    """The margins of a level's tests (``keys``: :class:`TableKey`), read off the
    correlation matrix of ``tests``, in :class:`~dpmic_dask.causal.skeleton.Margins`'
    interface."""

    def __init__(self, keys, tests: CorrelationTests):
        self.margin: dict = {}
        self.statistic: dict = {}
        self.offset = tests.offset
        for key in keys:
            self.margin[key], self.statistic[key] = tests.margin(key.x, key.y, key.cond)
