"""Gaussian noise on released values: ``rho``-zCDP, hence ``(eps, delta)``-DP."""

from __future__ import annotations

import math
from functools import cached_property

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import (
    GAUSS_CI95,
    LATTICE,
    Mechanism,
    NoisePlan,
    check_noise_units,
)
from dpmic_dask.privacy.noise import GAUSSIAN
from dpmic_dask.stats.sensitivity import safe_up


class GaussianMechanism(Mechanism):
    """Discrete Gaussian on the lattice: ``sigma = sqrt(P) (Delta + gamma) / sqrt(2 rho)``
    per value (L2 sensitivity ``sqrt(P)`` times the widened ``Delta``), with
    ``rho = rho_from_eps_delta(eps, delta)``."""

    law = GAUSSIAN
    needs_delta = True

    def __init__(self, *, rho: float | None = None, **kwargs):
        """``rho``, when given, is the zCDP budget itself (a share of a larger
        budget); ``epsilon`` then only states what it implies at ``delta``."""
        super().__init__(**kwargs)
        if rho is not None and not (math.isfinite(rho) and rho > 0):
            raise InvalidParameterError("rho must be a finite number > 0")
        self._rho = rho

    @classmethod
    def for_cost(cls, cost: PrivacyCost, *, statistic, label: str) -> GaussianMechanism:
        """The Gaussian that spends the zCDP part ``cost`` (its ``rho`` itself)."""
        return cls(epsilon=cost.epsilon, delta=cost.delta, rho=cost.rho, statistic=statistic,
                   label=label)

    @cached_property
    def _budget_rho(self) -> float:
        """The zCDP budget: ``rho`` as given, or ``rho(eps, delta)`` (computed once)."""
        return self._rho if self._rho is not None else rho_from_eps_delta(self.epsilon,
                                                                          self.delta)

    @property
    def cost(self) -> PrivacyCost:
        # epsilon, delta and rho were checked when the mechanism was built
        return PrivacyCost.checked(self.epsilon, self.delta, self._budget_rho)

    def calibrate(self, *, n: int, pairs: int, B: float, c: int) -> NoisePlan:
        cost = self.cost
        sens = self.statistic.sensitivity(n, B)
        widened = safe_up(sens + LATTICE)
        sigma = safe_up(math.sqrt(pairs) * widened / math.sqrt(2.0 * cost.as_rho()))
        check_noise_units(sigma / LATTICE, "Gaussian")
        low, high = self.statistic.value_range
        return NoisePlan(self.label, self.law, n, pairs, B, c, self.epsilon, self.delta,
                         sens, sigma, GAUSS_CI95 * sigma, LATTICE, cost, self.statistic.name,
                         low, high)
