"""Apply a :class:`~dpmic_dask.accounting.NoisePlan`'s noise (SPEC sections 4-5).

Real values are rounded to the lattice ``gamma``, get ``gamma`` times an exact
integer draw, and are clamped to ``[0, 1]``; counts get exact two-sided
geometric noise and are clamped to ``[0, n]`` (TruncGeom). The plan has already
been charged when these run.
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
    """Noisy, clamped releases of exact MIC values (one per pair)."""
    exact = np.asarray(exact, dtype=np.float64)
    gamma = plan.lattice
    on_lattice = np.rint(exact / gamma).astype(np.int64)
    z = draw_integer_noise(plan, exact.size, plan.noise_scale / gamma)
    return np.clip((on_lattice + z) * gamma, 0.0, 1.0)


def noisy_counts(counts: np.ndarray, plan: NoisePlan) -> np.ndarray:
    """TruncGeom counts: ``clamp(a + Z, 0, n)`` independently for every cell."""
    counts = np.asarray(counts, dtype=np.int64)
    z = draw_integer_noise(plan, counts.size, plan.noise_scale).reshape(counts.shape)
    return np.clip(counts + z, 0, plan.n)
