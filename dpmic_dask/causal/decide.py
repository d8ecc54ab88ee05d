"""Where a private causal graph spends its budget and draws its noise.

The budget is split once, from public quantities only (the number of columns
``p``, hence ``P = p (p - 1) / 2`` pairs, and ``max_condition_size``), into

* one part per PC level ``0 .. max_condition_size`` (``level_shares``, equal by
  default), each paying for ``P`` edge decisions -- the worst case, since at most
  ``P`` edges can be present when a level starts -- whatever the data make PC do;
* an optional part (``statistic_share``) for the released statistic of every
  edge of the final graph, again paid for ``P`` values.

One edge decision is a report-noisy-max (OpenDP's exact noisy top-1) over the
options "keep the edge" (score 0) and "set ``S`` separates it" (score
``threshold - statistic``, for every candidate ``S`` of the level): its cost is
that of one selection whatever the number of candidate sets, and the chosen set is
the released separating set. Every score moves by at most the statistic's
sensitivity when one row is replaced, so the decision is ``eps_e``-DP (pure; noise
from the exponential distribution) or ``rho_e``-zCDP (Gumbel noise, the
exponential mechanism), with ``eps_e = eps_level / P`` or ``rho_e = rho_level / P``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpmic_dask.causal.citests import g_sensitivity, tau_sensitivity
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PURE_DP, PrivacyCost, measure_for
from dpmic_dask.privacy.mechanisms.base import LATTICE, MAX_NOISE_UNITS
from dpmic_dask.privacy.noise import GAUSSIAN, LAPLACE
from dpmic_dask.privacy.selection import NoisyTopK, top_k_scale
from dpmic_dask.stats.sensitivity import safe_down, safe_up


def sensitivity(test: str, n: int, level: int) -> float:
    """Replace-one sensitivity of a level's statistic (and of its margins)."""
    if test == "tau":
        return tau_sensitivity(n, conditional=level > 0)
    return g_sensitivity(n)


def check_shares(level_shares, levels: int, statistic_share) -> tuple[float, ...]:
    """``(statistic share, level shares...)`` as fractions of the total adding up to
    at most 1; ``level_shares`` are relative weights (``None``: equal)."""
    try:
        value_share = float(statistic_share)
    except (TypeError, ValueError):
        raise InvalidParameterError("statistic_share must be a number in [0, 1)") from None
    if not 0.0 <= value_share < 1.0 or isinstance(statistic_share, bool):
        raise InvalidParameterError("statistic_share must be a number in [0, 1)")
    if level_shares is None:
        weights = [1.0] * levels
    else:
        try:
            weights = [float(w) for w in level_shares]
        except (TypeError, ValueError):
            raise InvalidParameterError("level_shares must be positive numbers") from None
        if len(weights) != levels or not all(math.isfinite(w) and w > 0 for w in weights):
            raise InvalidParameterError(
                f"level_shares must be {levels} positive numbers, one per level "
                "0 .. max_condition_size")
    total = sum(weights)
    return (value_share, *(w / total * (1.0 - value_share) for w in weights))


@dataclass(frozen=True)
class CausalBudget:
    """The one charge of a causal graph and its parts (public quantities only)."""

    total: PrivacyCost
    value_part: PrivacyCost | None
    level_parts: tuple[PrivacyCost, ...]
    pairs: int
    test: str
    n: int

    @classmethod
    def plan(cls, eps: float, delta: float, *, shares, pairs: int, test: str, n: int):
        """Split ``(eps, delta)`` by ``shares`` (from :func:`check_shares`), each part
        rounded down, for ``pairs`` pairs and ``n`` rows (both public)."""
        measure = measure_for(delta)
        total = measure.total(eps, delta)
        value_share, *level_shares = shares
        if value_share > 0:
            value_part, *levels = measure.split(total, [value_share, *level_shares])
            return cls(total, value_part, tuple(levels), pairs, test, n)
        return cls(total, None, measure.split(total, level_shares), pairs, test, n)

    @property
    def zcdp(self) -> bool:
        return self.total.measure is not PURE_DP

    def per_edge(self, level: int) -> float:
        """The budget of one edge decision at ``level`` (epsilon, or rho)."""
        return safe_down(self.level_parts[level].amount() / self.pairs)

    def decision_scale(self, level: int) -> float:
        """The noise scale of one edge decision at ``level`` (OpenDP's calibration)."""
        return top_k_scale(1, safe_up(sensitivity(self.test, self.n, level) + LATTICE),
                           self.per_edge(level), self.zcdp)

    def value_sensitivity(self) -> float:
        return max(sensitivity(self.test, self.n, level)
                   for level in range(len(self.level_parts)))

    def value_lattice(self, high: float) -> float:
        """The lattice of released statistics in ``[0, high]``: ``2**-40`` times the
        smallest power of two at least ``high``, so a value has at most ``2**40``
        steps and every sum below is exact in integers."""
        return LATTICE * 2.0 ** max(0, math.ceil(math.log2(max(high, 1.0))))

    def value_scale(self, high: float) -> float:
        """Laplace scale or Gaussian sigma of each released statistic (``P`` values,
        L1 sensitivity ``P Delta`` or L2 ``sqrt(P) Delta``, ``Delta`` widened by one
        lattice step)."""
        if self.value_part is None:
            return math.nan
        delta_v = safe_up(self.value_sensitivity() + self.value_lattice(high))
        if self.zcdp:
            return safe_up(math.sqrt(self.pairs) * delta_v
                           / math.sqrt(2.0 * self.value_part.amount()))
        return safe_up(self.pairs * delta_v / self.value_part.amount())

    def check(self, high: float) -> None:
        """Refuse (before the charge) a plan whose noise cannot be sampled faithfully."""
        for level in range(len(self.level_parts)):
            if not self.per_edge(level) > 0:
                raise InvalidParameterError("the budget per edge decision rounds to zero")
            self.decision_scale(level)
        if (self.value_part is not None
                and self.value_scale(high) / self.value_lattice(high) > MAX_NOISE_UNITS):
            raise InvalidParameterError(
                "the statistic's noise is too large to sample; raise eps or set "
                "statistic_share=0")

    def decide(self, level: int, margins) -> int | None:
        """One edge's private decision: the separating set's index, or None (keep)."""
        bound = 1e12
        scores = [0.0] + [float(np.clip(-m, -bound, bound)) for m in margins]
        selector = NoisyTopK(k=1, budget=self.per_edge(level), delta=self.total.delta,
                             statistic=self.test)
        (chosen,) = selector.select(len(scores), scores,
                                    sensitivity(self.test, self.n, level))
        return None if chosen == 0 else chosen - 1

    def release_values(self, values: np.ndarray, high: float) -> np.ndarray:
        """``values`` (exact, in ``[0, high]``) with Laplace or Gaussian noise on the
        lattice, clamped to ``[0, high]``. The sum is exact in integers; the noise is
        clipped (never the value) to a range that the clamp makes lossless."""
        gamma = self.value_lattice(high)
        scale = self.value_scale(high) / gamma
        law = GAUSSIAN if self.zcdp else LAPLACE
        units = [int(u) for u in np.rint(np.asarray(values, dtype=np.float64) / gamma)]
        limit = 2 * math.ceil(high / gamma)
        noise = [max(-limit, min(limit, int(z))) for z in law.draw(scale, len(units))]
        return np.clip(np.array([(u + z) * gamma for u, z in zip(units, noise)],
                                dtype=np.float64), 0.0, high)
