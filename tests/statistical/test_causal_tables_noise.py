"""The released tables of ``test="chisq"`` at their true noise scale, through
``causal_graph``: every released count minus the exact one follows the discrete
Gaussian (zCDP) or discrete Laplace (pure DP) law of the scale derived here from
each level's number of joint tables (chi-square fit at the scale, not at 0.7x or
1.3x of it); and the noise-aware test keeps a true independence at about its
level ``alpha``, where the same tables read without the noise reject it."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpmic_dask.causal import causal_graph
from dpmic_dask.causal.tablerelease import noisy_chisq
from dpmic_dask.privacy.conversion import rho_from_eps_delta

from .helpers import (
    ALPHA,
    chi_square_pvalue,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    rerun_once,
)

CATEGORIES = {c: [0, 1, 2] for c in "abcd"}


def frame_of(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.6, b, rng.integers(0, 3, n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": rng.integers(0, 3, n)})


def exact_joint(frame, names):
    """The joint counts of ``names`` with each column's "other" bin (last)."""
    out = np.zeros((4,) * len(names), dtype=np.int64)
    np.add.at(out, tuple(frame[c].to_numpy() for c in names), 1)
    return out


def assert_fits_at_the_scale(residuals, delta):
    """``(residuals, scale)`` pairs fit the discrete Gaussian (``delta > 0``) or
    discrete Laplace law at their scale, and not at 0.7x or 1.3x of it (one
    chi-square per scale, Bonferroni over the scales)."""
    law = discrete_gaussian_pmf if delta else discrete_laplace_pmf
    for factor, fits in ((1.0, True), (0.7, False), (1.3, False)):
        pvalues = []
        for scale in sorted({s for _, s in residuals}):
            z = np.concatenate([r for r, s in residuals if s == scale])
            pvalues.append(chi_square_pvalue(z, lambda v, s=scale: law(factor * s, v)))
        assert (min(pvalues) > ALPHA / len(pvalues)) is fits, (factor, pvalues)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_released_counts_carry_the_stated_noise(delta):
    eps, runs = 1.0, 40
    frame = frame_of(3000, 0)
    residuals = []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, categories=CATEGORIES, max_condition_size=1)
        for level, tables in enumerate(g.released_tables):
            t = len(tables)
            if delta:
                scale = math.sqrt(2 * t) / math.sqrt(2 * rho_from_eps_delta(eps, delta) / 2)
            else:
                scale = 2 * t / (eps / 2)
            assert g.report().parts[level][2] == pytest.approx(scale, rel=1e-9)
            for names, noisy in tables.items():
                residuals.append(((noisy - exact_joint(frame, names)).ravel(), scale))
    assert_fits_at_the_scale(residuals, delta)


@pytest.mark.slow
def test_a_true_independence_is_kept_at_about_alpha():
    """a and d independent (level 0, 3 x 3 categories and the "other" bins): over
    400 releases at zCDP eps 1 and n = 3000 (noise sigma about 16 per count,
    near a cell's sampling error of about 18) the edge a - d survives in 1-10%
    of runs (alpha = 0.05; 17 of 400 when written); the same released tables read
    as if exact reject the independence in more than 30% of runs (309 of 400)."""
    runs, kept, naive = 400, 0, 0
    for seed in range(runs):
        frame = frame_of(3000, 1000 + seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = causal_graph(frame, 1.0, delta=1e-6, categories=CATEGORIES,
                             max_condition_size=0)
        kept += frozenset("ad") in g.skeleton
        table = g.released_tables[0][("a", "d")][None]
        stat, df, _ = noisy_chisq(table, 0.0)
        naive += df > 0 and stats.chi2.sf(stat, df) < 0.05
    assert 0.01 * runs <= kept <= 0.10 * runs, kept
    assert naive > 0.3 * runs, naive


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@rerun_once
def test_released_counts_per_unit_carry_the_unit_noise(delta):
    """Per unit (k = 2, every unit holding two rows, so all are kept): every
    released count minus the exact one follows the law of scale k sqrt(T) /
    sqrt(2 rho_l) (zCDP) or k T / eps_l (pure), and not 0.7x or 1.3x of it."""
    eps, runs, k = 1.0, 40, 2
    frame = frame_of(3000, 0).assign(who=np.repeat(np.arange(1500), k))
    residuals = []
    for _ in range(runs):
        g = causal_graph(frame, eps, delta=delta, categories=CATEGORIES, max_condition_size=1,
                         privacy_unit="who", max_rows_per_unit=k)
        for level, tables in enumerate(g.released_tables):
            t = len(tables)
            if delta:
                scale = k * math.sqrt(t) / math.sqrt(2 * rho_from_eps_delta(eps, delta) / 2)
            else:
                scale = k * t / (eps / 2)
            assert g.report().parts[level][2] == pytest.approx(scale, rel=1e-9)
            for names, noisy in tables.items():
                residuals.append(((noisy - exact_joint(frame, names)).ravel(), scale))
    assert_fits_at_the_scale(residuals, delta)
