"""The front steps per privacy unit draw their noise at the stated scale ``k / eps_column``.

Per unit (``privacy_unit=..., max_rows_per_unit=k``) the rows are bounded to ``k``
per unit first; adding or removing a unit then moves a column's histogram, or its
candidates' counts, by at most ``k`` in L1, so

- the check of public bounds (``bounds_check=``) adds discrete Laplace noise of
  scale ``k / eps_column`` to each of its 16 bins (``BoundsCheckPlan.scale``);
- the choice among public candidates (``categories={"g": {"private": [...]}}``)
  adds discrete Laplace noise of scale ``k / eps_column`` to each candidate's
  count and keeps those reaching the public threshold
  (``PrivateCategoriesPlan.scale``; the threshold of
  :func:`~dpmic_dask.privacy.partition_selection.candidate_threshold`).

Both are checked through the public release (``frame.dpmic.pairwise``) on tables
where bounding keeps every row (each unit has at most ``k`` rows), so the exact
bounded counts are known; with seeded noise (NOT private, tests only) the outcome
is reproducible. Each check passes at the stated scale and fails at 0.7x and 1.3x
of it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmic_dask as dm
from dpmic_dask.backends import backend_for
from dpmic_dask.privacy.partition_selection import candidate_scale, candidate_threshold
from dpmic_dask.release.bounds_check import CHECK_BINS
from dpmic_dask.release.unitplan import plan_unit_release
from dpmic_dask.stats.sensitivity import safe_up
from dpmic_dask.testing import ENV_FLAG, seeded_noise
from tests.statistical.helpers import ALPHA, chi_square_pvalue, discrete_laplace_pmf, rerun_once

pytestmark = pytest.mark.filterwarnings("ignore::dpmic_dask.errors.PrivacyLeakWarning")

K = 4


@pytest.fixture
def seeded(monkeypatch):
    monkeypatch.setenv(ENV_FLAG, "1")


def dlap_variance(scale: float) -> float:
    r = math.exp(-1.0 / scale)
    return 2 * r / (1 - r) ** 2


def dlap_at_least(scale: float, m) -> np.ndarray:
    """``P(Z >= m)`` for ``Z`` discrete Laplace of ``scale`` (``P(Z = z) ∝ r^|z|``)."""
    r = math.exp(-1.0 / scale)
    m = np.asarray(m)
    upper = r ** np.maximum(m, 0) / (1 + r)  # m >= 1
    lower = 1 - r ** np.maximum(1 - m, 0) / (1 + r)  # m <= 0
    return np.where(m >= 1, upper, lower)


# --------------------------------------------------------------------- the bounds check

CHECK_COLUMNS, CHECK_UNITS, CHECK_EPS, CHECK_SHARE, CHECK_RELEASES = 8, 400, 8.0, 0.5, 25
CHECK_BOUNDS = (0.0, float(CHECK_BINS))  # bin i is [i, i + 1)


def check_table() -> tuple[pd.DataFrame, dict]:
    """Each unit has exactly ``K`` rows, all in one known bin of each column (its
    centre), so bounding keeps every row; the exact bounded histograms."""
    unit = np.repeat(np.arange(CHECK_UNITS), K)
    frame = pd.DataFrame({"u": unit})
    exact = {}
    for j in range(CHECK_COLUMNS):
        per_unit = (np.arange(CHECK_UNITS) * (j + 1) + j) % CHECK_BINS  # uneven counts
        per_unit[: 20 * j] = j  # one bin of each column much fuller
        frame[f"x{j}"] = per_unit[unit] + 0.5
        exact[f"x{j}"] = K * np.bincount(per_unit, minlength=CHECK_BINS)
    return frame, exact


def check_arguments(columns) -> dict:
    return dict(bounds=dict.fromkeys(columns, CHECK_BOUNDS), privacy_unit="u",
                max_rows_per_unit=K, bounds_check=CHECK_SHARE, B=16, c=2)


@rerun_once
def test_the_bounds_check_per_unit_draws_discrete_laplace_at_k_over_eps_column(seeded):
    frame, exact = check_table()
    columns = list(exact)
    plan = plan_unit_release(backend_for(frame).schema(frame), CHECK_EPS,
                             **check_arguments(columns)).bounds_check
    assert plan.sensitivity == K and list(plan.columns) == columns
    scale = plan.scale
    assert scale == safe_up(K / plan.eps_column)  # k / eps_column, not 2 / eps_column
    residuals = []
    with seeded_noise(20261126, not_private=True):
        for _ in range(CHECK_RELEASES):
            result = frame.dpmic.pairwise(CHECK_EPS, ledger=dm.InMemoryLedger(uncapped=True),
                                          **check_arguments(columns))
            found = result.bounds_check
            assert found.noise_scale == scale
            assert f"noise scale {scale:.4g} counts" in result.report()
            for c in columns:
                residuals.append(np.asarray(found.histograms[c]) - exact[c])
    z = np.concatenate(residuals)
    assert z.size == CHECK_RELEASES * CHECK_COLUMNS * CHECK_BINS
    # the law: discrete Laplace at the stated scale, not at 0.7x or 1.3x of it
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(scale, s)) > ALPHA
    for wrong in (0.7 * scale, 1.3 * scale):
        assert chi_square_pvalue(z, lambda s, w=wrong: discrete_laplace_pmf(w, s)) < ALPHA
    # its variance (the sample variance of a Laplace law is within 4% here, one sd)
    assert abs(z.mean()) < 4 * math.sqrt(dlap_variance(scale) / z.size)
    ratio = z.var() / dlap_variance(scale)
    assert abs(ratio - 1) < 0.15, ratio
    for wrong in (0.7, 1.3):
        assert abs(z.var() / dlap_variance(wrong * scale) - 1) > 0.15


# ------------------------------------------------------------- categories' candidates

CANDIDATES, LEVELS, CAT_EPS, CAT_RELEASES = 48, (-2.0, -1.0, 0.0, 1.0), 8.0, 120


def categories_arguments(candidates) -> dict:
    return dict(bounds={"x": (0.0, 1.0)}, privacy_unit="u", max_rows_per_unit=K,
                categories={"g": {"private": list(candidates)}}, B=128, c=2)


def categories_table(threshold: int, scale: float) -> tuple[pd.DataFrame, np.ndarray]:
    """Candidate ``j`` holds ``threshold + round(LEVELS[j % 4] * scale)`` rows, in
    units of at most ``K`` rows (bounding keeps every row); its exact bounded count."""
    counts = np.array([threshold + round(LEVELS[j % len(LEVELS)] * scale)
                       for j in range(CANDIDATES)])
    assert counts.min() > 0
    values = np.repeat([f"c{j:02d}" for j in range(CANDIDATES)], counts)
    # consecutive rows of one value, K at a time, form a unit (the last one of a value
    # may have fewer): a unit never holds more than K rows
    unit = np.concatenate([np.arange(n) // K + 10_000 * j for j, n in enumerate(counts)])
    gen = np.random.default_rng(5)  # test data only
    frame = pd.DataFrame({"u": unit, "g": pd.Series(values, dtype=object),
                          "x": gen.uniform(0, 1, values.size)})
    assert frame.groupby("u").size().max() <= K
    return frame, counts


def kept_pvalue(kept: np.ndarray, trials: int, probabilities: np.ndarray) -> float:
    """Chi-square p-value of the keep counts at each level against their
    probabilities (one degree of freedom per level: the levels are independent)."""
    p = np.asarray(probabilities, dtype=float)
    statistic = float((((kept - trials * p) ** 2) / (trials * p * (1 - p))).sum())
    return float(stats.chi2.sf(statistic, df=len(p)))


@rerun_once
def test_candidates_per_unit_are_kept_with_the_probability_of_k_over_eps_column(seeded):
    names = [f"c{j:02d}" for j in range(CANDIDATES)]
    schema_frame = pd.DataFrame({"u": [0], "g": pd.Series(["c00"], dtype=object), "x": [0.5]})
    plan = plan_unit_release(backend_for(schema_frame).schema(schema_frame), CAT_EPS,
                             **categories_arguments(names)).private_categories
    assert plan.sensitivity == K
    scale = plan.scale
    assert scale == candidate_scale(plan.eps_column, K) == safe_up(K / plan.eps_column)
    threshold = candidate_threshold(scale, CANDIDATES)
    frame, counts = categories_table(threshold, scale)
    level = np.arange(CANDIDATES) % len(LEVELS)
    kept = np.zeros(len(LEVELS))
    with seeded_noise(20261127, not_private=True):
        for _ in range(CAT_RELEASES):
            result = frame.dpmic.pairwise(CAT_EPS, ledger=dm.InMemoryLedger(uncapped=True),
                                          **categories_arguments(names))
            report = result.report()
            assert f"noise scale {scale:.4g} on each count, threshold {threshold}" in report
            chosen = set(result.private_categories["g"])
            assert chosen <= set(names)
            kept += np.bincount(level[[n in chosen for n in names]], minlength=len(LEVELS))
    trials = CAT_RELEASES * CANDIDATES // len(LEVELS)
    # kept iff count + Z >= threshold: P(Z >= threshold - count), per level
    needed = threshold - counts[: len(LEVELS)]

    def expected(s):
        return dlap_at_least(s, needed)

    assert 0.05 < expected(scale).min() and expected(scale).max() < 0.95  # informative levels
    assert kept_pvalue(kept, trials, expected(scale)) > ALPHA, (kept / trials, expected(scale))
    for wrong in (0.7, 1.3):
        assert kept_pvalue(kept, trials, expected(wrong * scale)) < ALPHA, (wrong, kept / trials)


@rerun_once
def test_every_step_per_unit_reads_at_most_k_rows_of_each_unit():
    """Bounding runs in front of every step: with 20 rows per unit and k = 2, the
    released row count, the categories' counts and the check's histograms are of
    2 rows per unit (an unbounded table would show ten times as many). The lower
    bound ``n0`` holds with probability ``1 - beta`` (beta = 1e-3; about 5e-4 here),
    so a failure is rerun once on fresh noise."""
    gen = np.random.default_rng(5)  # test data only
    units, per, k = 1_500, 20, 2
    x = np.repeat(gen.uniform(0, 1, units), per)
    frame = pd.DataFrame({"cid": np.repeat(np.arange(units), per), "x": x,
                          "y": x + gen.normal(0, 0.05, x.size),
                          "g": pd.Series(np.where(x < 0.5, "a", "b"), dtype=object)})
    result = frame.dpmic.pairwise(
        8.0, bounds={"x": (0, 1), "y": (-1, 2)}, columns=["x", "y", "g"],
        categories={"g": {"private": ["a", "b"]}}, bounds_check=0.2, privacy_unit="cid",
        max_rows_per_unit=k, ledger=dm.InMemoryLedger(uncapped=True))
    bounded = units * k
    assert abs(result.privacy.rows_noisy - bounded) < 0.2 * bounded
    assert result.privacy.rows_lower_bound <= bounded
    for column in ("x", "y"):  # each histogram holds the bounded rows, up to its noise
        total = sum(result.bounds_check.histograms[column])
        assert abs(total - bounded) < 0.2 * bounded, (column, total)


def test_a_null_in_a_column_chosen_from_its_values_is_refused_from_the_whole_table():
    """Per unit, a missing value in a column whose categories are chosen from the
    values that occur is refused before the charge whichever rows the fresh key
    keeps (checked on the kept rows only, the same call would refuse at random)."""
    gen = np.random.default_rng(9)  # test data only
    n = 4_000
    region = pd.Series(np.where(gen.uniform(size=n) < 0.5, "a", "b"), dtype=object)
    region.iloc[7] = None  # one row of a unit with 40 rows: rarely among its 2 kept
    frame = pd.DataFrame({"cid": np.repeat(np.arange(n // 40), 40), "x": gen.uniform(0, 1, n),
                          "region": region})
    for _ in range(5):
        ledger = dm.InMemoryLedger(uncapped=True)
        with pytest.raises(dm.MissingValuesError, match="region"):
            frame.dpmic.pairwise(4.0, delta=1e-6, bounds={"x": (0, 1)}, columns=["x", "region"],
                                 categories={"region": "private"}, privacy_unit="cid",
                                 max_rows_per_unit=2, ledger=ledger)
        assert not ledger.charges()
    # a null category keeps them: no refusal
    ledger = dm.InMemoryLedger(uncapped=True)
    frame.dpmic.pairwise(4.0, delta=1e-6, bounds={"x": (0, 1)}, columns=["x", "region"],
                         categories={"region": "private"}, nulls="category", privacy_unit="cid",
                         max_rows_per_unit=2, ledger=ledger)
    assert len(ledger.charges()) == 1
