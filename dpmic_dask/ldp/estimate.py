"""From a pair's support counts to MIC with an interval (post-processing only).

Steps for one pair, on its ``m x m`` public grid (``k = m * m`` joint cells):

1. unbiased joint frequencies ``f_hat = (S / n - p) / (q - p)`` (Wang et al. 2017);
2. their covariance in the normal approximation (Carette 2022, eq. 33 and 39:
   ``Sigma = M^-1 Sigma_S(mu) M^-T`` with the plug-in ``mu``): the protocol's exact
   second moments at the projected estimate, plus, when the pair was answered by a
   random subset of ``n`` of the ``N`` people, the subset's own sampling covariance
   ``(diag f - f f^T) (1/n - 1/N)``;
3. ``f_hat`` projected onto the probability simplex (Euclidean projection), read as
   counts on the public grid and scored with the package's exact MICr
   (:func:`dpmic_dask.stats.characteristic.micr_from_counts`);
4. a parametric bootstrap from the normal approximation: ``R`` draws
   ``f* ~ N(f~, Sigma)`` around the projected estimate ``f~`` (the fitted model),
   each projected and scored the same way. Noise biases the plug-in MIC: upward for
   unrelated pairs (mutual information of a noisy table is about the noise's own
   chi-square), downward for strong ones (the projection keeps the positive part
   of the noise on empty cells and smears the relationship). The bootstrap
   estimates that bias as ``b1 = mean(MIC*) - MIC(f~)``; the value is ``MIC(f~) - b1``,
   clamped to ``[0, 1]``;
5. the interval, from a second level of the same bootstrap: every ``f*`` gets one
   more draw ``f** ~ N(f*, Sigma)``, projected and scored. ``2 MIC(f*) - MIC(f**)`` is
   a replicate of the bias-corrected estimator itself (its correction made at
   ``f*`` with one inner draw), and ``b2 = mean(MIC**) - mean(MIC*)`` is the bias one
   noise level further out. ``ci95 = 1.96 sd(2 MIC* - MIC**) + |b1| + |b1 - b2|``.
   Why each term: the one-level bootstrap's spread leaves out the variability of
   the correction (``b1`` moves with ``f~``), about a quarter of the estimator's
   standard deviation; and the bias is computed at ``f~``, a table already smeared
   by one level of noise where the projection binds, while the truth is one level
   sharper, where the bias is larger: ``|b1 - b2|`` (how much the bias changed over
   one level) is the size of that extrapolation. The older interval
   ``1.96 sd(MIC*) + |b1|`` covered 0.91-0.95 for related pairs at ``eps <= 1``
   and less for strong ones (``benchmarks/results-local-dp.txt``, section 4).

The bootstrap's normal draws are not privacy noise (the reports are already
private, and everything here is post-processing of them): they come from a
SHAKE-256 stream keyed by the counts themselves (the second level's from the same
key with a suffix), so the same reports always give the same result.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dpmic_dask.ldp.bits import ByteSource
from dpmic_dask.ldp.protocols import Protocol
from dpmic_dask.stats.characteristic import micr_from_counts
from dpmic_dask.stats.counting import master_counts
from dpmic_dask.stats.grids import GridFamily, equipartition_boundaries

#: pseudo-count total of a probability table handed to the integer MICr kernel
#: (MI is scale free; rounding moves a score by about 1e-8)
PSEUDO_TOTAL = 1 << 30


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex."""
    v = np.asarray(v, dtype=float)
    flat = v.reshape(-1, v.shape[-1])
    u = -np.sort(-flat, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    ind = np.arange(1, flat.shape[1] + 1)
    cond = u - css / ind > 0
    rho = flat.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(flat.shape[0]), rho] / (rho + 1)
    return np.maximum(flat - theta[:, None], 0.0).reshape(v.shape)


@lru_cache(maxsize=32)
def _cell_layout(m: int, family: GridFamily) -> tuple[np.ndarray, np.ndarray]:
    """Flat refinement-histogram index of every joint cell ``(i, j)`` (x bin ``i``,
    y bin ``j``) for orientations ``"x"`` and ``"y"``: a grid cell is placed at the
    position of its lower edge, ``ceil(i * 2**32 / m)``."""
    edges = np.concatenate(([0], equipartition_boundaries(m)))
    joint = family.joint
    idx = np.searchsorted(joint.boundaries, edges, side="right")
    fixed, rows = joint.to_fixed[idx], joint.to_row[idx]
    n_rows, n_fixed = family.refinement_shape
    i, j = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    flat_x = (rows[j] * n_fixed + fixed[i]).ravel()
    flat_y = (rows[i] * n_fixed + fixed[j]).ravel()
    for a in (flat_x, flat_y):
        a.setflags(write=False)
    return flat_x, flat_y


