"""Local model, server side: the joint-frequency estimator is unbiased and its
variance is the normal approximation's, for every protocol, through the public
functions (``randomize`` then ``pairwise``) with seeded (NOT private) randomness.

The variance check has power: the same empirical variances are refused against
0.7x and 1.3x the stated variance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.errors import PrivacyLeakWarning
from dpmic_dask.ldp import pairwise, randomize
from dpmic_dask.testing import ENV_FLAG, seeded_noise

M = 4  # bins per axis: 16 joint cells
BOUNDS = {"a": (0.0, 1.0), "b": (0.0, 1.0)}


def planted_table(n: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows placed at bin centres with uneven frequencies (some cells empty)."""
    weights = np.array([8, 4, 2, 1, 1, 1, 1, 0, 0, 0, 3, 5, 2, 1, 1, 2], float)
    counts = np.floor(weights / weights.sum() * n).astype(int)
    cells = np.repeat(np.arange(M * M), counts)
    centre = lambda i: (i + 0.5) / M  # noqa: E731
    df = pd.DataFrame({"a": centre(cells // M), "b": centre(cells % M)})
    return df, np.bincount(cells, minlength=M * M) / cells.size


def repeated_estimates(protocol: str, eps: float, repeats: int, n: int, seed: int):
    df, truth = planted_table(n)
    est, cov = [], None
    with seeded_noise(seed, not_private=True):
        for _ in range(repeats):
            reports = randomize(df, eps, bounds=BOUNDS, bins=M, protocol=protocol)
            result = pairwise(reports, replicates=0)
            est.append(result.frequencies("a", "b").ravel())
            if cov is None:
                cov = result.estimates[0].covariance
    return np.array(est), truth, cov


def stated_covariance(protocol: str, eps: float, truth: np.ndarray, n: int) -> np.ndarray:
    from dpmic_dask.ldp.protocols import make_protocol

    return make_protocol(protocol, eps, M * M).frequency_covariance(truth, n)


CASES = [("grr", 1.0), ("olh", 1.0), ("oue", 1.0), ("olh", 3.0), ("grr", 3.0)]


@pytest.fixture
def seeded(monkeypatch):
    monkeypatch.setenv(ENV_FLAG, "1")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dpmic_dask.errors.PrivacyLeakWarning")
@pytest.mark.parametrize("protocol,eps", CASES)
def test_unbiased_and_variance_matches(seeded, protocol, eps):
    n, repeats = 2000, 1500
    est, truth, plug_in = repeated_estimates(protocol, eps, repeats, n, seed=17)
    cov = stated_covariance(protocol, eps, truth, len(planted_table(n)[0]))
    se = np.sqrt(np.diag(cov) / repeats)
    assert np.all(np.abs(est.mean(axis=0) - truth) <= 3 * se + 1e-12)
    ratio = est.var(axis=0, ddof=1) / np.diag(cov)
    assert np.all(np.abs(ratio - 1) <= 0.15), ratio
    # power: the same data refuse a variance 0.7x or 1.3x the stated one
    for wrong in (0.7, 1.3):
        assert np.any(np.abs(est.var(axis=0, ddof=1) / (wrong * np.diag(cov)) - 1) > 0.15)
    # off-diagonal terms: variance of sums of cells (a row's marginal, a diagonal)
    for block in ([0, 1, 2, 3], [0, 5, 10, 15], [1, 6, 11]):
        stated = cov[np.ix_(block, block)].sum()
        assert abs(est[:, block].sum(axis=1).var(ddof=1) / stated - 1) <= 0.15
    # the server's plug-in covariance (at its own estimate) is close to the true one
    assert np.allclose(np.diag(plug_in), np.diag(cov), rtol=0.25, atol=1e-6)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dpmic_dask.errors.PrivacyLeakWarning")
def test_sampled_pairs_add_the_subset_sampling_variance(seeded):
    """With three columns each person reports one of three pairs: a pair's estimate
    varies with the noise AND with which third of the people answered it; the
    covariance the server states includes both."""
    df, truth = planted_table(3000)
    df["c"] = df["a"]
    bounds = dict(BOUNDS, c=(0.0, 1.0))
    est, stated = [], []
    with seeded_noise(5, not_private=True):
        for _ in range(800):
            result = pairwise(randomize(df, 2.0, bounds=bounds, bins=M, protocol="grr"),
                              replicates=0)
            est.append(result.frequencies("a", "b").ravel())
            stated.append(np.diag(result.estimates[0].covariance))
    est = np.array(est)
    ratio = est.var(axis=0, ddof=1) / np.mean(stated, axis=0)
    assert np.all(np.abs(ratio - 1) <= 0.2), ratio
    assert np.all(np.abs(est.mean(axis=0) - truth) <= 3 * np.sqrt(est.var(axis=0) / 800) + 1e-12)


def test_seeded_context_warns(seeded):
    df, _ = planted_table(100)
    with pytest.warns(PrivacyLeakWarning), seeded_noise(1, not_private=True):
        out = randomize(df, 1.0, bounds=BOUNDS, bins=M)
    assert out.attrs["dpmic_ldp"]["seeded"] is True
    assert pairwise(out, replicates=0).report().startswith("NOT PRIVATE")
