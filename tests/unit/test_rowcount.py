"""The private row-count step: its plan, its lower bound, and that it never refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.noise import _ACTIVE, GAUSSIAN, LAPLACE
from dpmic_dask.release.rowcount import check_beta, plan_row_count, run_row_count


class FixedSampler:
    """Every draw is ``value`` (to check the post-processing exactly)."""

    secure = False

    def __init__(self, value: int):
        self.value = value

    def discrete_laplace(self, scale, size):
        return np.full(size, self.value, dtype=np.int64)

    def discrete_gaussian(self, sigma, size):
        return np.full(size, self.value, dtype=np.int64)


def drawn(value, plan, exact):
    token = _ACTIVE.set(FixedSampler(value))
    try:
        return run_row_count(plan, exact)
    finally:
        _ACTIVE.reset(token)


def test_pure_share_gives_discrete_laplace_of_scale_k_over_eps():
    plan = plan_row_count(PrivacyCost(0.05), sensitivity=8, beta=1e-3)
    assert plan.law is LAPLACE
    assert plan.scale == pytest.approx(8 / 0.05, rel=1e-11) and plan.scale >= 8 / 0.05
    # P(Z > t) <= exp(-(t + 1) / b) <= beta
    assert math.exp(-(plan.margin + 1) / plan.scale) <= 1e-3
    assert math.exp(-plan.margin / plan.scale) > 1e-3  # and t is not wasteful


def test_zcdp_share_gives_discrete_gaussian():
    plan = plan_row_count(PrivacyCost(0.3, 1e-6, 0.002), sensitivity=4, beta=1e-4)
    assert plan.law is GAUSSIAN
    assert plan.scale == pytest.approx(4 / math.sqrt(2 * 0.002), rel=1e-11)
    assert math.exp(-plan.margin ** 2 / (2 * plan.scale ** 2)) <= 1e-4


def test_the_bound_is_the_noisy_count_minus_the_margin_held_at_the_floor():
    plan = plan_row_count(PrivacyCost(1.0), sensitivity=2, beta=0.01, floor=10)
    got = drawn(5, plan, 1000)
    assert got.noisy == 1005 and got.n_low == 1005 - plan.margin
    assert drawn(-10**6, plan, 1000).n_low == 10  # never below the public floor
    assert drawn(0, plan, 3).n_low == 10


def test_the_lower_bound_holds_with_probability_at_least_one_minus_beta():
    plan = plan_row_count(PrivacyCost(0.5), sensitivity=3, beta=0.05)
    misses = sum(run_row_count(plan, 10_000).n_low > 10_000 for _ in range(600))
    # expected at most 30 misses (beta = 5%); 60 is far beyond any plausible draw
    assert misses < 60


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_sensitivity_is_refused(bad):
    with pytest.raises(InvalidParameterError):
        plan_row_count(PrivacyCost(1.0), sensitivity=bad)


@pytest.mark.parametrize("bad", [0, 0.5, 1, -0.1, float("nan"), True])
def test_bad_beta_is_refused(bad):
    with pytest.raises(InvalidParameterError):
        check_beta(bad)


def test_a_scale_that_cannot_be_sampled_is_refused_when_planned():
    with pytest.raises(InvalidParameterError, match="sampling limit"):
        plan_row_count(PrivacyCost(1e-12), sensitivity=2**20)
