"""The check of public bounds (``bounds_check=``, docs/privacy.md "The check of public
bounds") releases each checked column's 16-bin histogram with discrete Laplace noise
of scale ``2 / eps_c``: checked through the public release function against the exact
histograms, at the stated scale, and shown to fail at 0.7x and 1.3x of it."""

import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask.privacy.costs import column_epsilon, measure_for
from dpmic_dask.release.bounds_check import CHECK_BINS
from dpmic_dask.stats.counting import bins
from dpmic_dask.stats.sensitivity import safe_up
from tests.statistical.helpers import ALPHA, chi_square_pvalue, discrete_laplace_pmf, rerun_once

COLUMNS, ROWS, EPS, SHARE, RELEASES = 8, 400, 8.0, 0.5, 40
BOUNDS = (0.0, 10.0)


def table():
    gen = np.random.default_rng(11)  # test data only; some values outside the bounds
    data = {f"x{k}": gen.uniform(-1.0, 11.0, ROWS) * (1 + k % 3) / 2 for k in range(COLUMNS)}
    return pd.DataFrame(data)


def stated_scale(delta: float) -> float:
    """``2 / eps_c`` from the budget split alone (pure: ``share * eps / C``; zCDP: the
    largest ``eps_c`` with ``C eps_c**2 / 2`` within ``share`` of ``rho``)."""
    measure = measure_for(delta)
    (part,) = measure.split(measure.total(EPS, delta), (SHARE,))
    return safe_up(2.0 / column_epsilon(part, COLUMNS))


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("B", [16, 40])
@rerun_once
def test_released_check_counts_are_discrete_laplace_at_the_stated_scale(delta, B):
    """B = 16: the check makes its own pass; B = 40: its histograms come from the
    values' pass (the grid's refinement holds the check's bin edges)."""
    frame = table()
    exact = {c: np.bincount(bins(frame[c].to_numpy(), BOUNDS, CHECK_BINS), minlength=CHECK_BINS)
             for c in frame.columns}
    scale = stated_scale(delta)
    residuals = []
    for _ in range(RELEASES):
        result = frame.dpmic.pairwise(EPS, delta=delta, bounds=dict.fromkeys(frame.columns, BOUNDS),
                                      B=B, c=2, bounds_check=SHARE)
        found = result.bounds_check
        assert found.noise_scale == scale
        for c in frame.columns:
            residuals.append(np.asarray(found.histograms[c]) - exact[c])
    z = np.concatenate(residuals)
    assert z.size == RELEASES * COLUMNS * CHECK_BINS
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(scale, s)) > ALPHA
    for wrong in (0.7 * scale, 1.3 * scale):
        assert chi_square_pvalue(z, lambda s, w=wrong: discrete_laplace_pmf(w, s)) < ALPHA


LISTS, LIST_RELEASES = 10, 60
LISTED = ["a", "b", "c"]


def stated_list_scale(columns: int) -> float:
    (part,) = measure_for(0.0).split(measure_for(0.0).total(EPS, 0.0), (SHARE,))
    return safe_up(2.0 / column_epsilon(part, columns))


@pytest.mark.slow
@rerun_once
def test_released_list_counts_are_discrete_laplace_at_the_stated_scale():
    """A categorical column with a public list releases two counts (rows in the
    list, rows outside it), each with the same noise as a bin of a numeric
    column's histogram (drawn after either pass: tests/integration/
    test_category_list_check.py shows both passes' exact counts)."""
    gen = np.random.default_rng(12)  # test data only; "d" is outside every list
    frame = pd.DataFrame({f"k{j}": gen.choice([*LISTED, "d"], ROWS) for j in range(LISTS)})
    exact = {c: ((frame[c] != "d").sum(), (frame[c] == "d").sum()) for c in frame.columns}
    scale = stated_list_scale(LISTS)
    residuals = []
    for _ in range(LIST_RELEASES):
        result = frame.dpmic.pairwise(EPS, bounds={}, B=40, c=2,
                                      categories=dict.fromkeys(frame.columns, LISTED),
                                      bounds_check=SHARE)
        found = result.bounds_check
        assert found.noise_scale == scale and set(found.lists) == set(frame.columns)
        for c in frame.columns:
            residuals.append(np.asarray(found.histograms[c]) - exact[c])
    z = np.concatenate(residuals)
    assert z.size == LIST_RELEASES * LISTS * 2
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(scale, s)) > ALPHA
    for wrong in (0.7 * scale, 1.3 * scale):
        assert chi_square_pvalue(z, lambda s, w=wrong: discrete_laplace_pmf(w, s)) < ALPHA
