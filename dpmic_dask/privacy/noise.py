"""Where noise is drawn: exact integer samplers (SPEC section 5).

The default sampler uses OpenDP's discrete Laplace and discrete Gaussian, which
sample exactly from the operating system's CSPRNG. A seeded sampler exists for
tests only (:func:`dpmic_dask.testing.seeded_noise`); it implements the same
exact algorithms (Canonne, Kamath & Steinke 2020) over a deterministic SHAKE-256
bit stream and can only be switched on through that guarded context manager.

No ``numpy.random`` or ``random`` is used anywhere on a noise path.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import os
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
from opendp import domains, measurements, metrics
from opendp.mod import enable_features

#: Draws per piece of a long noise vector (one thread per usable CPU draws the pieces).
DRAW_PIECE = 4096


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS says it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


class OpenDPSampler:
    """Secure exact samplers from OpenDP (OS CSPRNG)."""

    secure = True

    def __init__(self):
        enable_features("contrib")

    def _vector(self, make, metric, scale: float, size: int) -> np.ndarray:
        """``size`` independent draws. OpenDP's exact samplers take about 10-30 us a
        draw, and the GIL is released during the call (ctypes), so a long vector is
        drawn in pieces of :data:`DRAW_PIECE` on up to one thread per usable CPU:
        the same independent draws, in order (a million take about 10-20 s on one
        core). Where no thread can start, the whole vector is drawn in this one."""

        def piece(m: int) -> np.ndarray:
            measurement = make(domains.vector_domain(domains.atom_domain(T="i64")),
                               metric(T="i64"), scale=float(scale))
            return np.asarray(measurement(np.zeros(m, dtype=np.int64)), dtype=np.int64)

        sizes = [min(DRAW_PIECE, size - start) for start in range(0, size, DRAW_PIECE)]
        threads = min(len(sizes), usable_cpus())
        if threads <= 1:
            return piece(size)
        try:
            with ThreadPoolExecutor(threads, thread_name_prefix="dpmic-noise") as pool:
                return np.concatenate(list(pool.map(piece, sizes)))
        except RuntimeError:
            # no thread could start (a process or thread limit, interpreter
            # shutdown): this runs after the charge, so draw the whole vector
            # afresh in this thread (draws already made are never seen)
            return piece(size)

    def discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        """``size`` draws with ``P(z) ∝ exp(-|z| / scale)`` (int64)."""
        return self._vector(measurements.make_laplace, metrics.l1_distance, scale, size)

    def discrete_gaussian(self, sigma: float, size: int) -> np.ndarray:
        """``size`` draws with ``P(z) ∝ exp(-z**2 / (2 sigma**2))`` (int64)."""
        return self._vector(measurements.make_gaussian, metrics.l2_distance, sigma, size)

    def random_keys(self, size: int) -> np.ndarray:
        """``size`` independent uniform 64-bit keys (uint64) from the OS CSPRNG."""
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64).copy()


class _ShakeBits:
    """Deterministic uniform integers from SHAKE-256 of a seed (tests only)."""

    def __init__(self, seed: int):
        self._seed = int(seed).to_bytes(32, "little", signed=True)
        self._counter = 0
        self._buffer = b""

    def _bytes(self, k: int) -> bytes:
        while len(self._buffer) < k:
            block = hashlib.shake_256(self._seed + self._counter.to_bytes(8, "little"))
            self._buffer += block.digest(4096)
            self._counter += 1
        out, self._buffer = self._buffer[:k], self._buffer[k:]
        return out

    def below(self, m: int) -> int:
        """Uniform integer in ``[0, m)`` by rejection sampling (exact)."""
        if m == 1:
            return 0
        bits = (m - 1).bit_length()
        nbytes = (bits + 7) // 8
        mask = (1 << bits) - 1
        while True:
            value = int.from_bytes(self._bytes(nbytes), "little") & mask
            if value < m:
                return value


class ExactSampler:
    """Exact discrete Laplace / Gaussian sampling with rational arithmetic
    (Canonne, Kamath & Steinke 2020, Algorithms 1-3) from a uniform-integer source."""

    def __init__(self, source, secure: bool):
        self._src = source
        self.secure = secure

    def _bernoulli(self, p: Fraction) -> bool:
        return self._src.below(p.denominator) < p.numerator

    def _bernoulli_exp_small(self, gamma: Fraction) -> bool:
        # Bernoulli(exp(-gamma)) for 0 <= gamma <= 1
        k = 1
        while self._bernoulli(gamma / k):
            k += 1
        return k % 2 == 1

    def _bernoulli_exp(self, gamma: Fraction) -> bool:
        while gamma > 1:
            if not self._bernoulli_exp_small(Fraction(1)):
                return False
            gamma -= 1
        return self._bernoulli_exp_small(gamma)

    def _laplace_one(self, scale: Fraction) -> int:
        t, s = scale.numerator, scale.denominator  # scale = t / s
        while True:
            u = self._src.below(t)
            if not self._bernoulli_exp(Fraction(u, t)):
                continue
            v = 0
            while self._bernoulli_exp_small(Fraction(1)):
                v += 1
            y = (u + t * v) // s
            negative = self._src.below(2) == 1
            if negative and y == 0:
                continue
            return -y if negative else y

    def _gaussian_one(self, sigma: Fraction) -> int:
        var = sigma * sigma
        t = int(sigma) + 1
        while True:
            y = self._laplace_one(Fraction(t))
            gamma = (abs(y) - var / t) ** 2 / (2 * var)
            if self._bernoulli_exp(gamma):
                return y

    def discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        s = Fraction(float(scale))
        return np.array([self._laplace_one(s) for _ in range(size)], dtype=np.int64)

    def random_keys(self, size: int) -> np.ndarray:
        """``size`` uniform 64-bit keys (uint64) from the source."""
        return np.array([self._src.below(2**64) for _ in range(size)], dtype=np.uint64)

    def discrete_gaussian(self, sigma: float, size: int) -> np.ndarray:
        s = Fraction(float(sigma))
        return np.array([self._gaussian_one(s) for _ in range(size)], dtype=np.int64)


def _seeded_sampler(seed: int) -> ExactSampler:
    return ExactSampler(_ShakeBits(seed), secure=False)


_DEFAULT = None
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("dpmic_noise_sampler", default=None)


def active_sampler():
    """The sampler in force: the secure OpenDP sampler unless a test switched it."""
    global _DEFAULT
    sampler = _ACTIVE.get()
    if sampler is not None:
        return sampler
    if _DEFAULT is None:
        _DEFAULT = OpenDPSampler()
    return _DEFAULT


# ------------------------------------------------------------------ noise laws


#: Every integer draw added to a count is held within +/- this public constant:
#: a count below 2**62 (any table's) plus a held draw stays exact in int64, and
#: the hold never depends on the counts. A draw that large has probability below
#: ``exp(-2**10)`` at the largest scale the samplers accept.
COUNT_NOISE_LIMIT = 2**62


def with_count_noise(counts, noise) -> np.ndarray:
    """``counts + noise`` in exact int64, each draw held within
    :data:`COUNT_NOISE_LIMIT` (post-processing of the draw alone)."""
    held = np.clip(np.asarray(noise, dtype=np.int64), -COUNT_NOISE_LIMIT, COUNT_NOISE_LIMIT)
    return np.asarray(counts, dtype=np.int64) + held


class NoiseLaw:
    """An integer noise distribution a mechanism declares (its type, not a name):
    :meth:`draw` takes ``size`` exact draws at ``scale`` (in integer units) from
    the sampler in force. A new law is a subclass with its own ``draw``.

    Every noise of the package is drawn through a law: a release's value or
    count noise (its mechanism's :attr:`law`), and the noise of the steps in
    front of it (the bounds' histograms, the check of public bounds, the sparse
    vector, partition selection, the row count and unit sizes of contribution
    bounding), each from the law of the cost that pays it
    (:attr:`dpmic_dask.privacy.costs.PrivacyCost.law`: discrete Laplace for a pure
    part, discrete Gaussian for a zCDP part)."""

    name = ""
    #: The scale in words (``"Laplace scale"``).
    scale_words = ""
    #: The 95% half-width of the noise, in units of its scale.
    ci95 = math.nan

    def draw(self, scale: float, size: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} does not say how to draw")

    def variance(self, scale: float) -> float:
        """The variance of one draw at ``scale`` (of the continuous law it follows)."""
        raise NotImplementedError(f"{type(self).__name__} does not say its variance")

    def margin(self, scale: float, beta: float) -> int:
        """An integer ``t`` with ``P(Z > t) <= beta`` for one draw at ``scale``."""
        raise NotImplementedError(f"{type(self).__name__} does not say its tail")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __str__(self) -> str:
        return self.name


class DiscreteLaplace(NoiseLaw):
    """``P(z) ∝ exp(-|z| / scale)`` on the integers (two-sided geometric)."""

    name = "laplace"
    scale_words = "Laplace scale"
    ci95 = math.log(20.0)

    def draw(self, scale: float, size: int) -> np.ndarray:
        return active_sampler().discrete_laplace(scale, size)

    def variance(self, scale: float) -> float:
        return 2.0 * scale**2

    def margin(self, scale: float, beta: float) -> int:
        # P(Z > t) = q^(t+1) / (1 + q) <= exp(-(t + 1) / b), q = exp(-1 / b)
        return max(0, math.ceil(scale * math.log(1.0 / beta)) - 1)


class DiscreteGaussian(NoiseLaw):
    """``P(z) ∝ exp(-z**2 / (2 scale**2))`` on the integers."""

    name = "gaussian"
    scale_words = "Gaussian sigma"
    ci95 = 1.959963984540054

    def draw(self, scale: float, size: int) -> np.ndarray:
        return active_sampler().discrete_gaussian(scale, size)

    def variance(self, scale: float) -> float:
        return scale**2

    def margin(self, scale: float, beta: float) -> int:
        # the discrete Gaussian is sub-Gaussian: P(Z > t) <= exp(-t^2 / (2 sigma^2))
        return math.ceil(scale * math.sqrt(2.0 * math.log(1.0 / beta)))


LAPLACE = DiscreteLaplace()
GAUSSIAN = DiscreteGaussian()
