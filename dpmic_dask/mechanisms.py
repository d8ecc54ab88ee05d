"""Apply a :class:`~dpmic_dask.accounting.NoisePlan`'s noise (SPEC sections 4-5).

Real values are rounded to the lattice ``gamma``, get ``gamma`` times an exact
integer draw, and are clamped to ``[0, 1]``; counts get exact two-sided
geometric noise and are clamped to ``[0, n]`` (TruncGeom). The plan has already
been charged when these run.

The integer draw is clipped (the noise, never the value) to a data-independent
range that the final clamp makes lossless: ``+-2 / gamma`` lattice units for
values in ``[0, 1]``, ``+-(n + 1)`` for counts in ``[0, n]``. Any draw beyond it
clamps to the same end whatever the exact value, so clipping changes no output
-- but it keeps the sum inside int64 when a sampler saturates at ``+-(2**63 - 1)``,
which would otherwise wrap around and reveal whether the exact value is 0.
"""

from __future__ import annotations

import numpy as np

from .accounting import NoisePlan
from .noise import active_sampler


def draw_integer_noise(plan: NoisePlan, size: int, scale_in_units: float) -> np.ndarray:
    sampler = active_sampler()
    if plan.distribution == "gaussian":
        return sampler.discrete_gaussian(scale_in_units, size)
    return sampler.discrete_laplace(scale_in_units, size)


def noisy_values(exact: np.ndarray, plan: NoisePlan) -> np.ndarray:
    """Noisy, clamped releases of exact values in ``[0, 1]`` (one per pair)."""
    exact = np.clip(np.asarray(exact, dtype=np.float64), 0.0, 1.0)
    gamma = plan.lattice
    on_lattice = np.rint(exact / gamma).astype(np.int64)  # in [0, 1 / gamma]
    limit = 2 * int(round(1.0 / gamma))  # lossless: |z| >= 1 / gamma clamps anyway
    z = np.clip(draw_integer_noise(plan, exact.size, plan.noise_scale / gamma), -limit, limit)
    return np.clip((on_lattice + z) * gamma, 0.0, 1.0)


def noisy_counts(counts: np.ndarray, plan: NoisePlan) -> np.ndarray:
    """TruncGeom counts: ``clamp(a + Z, 0, n)`` independently for every cell."""
    counts = np.asarray(counts, dtype=np.int64)
    limit = plan.n + 1  # lossless: |z| >= n clamps anyway for counts in [0, n]
    z = np.clip(draw_integer_noise(plan, counts.size, plan.noise_scale), -limit, limit)
    return np.clip(counts + z.reshape(counts.shape), 0, plan.n)
