"""Laplace noise on released values: pure ``epsilon``-DP."""

from __future__ import annotations

from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import (
    LAPLACE_CI95,
    LATTICE,
    Mechanism,
    NoisePlan,
    check_noise_units,
)
from dpmic_dask.privacy.noise import LAPLACE
from dpmic_dask.stats.sensitivity import safe_up


class LaplaceMechanism(Mechanism):
    """Discrete Laplace on the lattice: scale ``P (Delta + gamma) / eps`` per value
    (the L1 sensitivity of ``P`` values, each widened by the lattice step)."""

    law = LAPLACE

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost.checked(self.epsilon)  # epsilon checked when built

    def calibrate(self, *, n: int, pairs: int, B: float, c: int) -> NoisePlan:
        sens = self.statistic.sensitivity(n, B)
        widened = safe_up(sens + LATTICE)
        scale = safe_up(pairs * widened / self.epsilon)
        check_noise_units(scale / LATTICE, "Laplace")
        low, high = self.statistic.value_range
        return NoisePlan(self.label, self.law, n, pairs, B, c, self.epsilon, 0.0,
                         sens, scale, LAPLACE_CI95 * scale, LATTICE, self.cost,
                         self.statistic.name, low, high)
