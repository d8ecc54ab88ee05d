"""Releases per unit draw their noise at the true scale, through the public function.

A table of about 1,500 transactions of 600 customers (1 to 4 rows each) and 50
related columns (1,225 pairs), released with ``privacy_unit="cid"`` and
``max_rows_per_unit=4``: every row survives the bounding (no unit has more than
4), and the noisy row count's lower bound ``n0`` lies below the true count, so
the exact released statistic is the row-level one. The residuals of released
minus exact values (exact: the same call with every sampler returning 0) must
follow the stated law at the stated scale -- and the stated scale must be the
one the proof gives, ``P (k (f(n0 - 1) + 1) / n0 + gamma) / eps_release`` (Laplace),
computed here independently. The check fails at 0.5x, 0.7x and 1.3x of it.
The row count's own noise is checked by chi-square against the discrete
Laplace of scale ``k / eps_count``, and fails at 0.7x and 1.3x.
"""

from __future__ import annotations

import math

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (the accessor)
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import LATTICE
from dpmic_dask.release.rowcount import DEFAULT_COUNT_SHARE, plan_row_count, run_row_count
from dpmic_dask.stats.sensitivity import f_gain
from tests.statistical.helpers import ALPHA, chi_square_pvalue, discrete_laplace_pmf, rerun_once
from tests.statistical.test_release_noise_paths import check_noise, residuals, zero_noise

pytestmark = pytest.mark.slow

UNITS, COLUMNS, K, B, C = 600, 50, 4, 40, 5
EPS = 5_000.0  # over 1,225 pairs and k = 4: a Laplace scale near 0.01
COUNT_SHARE = DEFAULT_COUNT_SHARE  # what the accessor spends on the row count


@pytest.fixture(scope="module")
def table():
    gen = np.random.default_rng(5)  # test data only
    sizes = gen.integers(1, K + 1, UNITS)
    cid = np.repeat(np.arange(UNITS), sizes)
    u = gen.uniform(0, 1, UNITS)[cid]
    data = {f"x{j:02d}": u + gen.normal(0, 0.04 + 0.004 * j, cid.size) for j in range(COLUMNS)}
    frame = pd.DataFrame({"cid": cid, **data})
    return dd.from_pandas(frame, npartitions=3), int(cid.size)


def bounds_of(columns):
    return {name: (-1.0, 2.0) for name in columns if name != "cid"}


def release(frame, **kw):
    return frame.dpmic.pairwise(EPS, bounds=bounds_of(frame.columns), B=B, c=C,
                                privacy_unit="cid", max_rows_per_unit=K, **kw)


def stated_laplace_scale(n0: int, pairs: int, eps_release: float) -> float:
    sensitivity = K * (f_gain(n0 - 1) + 1) / n0
    return pairs * (sensitivity + LATTICE) / eps_release


@rerun_once
def test_values_per_unit_carry_the_noise_the_proof_asks_for(table):
    frame, rows = table
    with zero_noise():
        exact = release(frame)
    assert exact.privacy.rows_lower_bound <= rows  # the taper does not act
    result = release(frame)
    assert result.pairs == exact.pairs
    p = result.privacy
    assert p.rows_lower_bound <= rows  # beta = 1e-3: fails once in a thousand runs at most
    eps_release = p.release_cost.epsilon
    assert eps_release <= EPS * (1 - COUNT_SHARE)
    scale = stated_laplace_scale(p.rows_lower_bound, len(result.pairs), eps_release)
    assert p.noise_scale == pytest.approx(scale, rel=1e-9)
    r = residuals(result.values, exact.values, p.noise_scale)
    check_noise(r, p.noise_scale, "laplace")
    for wrong in (0.5, 0.7, 1.3):
        with pytest.raises(AssertionError):
            check_noise(r, wrong * p.noise_scale, "laplace")


@rerun_once
def test_gaussian_values_per_unit(table):
    frame, rows = table
    with zero_noise():
        exact = release(frame, delta=1e-6)
    result = release(frame, delta=1e-6)
    p = result.privacy
    assert p.mechanism == "micr-gauss" and p.rows_lower_bound <= rows
    rho = p.release_cost.rho
    sensitivity = K * (f_gain(p.rows_lower_bound - 1) + 1) / p.rows_lower_bound
    sigma = math.sqrt(len(result.pairs)) * (sensitivity + LATTICE) / math.sqrt(2 * rho)
    assert p.noise_scale == pytest.approx(sigma, rel=1e-9)
    r = residuals(result.values, exact.values, p.noise_scale)
    check_noise(r, p.noise_scale, "gauss")
    for wrong in (0.5, 0.7, 1.3):
        with pytest.raises(AssertionError):
            check_noise(r, wrong * p.noise_scale, "gauss")


@rerun_once
def test_the_row_count_noise_is_discrete_laplace_of_scale_k_over_eps():
    plan = plan_row_count(PrivacyCost(0.5), sensitivity=K)
    draws = np.array([run_row_count(plan, 10_000).noisy - 10_000 for _ in range(3000)])
    assert chi_square_pvalue(draws, lambda s: discrete_laplace_pmf(plan.scale, s)) > ALPHA
    for wrong in (0.7, 1.3):
        assert chi_square_pvalue(
            draws, lambda s, w=wrong: discrete_laplace_pmf(w * plan.scale, s)) < ALPHA
