"""Conditional-independence tests read off count tables, and their sensitivities.

A table has shape ``(strata, kx, ky)``: the counts of ``x`` bins against ``y``
bins within each stratum of the conditioning set (one stratum when it is empty).

``"tau"`` -- conditional Kendall's tau as a z-score (the default). Per stratum
``z`` with ``n_z`` rows, ``S_z = concordant - discordant`` pairs of rows (pairs
tied on ``x`` or ``y`` count 0). The strata are combined with the inverse-variance
weights of the Priv-PC appendix (Definition 6), ``w_z tau_z = 9 S_z / (2 n_z + 5)``,
and normalised by the public ``1.5 sqrt(n)`` instead of the data-dependent
``sqrt(sum_z w_z)``::

    Z = sum_z 9 S_z / (2 n_z + 5) / (1.5 sqrt(n)).

Under independence within every stratum ``Var Z <= 1`` (``w_z <= 9 n_z / 4``),
so ``|Z| < z_{1 - alpha / 2}`` is a (conservative) level-``alpha`` test. Replacing
one row changes ``Z`` by less than ``6 / sqrt(n)`` without conditioning and less
than ``9 / sqrt(n)`` with it (:func:`tau_sensitivity`; proof in
``docs/privacy.md``, "Causal discovery").

``"g"`` -- the G-test: ``G = 2 sum a ln(a n_z / (r s))`` (nats), against the
chi-square quantile with ``(kx - 1)(ky - 1) strata`` degrees of freedom (public).
Replacing one row changes ``G`` by at most ``4 ln 2 f((n - 1) / 2)``, the MICr
bound without its normalisation (:func:`g_sensitivity`). The exact, non-private
path reproduces causal-learn's ``gsq`` test instead: degrees of freedom without
the empty rows and columns of each stratum, and ``p > alpha`` for independence.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.sensitivity import f_gain, safe_up

#: ``auto`` chooses from the column kinds (``docs/causal.md``): ``copula`` when
#: every column is bounded (continuous or ordinal), else ``g``. ``copula`` and
#: ``fisherz`` are :mod:`dpmic_dask.causal.copula`'s (``fisherz``: exact only).
TESTS = ("auto", "tau", "g", "chisq", "copula", "fisherz")
#: Tests read off one correlation matrix instead of per-level tables.
CORRELATION_TESTS = ("copula", "fisherz")


def check_test(test) -> str:
    """``test`` if it names a known test, else :class:`InvalidParameterError`."""
    if test not in TESTS:
        raise InvalidParameterError(f"test must be one of {list(TESTS)}")
    return test


def concordance(tables: np.ndarray) -> np.ndarray:
    """``concordant - discordant`` pairs per stratum of ``tables``
    (int64[..., kx, ky]), exactly, as int64[...].

    A pair is counted once, from its row in the lower ``x`` bin: cell ``(i, j)``
    pairs with the rows in higher ``x`` bins and higher ``y`` bins (concordant)
    or lower ``y`` bins (discordant).
    """
    h = np.asarray(tables, dtype=np.int64)
    above = np.zeros_like(h)  # rows in x bins > i, same y bin
    above[..., :-1, :] = np.cumsum(h[..., ::-1, :], axis=-2)[..., ::-1, :][..., 1:, :]
    upto = np.cumsum(above, axis=-1)  # y bins <= j
    higher = above.sum(axis=-1, keepdims=True) - upto  # y bins > j
    lower = upto - above  # y bins < j
    return (h * (higher - lower)).sum(axis=(-2, -1))


def tau_z(tables: np.ndarray, n: int) -> np.ndarray:
    """The conditional-tau z-score of each table in ``tables`` (int64[T, strata, kx,
    ky]), normalised by the public ``1.5 sqrt(n)``."""
    h = np.asarray(tables, dtype=np.int64)
    s = concordance(h).astype(np.float64)
    n_z = h.sum(axis=(-2, -1)).astype(np.float64)
    return (9.0 * s / (2.0 * n_z + 5.0)).sum(axis=-1) / (1.5 * math.sqrt(n))


def g_statistic(tables: np.ndarray) -> np.ndarray:
    """``G = 2 sum a ln(a m / (r s))`` (nats) of each table (int64[T, strata, kx, ky])."""
    a = np.asarray(tables, dtype=np.float64)
    m = a.sum(axis=(-2, -1), keepdims=True)
    r = a.sum(axis=-1, keepdims=True)
    s = a.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(a > 0, a * np.log(a * m / (r * s)), 0.0)
    return 2.0 * terms.sum(axis=(-3, -2, -1))


def pearson_statistic(tables: np.ndarray) -> np.ndarray:
    """Pearson's ``sum (a - e)^2 / e`` of each table (int64[T, strata, kx, ky]), cells
    with ``e = 0`` left out (causal-learn's ``chisq``)."""
    a = np.asarray(tables, dtype=np.float64)
    m = a.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(m > 0, a.sum(axis=-1, keepdims=True) * a.sum(axis=-2, keepdims=True) / m,
                     0.0)
        terms = np.where(e > 0, (a - e) ** 2 / e, 0.0)
    return terms.sum(axis=(-3, -2, -1))


def g_public_df(shape: tuple[int, int, int]) -> int:
    """Degrees of freedom of the G-test of a ``(strata, kx, ky)`` table, from its
    shape only (public)."""
    strata, kx, ky = shape
    return (kx - 1) * (ky - 1) * strata


def g_pvalue_causallearn(table: np.ndarray, test: str = "g") -> float:
    """causal-learn's ``gsq`` (``test="chisq"``: ``chisq``) p-value of one table
    (strata, kx, ky): empty strata dropped, each stratum's degrees of freedom
    without its empty rows and columns, ``1`` when no degree of freedom is left."""
    a = np.asarray(table, dtype=np.int64)
    a = a[a.sum(axis=(1, 2)) > 0]
    if a.shape[0] == 0:
        return 1.0
    g = float((pearson_statistic if test == "chisq" else g_statistic)(a[None])[0])
    rows = (a.sum(axis=2) > 0).sum(axis=1)
    cols = (a.sum(axis=1) > 0).sum(axis=1)
    df = int(((rows - 1) * (cols - 1)).sum())
    return 1.0 if df == 0 else chi2_sf(g, df)


def tau_threshold(alpha: float) -> float:
    """``z_{1 - alpha / 2}``: ``|Z|`` below it is read as independence."""
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def g_threshold(alpha: float, df: int) -> float:
    """The ``1 - alpha`` quantile of chi-square with ``df`` degrees of freedom
    (bisection on :func:`chi2_sf` to the last bit)."""
    lo, hi = 0.0, max(1.0, 2.0 * df)
    while chi2_sf(hi, df) > alpha:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if chi2_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def chi2_sf(x: float, df: int) -> float:
    """``P(chi2_df > x)``: the upper regularised incomplete gamma ``Q(df/2, x/2)``
    (series below ``a + 1``, Lentz's continued fraction above; no SciPy needed)."""
    a, z = df / 2.0, x / 2.0
    if z <= 0.0:
        return 1.0
    log_front = -z + a * math.log(z) - math.lgamma(a)
    if z < a + 1.0:
        term = total = 1.0 / a
        k = a
        while abs(term) > abs(total) * 1e-17:
            k += 1.0
            term *= z / k
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = z + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-16:
            break
    return h * math.exp(log_front)


def tau_sensitivity(n: int, conditional: bool) -> float:
    """Replace-one sensitivity of :func:`tau_z` at the public ``n``: ``6 / sqrt(n)``
    with one stratum (a row moves within it: ``|Delta sum| < 9``), ``9 / sqrt(n)``
    with strata (a row leaves one and joins another: ``< 6.75`` each), rounded up."""
    numerator = 13.5 if conditional else 9.0
    return safe_up(numerator / (1.5 * math.sqrt(n)))


def g_sensitivity(n: int) -> float:
    """Replace-one sensitivity of :func:`g_statistic` at the public ``n`` (any
    strata): ``2 ln 2 * 2 f((n - 1) / 2)``, rounded up."""
    return safe_up(4.0 * math.log(2.0) * f_gain((n - 1) / 2.0))


def statistic_range(test: str, n: int, shape: tuple[int, int, int]) -> float:
    """A public upper bound of the released statistic (``|Z|`` or ``G``): the
    clamp of a noisy value."""
    if test == "tau":
        return 1.5 * math.sqrt(n)
    _, kx, ky = shape
    return 2.0 * n * math.log(min(kx, ky))
