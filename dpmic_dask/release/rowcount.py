"""A private row count: a public lower confidence bound on a count that is not public.

When rows are bounded per privacy unit (or dropped for missing values), the
number of rows ``n`` that a release sees depends on the data and may not set a
noise scale. This step releases it with a small declared share of the budget:

    noisy = n + Z,    n_low = max(floor, noisy - t),

``Z`` exact discrete Laplace of scale ``sensitivity / eps_c`` (a pure share) or
exact discrete Gaussian of ``sigma = sensitivity / sqrt(2 rho_c)`` (a zCDP
share), where ``sensitivity`` is how many rows one neighbour can add or remove
(``k`` per unit, 1 per row). ``t`` is chosen so that ``P(Z > t) <= beta``:
with probability at least ``1 - beta`` the bound holds, ``n_low <= n``.
``n_low`` is post-processing of the noisy count; how later steps use it so that
the guarantee stays pure whatever ``n`` is, is in ``docs/privacy.md``.

It is a plan step like private bounds: :func:`plan_row_count` runs every check
(before anything is read), the exact count is taken before the one charge, and
:func:`run_row_count` draws the noise after it and never refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import check_noise_units
from dpmic_dask.privacy.noise import NoiseLaw, with_count_noise

#: Default failure probability of the lower confidence bound.
DEFAULT_BETA = 1e-3
#: Default share of a release's budget spent on its row count.
DEFAULT_COUNT_SHARE = 0.05


@dataclass(frozen=True)
class RowCountPlan:
    """The noisy count, planned from public quantities only."""

    cost: PrivacyCost
    sensitivity: int
    beta: float
    floor: int
    law: NoiseLaw  # the cost's: discrete Laplace (pure) or discrete Gaussian (zCDP)
    scale: float  # Laplace scale or Gaussian sigma, in rows
    margin: int  # t: P(Z > t) <= beta

    def describe(self) -> str:
        return (f"row count: {self.cost.describe()} ({self.law}, scale {self.scale:.4g} rows, "
                f"lower bound at 1 - {self.beta:g})")


@dataclass(frozen=True)
class RowCountRelease:
    """The released count and its lower confidence bound (both public)."""

    noisy: int
    n_low: int
    plan: RowCountPlan


def check_beta(beta) -> float:
    """The bound's failure probability: a number in (0, 0.5)."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0 < beta < 0.5:
        raise InvalidParameterError("beta must be a number in (0, 0.5)")
    return float(beta)


def plan_row_count(share_of_budget: PrivacyCost, *, sensitivity: int = 1,
                   beta: float = DEFAULT_BETA, floor: int = MIN_ROWS) -> RowCountPlan:
    """Plan a noisy count paid by ``share_of_budget`` (a pure ``eps`` share: discrete
    Laplace; a zCDP ``rho`` share: discrete Gaussian) when one neighbour adds or
    removes at most ``sensitivity`` rows. ``floor`` is a public minimum of the
    released bound. Refuses (nothing read) a scale that cannot be sampled."""
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise InvalidParameterError("the row count's sensitivity must be an integer >= 1")
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 1:
        raise InvalidParameterError("floor must be an integer >= 1")
    beta = check_beta(beta)
    # one unit moves the count by at most ``sensitivity``: its L1 and L2 sensitivity
    scale = share_of_budget.noise_scale(sensitivity, sensitivity)
    law = share_of_budget.law
    margin = law.margin(scale, beta)
    check_noise_units(scale, "row count")
    return RowCountPlan(share_of_budget, sensitivity, beta, floor, law, scale, margin)


def run_row_count(plan: RowCountPlan, exact: int) -> RowCountRelease:
    """Noise on the exact count (call only after the charge); never refuses."""
    # Python integers: no overflow whatever the draw (the scale is at most 2**52,
    # so a draw near the samplers' int64 limit has probability below exp(-2**10))
    noisy = int(with_count_noise([exact], plan.law.draw(plan.scale, 1))[0])
    return RowCountRelease(noisy, max(plan.floor, noisy - plan.margin), plan)


__all__ = ["DEFAULT_BETA", "DEFAULT_COUNT_SHARE", "RowCountPlan", "RowCountRelease",
           "check_beta", "plan_row_count", "run_row_count"]