def mic_of_joint(prob: np.ndarray, m: int, family: GridFamily) -> float:
    """MICr of a probability table on the ``m x m`` grid (``prob[i * m + j]`` for x bin
    ``i``, y bin ``j``; non-negative), read as counts out of :data:`PSEUDO_TOTAL`."""
    weights = np.rint(np.asarray(prob, dtype=float) * PSEUDO_TOTAL)
    if weights.sum() <= 0:
        return 0.0
    flat_x, flat_y = _cell_layout(m, family)
    n_rows, n_fixed = family.refinement_shape
    size = n_rows * n_fixed
    hist = np.empty((2, n_rows, n_fixed), dtype=np.int64)
    hist[0] = np.bincount(flat_x, weights=weights, minlength=size).reshape(n_rows, n_fixed)
    hist[1] = np.bincount(flat_y, weights=weights, minlength=size).reshape(n_rows, n_fixed)
    return micr_from_counts(master_counts(hist, family), family)


def normal_draws(key: bytes, size: int) -> np.ndarray:
    """``size`` standard normal draws (Box-Muller) from a SHAKE-256 stream keyed by
    ``key``: deterministic post-processing randomness, not privacy noise."""
    src = ByteSource(seed=hashlib.sha256(key).digest())
    half = (size + 1) // 2
    u1 = (src.words(half).astype(float) + 0.5) / 2.0 ** 32
    u2 = (src.words(half).astype(float) + 0.5) / 2.0 ** 32
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.concatenate([r * np.cos(2 * math.pi * u2), r * np.sin(2 * math.pi * u2)])
    return z[:size]


@dataclass(frozen=True)
class PairEstimate:
    """One pair's estimate: bias-corrected ``mic`` with ``ci95`` (half-width), the
    plug-in ``raw_mic``, the bootstrap's ``bias``, and the joint frequencies.
    ``boot_sd`` is the one-level bootstrap's ``sd(MIC*)`` (the older interval was
    ``1.96 boot_sd + |bias|``), ``bias2`` the second level's bias ``b2``."""

    mic: float
    ci95: float
    raw_mic: float
    bias: float
    frequencies: np.ndarray
    covariance: np.ndarray
    reports: int
    boot_sd: float = float("nan")
    bias2: float = float("nan")


def joint_covariance(proto: Protocol, f: np.ndarray, n: int, population: int) -> np.ndarray:
    """Covariance of the frequency estimates from ``n`` reports about the whole
    population of ``population`` people (normal approximation at ``f``)."""
    cov = proto.frequency_covariance(f, n)
    if population > n:
        cov = cov + (np.diag(f) - np.outer(f, f)) * (1.0 / n - 1.0 / population)
    return cov


#: When at least this share of a pair's bootstrap tables project onto one cell,
#: the estimate is swamped by the randomization and its ci95 spans the whole range.
SWAMPED = 0.5


def estimate_pair(supports: np.ndarray, n: int, population: int, proto: Protocol, m: int,
                  family: GridFamily, replicates: int) -> PairEstimate:
    """The estimate of one pair from its support counts (see the module docstring)."""
    supports = np.asarray(supports, dtype=np.int64)
    k = m * m
    if n <= 0:
        nan = float("nan")
        return PairEstimate(nan, nan, nan, nan, np.full(k, nan), np.full((k, k), nan), 0)
    f_hat = proto.estimate(supports, n)
    f_proj = project_simplex(f_hat)
    cov = joint_covariance(proto, f_proj, n, population)
    raw = mic_of_joint(f_proj, m, family)
    if replicates <= 0:
        return PairEstimate(raw, float("nan"), raw, 0.0, f_hat, cov, n)
    vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    key = supports.tobytes() + np.int64(n).tobytes() + np.int64(population).tobytes()
    z = normal_draws(key, replicates * k).reshape(replicates, k)
    draws = project_simplex(f_proj[None, :] + z @ root.T)
    boot = np.array([mic_of_joint(d, m, family) for d in draws])
    z2 = normal_draws(key + b"/second", replicates * k).reshape(replicates, k)
    draws2 = project_simplex(draws + z2 @ root.T)
    boot2 = np.array([mic_of_joint(d, m, family) for d in draws2])
    bias = float(boot.mean() - raw)
    bias2 = float(boot2.mean() - boot.mean())
    mic = float(min(max(raw - bias, 0.0), 1.0))
    boot_sd = float(boot.std(ddof=1)) if replicates > 1 else 0.0
    spread = float((2 * boot - boot2).std(ddof=1)) if replicates > 1 else 0.0
    ci95 = 1.96 * spread + abs(bias) + abs(bias - bias2)
    if (np.count_nonzero(draws > 0, axis=1) <= 1).mean() >= SWAMPED:
        # the randomization swamps the counts: most redrawn tables project onto one
        # cell, whose MIC is 0 whatever the data, so the draws agree on nothing the
        # data say (their spread was 0: an interval of certainty around a guess)
        ci95 = max(ci95, 1.0)
    return PairEstimate(mic, ci95, raw, bias, f_hat, cov, n, boot_sd, bias2)
