"""Categorical pairs are released with noise at the stated scale, through the
public ``pairwise`` (the pattern of test_release_noise_paths.py).

A table of 17 categorical and 60 numeric columns has 1,156 pairs with a
categorical axis (1,020 with one, 136 with two). One release at a budget that
puts the Laplace scale near 0.01 is compared with the same call under a sampler
that draws zero noise (the exact values): the residuals of the categorical
pairs follow the Laplace law at the reported scale and fail the check at 0.7x
and 1.3x of it. With zero noise the check fails (the test of the test).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.stats.sensitivity import micr_sensitivity
from tests.statistical.helpers import rerun_once
from tests.statistical.test_release_noise_paths import (
    assert_noise_at_stated_scale,
    check_noise,
    residuals,
    zero_noise,
)

pytestmark = pytest.mark.slow

N, NUMERIC, CATEGORICAL, B, C = 1000, 60, 17, 40, 5
LEVELS = ("low", "mid", "high", "top")
PAIRS = (NUMERIC + CATEGORICAL) * (NUMERIC + CATEGORICAL - 1) // 2
EPS = PAIRS * micr_sensitivity(N) / 0.01  # a Laplace scale of 0.01


@pytest.fixture(scope="module")
def table():
    gen = np.random.default_rng(5)  # test data only
    u = gen.uniform(0, 1, N)
    columns = {f"x{k:02d}": u + gen.normal(0, 0.05 + 0.005 * k, N) for k in range(NUMERIC)}
    for k in range(CATEGORICAL):
        v = u + gen.normal(0, 0.15 + 0.02 * k, N)
        level = np.digitize(v, [0.25, 0.5, 0.75, 0.95])
        names = np.array(LEVELS + ("unlisted",), dtype=object)[level]
        columns[f"g{k:02d}"] = pd.Series(names, dtype="string[pyarrow]")
    return pd.DataFrame(columns)


def release(frame):
    bounds = {f"x{k:02d}": (-1.0, 2.0) for k in range(NUMERIC)}
    categories = {f"g{k:02d}": list(LEVELS) for k in range(CATEGORICAL)}
    return frame.dpmic.pairwise(eps=EPS, bounds=bounds, categories=categories, B=B, c=C,
                                ledger=InMemoryLedger(uncapped=True), bounds_check=None)


@pytest.fixture(scope="module")
def released(table):
    with zero_noise():
        exact = release(table)
    categorical = np.array([x.startswith("g") or y.startswith("g") for x, y in exact.pairs])
    assert categorical.sum() == PAIRS - NUMERIC * (NUMERIC - 1) // 2
    return None, exact, categorical


@rerun_once  # a check at ALPHA: a second try draws a fresh release
def test_categorical_pairs_carry_the_stated_noise(released, table):
    _, exact, categorical = released
    noisy = release(table)
    assert noisy.pairs == exact.pairs
    scale = noisy.privacy.noise_scale
    # the stated scale is MICr's sensitivity over the pairs, per eps
    assert scale == pytest.approx(PAIRS * micr_sensitivity(N) / EPS, rel=1e-6)
    r = residuals(np.asarray(noisy.values)[categorical], np.asarray(exact.values)[categorical],
                  scale)
    assert_noise_at_stated_scale(r, scale, "laplace")


def test_the_check_fails_without_noise(released, table):
    _, exact, categorical = released
    scale = exact.privacy.noise_scale
    values = np.asarray(exact.values)[categorical]
    with pytest.raises(AssertionError):
        check_noise(residuals(values, values, scale), scale, "laplace")
