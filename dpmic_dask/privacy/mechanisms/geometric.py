"""Two-sided geometric noise on every count of every master grid (MICr-Geom)."""

from __future__ import annotations

import math

from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import Mechanism, NoisePlan, check_noise_units
from dpmic_dask.privacy.noise import LAPLACE
from dpmic_dask.stats.sensitivity import safe_up


class GeometricCountsMechanism(Mechanism):
    """TruncGeom on counts with honest accounting: each cell of each of the ``G``
    master grids of each of the ``P`` pairs gets scale ``2 G P / eps`` (a replaced
    row changes two cells of a grid by one), so the whole release is ``eps``-DP.
    The published per-cell ``eps / 2`` is ``G eps``-DP (docs/privacy.md)."""

    law = LAPLACE  # two-sided geometric: the discrete Laplace on counts
    acts_on = "counts"

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost.checked(self.epsilon)  # epsilon checked when built

    def calibrate(self, *, n: int, pairs: int, B: float, c: int) -> NoisePlan:
        grids = 2 * (int(B) // 2 - 1)
        scale = safe_up(2.0 * grids * pairs / self.epsilon)
        check_noise_units(scale, "count")
        return NoisePlan(self.label, self.law, n, pairs, B, c, self.epsilon, 0.0, 2.0,
                         scale, math.nan, 1.0, self.cost, self.statistic.name)
