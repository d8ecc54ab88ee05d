"""Exact random draws for the local randomizer, in bulk, from a secure byte source.

Every draw starts from independent uniform 32-bit words. Their source is the
operating system's CSPRNG (``os.urandom``), read in one call per batch. Inside
:func:`dpmic_dask.testing.seeded_noise` (tests only) it is a SHAKE-256 stream
keyed from that context's deterministic sampler instead, and the reports say
they are NOT private.

Why the draws are exact (no floating point touches a probability):

- A uniform word ``u`` takes each of the ``2**32`` values with probability
  ``2**-32``. ``Bernoulli(K / 2**32)`` is ``u < K``: exactly ``K`` of the values
  satisfy it. The randomizer's probabilities are such dyadic rationals, chosen so
  that the privacy ratio holds for them exactly (:mod:`dpmic_dask.ldp.protocols`).
- A uniform integer in ``[0, m)`` (``m < 2**32``) is ``u mod m`` for a word below
  ``L = m * floor(2**32 / m)``; words at or above ``L`` are rejected and redrawn.
  Each accepted residue has ``L / m`` preimages among the ``L`` accepted words,
  so it is exactly uniform (rejection sampling). At most half the words are
  rejected, and rejected positions are redrawn in bulk until none is left.

``numpy.random`` and ``random`` are never used.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from dpmic_dask.privacy import noise

WORD = 2**32


class ByteSource:
    """Uniform 32-bit words from the OS CSPRNG (``secure``) or a SHAKE-256 stream."""

    def __init__(self, seed: bytes | None = None):
        self.secure = seed is None
        self._seed = seed
        self._counter = 0

    def words(self, size: int) -> np.ndarray:
        """``size`` independent uniform words (uint64 holding values < 2**32)."""
        size = int(size)
        if size <= 0:
            return np.zeros(0, dtype=np.uint64)
        if self._seed is None:
            raw = os.urandom(4 * size)
        else:
            block = self._seed + self._counter.to_bytes(8, "little")
            self._counter += 1
            raw = hashlib.shake_256(block).digest(4 * size)
        return np.frombuffer(raw, dtype="<u4").astype(np.uint64)

    def bernoulli(self, numerator: int, size: int) -> np.ndarray:
        """``size`` exact ``Bernoulli(numerator / 2**32)`` draws (bool)."""
        if not 0 <= numerator <= WORD:
            raise ValueError("numerator must lie in [0, 2**32]")
        return self.words(size) < np.uint64(numerator)

    def below(self, m, size: int | None = None) -> np.ndarray:
        """Exactly uniform integers in ``[0, m)`` (int64): ``m`` an int, or an array
        of per-draw bounds (each ``1 <= m < 2**32``)."""
        m_arr = np.asarray(m, dtype=np.uint64)
        if size is None:
            size = int(m_arr.size)
        m_arr = np.broadcast_to(m_arr, (size,))
        if size and (m_arr.min() < 1 or m_arr.max() >= WORD):
            raise ValueError("bounds must lie in [1, 2**32)")
        limit = (np.uint64(WORD) // m_arr) * m_arr
        out = np.empty(size, dtype=np.int64)
        todo = np.arange(size)
        while todo.size:
            u = self.words(todo.size)
            ok = u < limit[todo]
            out[todo[ok]] = (u[ok] % m_arr[todo[ok]]).astype(np.int64)
            todo = todo[~ok]
        return out


def active_source() -> ByteSource:
    """The secure OS source, unless a test switched noise to a seeded stream with
    :func:`dpmic_dask.testing.seeded_noise`; then a SHAKE-256 stream keyed by 32
    bytes drawn from that seeded sampler (reproducible, NOT private)."""
    sampler = noise.active_sampler()  # looked up when called (tests switch it)
    if getattr(sampler, "secure", False):
        return ByteSource()
    key = np.asarray(sampler.random_keys(4), dtype="<u8").tobytes()
    return ByteSource(seed=key)
