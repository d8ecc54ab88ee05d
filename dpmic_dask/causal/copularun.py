"""The correlation tests' release: the marginal histograms' pass, one charge, the
grids' pass on bins at released quantiles and one noisy Kendall tau matrix --
or, with too few rows for those bins, the signs at released medians of
:mod:`dpmic_dask.causal.signsrun` -- (or, exactly, the Pearson or copula
correlations), and PC on it as post-processing (:mod:`dpmic_dask.causal.copula`
holds the statistics).
The private release is staged (:func:`copula_graph`): the executor
(:func:`~dpmic_dask.release.executor.run_charged`) makes its one charge."""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.causal.copula import (
    CopulaBudget,
    CorrelationTests,
    combine_grids,
    copula_bins,
    copula_correlation,
    fine_codings,
    grid_partition,
    tau_matrix,
)
from dpmic_dask.causal.copulabins import (
    MARGIN_BINS,
    MARGIN_SHARE,
    QUANTILE_ERROR,
    binned_codings,
    fine_margin_codings,
    margin_partition,
    margin_scale,
    quantile_lookup,
)
from dpmic_dask.causal.correlationsearch import (
    check_rows,
    correlation_result,
    refuse_missing_values,
    same_rows,
)
from dpmic_dask.causal.quadrant import FLAT_Z, ONE_SIDE
from dpmic_dask.causal.result import CausalGraph, CausalReport, piled_note, said_flat
from dpmic_dask.causal.signsrun import sign_graph
from dpmic_dask.causal.tables import LevelCounts, combine_counts
from dpmic_dask.errors import BoundsWarning, InvalidParameterError, shown, user_stacklevel
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.privacy.mechanisms.base import (
    LATTICE,
    MAX_NOISE_UNITS,
)
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.bounds_reading import heavy_ends
from dpmic_dask.release.charge import Bill, warn_if_delta_large
from dpmic_dask.release.report import warn_noise_swamps_tests

if TYPE_CHECKING:
    from dpmic_dask.privacy.charges import Charge


def correlation_grids(frame, request, backend, progress, codings=None):
    """The pass of the correlation tests: every pair's grid (and, for ``fisherz``,
    the raw moments) on ``codings`` (default: equal-width fine bins); refuses
    missing values."""
    if codings is None:
        codings = fine_codings(request.codings, copula_bins(request.pairs))
    # partials of up to 2^25 counts: summed two at a time (not split_every), so that
    # few wait at once: 50 columns x 10^6 rows peaked 2.55 GiB above the frame with
    # int64 partials summed eight at a time, 1.05 GiB now
    grids = backend.reduce(frame, request.names,
                           partial(grid_partition, codings=codings,
                                   moments=request.test == "fisherz"),
                           combine_grids, split_every=2, progress=progress)
    refuse_missing_values(grids, request)
    return grids, codings


def margins_pass(frame, request, backend, progress) -> LevelCounts:
    """The first pass of the copula test: every column's fine histogram, the row
    count and the missing values (refused)."""
    margins = backend.reduce(frame, request.names,
                             partial(margin_partition,
                                     codings=fine_margin_codings(request.codings)),
                             combine_counts, split_every=8, progress=progress)
    refuse_missing_values(margins, request)
    return margins


def copula_codings(request, histograms):
    """The copula bins placed at the quantiles of ``histograms`` (per column, noisy
    or exact)."""
    bins = copula_bins(request.pairs)
    return binned_codings(request.codings, [quantile_lookup(h, bins) for h in histograms],
                          bins)


def copula_graph(frame, request, eps, delta, backend, progress,
                 label) -> Generator[Bill, Charge, CausalGraph]:
    """The private copula release, staged: the first pass (the marginal histograms,
    the row count) and every check, the bill, then the noisy marginal histograms,
    the bins at their quantiles and the grids' pass, and one noisy tau matrix; PC on
    it is post-processing. When the histograms' noise would misplace the bins
    (few rows, small eps, many columns: public quantities) there are no bins: the
    release is :func:`sign_graph`'s."""
    total = measure_for(delta).total(eps, delta)
    p = len(request.codings)
    margin_part, tau_part = total.measure.split(total, [MARGIN_SHARE, 1.0 - MARGIN_SHARE])
    m_scale = margin_scale(margin_part, p)
    margins = margins_pass(frame, request, backend, progress)
    n = check_rows(int(margins.rows))
    # bins at noisy quantiles only where the noise of a cumulative count (a random walk
    # over the fine bins: standard deviation sqrt(MARGIN_BINS) times one count's) stays
    # within a tenth of the rows (public: n, p, eps, delta); Laplace's deviation is
    # sqrt(2) times its scale, so pure DP needs about 1.4 times the rows of zCDP
    # (a scale past 1e100 means an eps so small that no quantile can be placed)
    spread = math.sqrt(total.law.variance(m_scale) * MARGIN_BINS) if m_scale < 1e100 \
        else math.inf
    if not spread <= QUANTILE_ERROR * n:  # no bins: signs at released medians
        return (yield from sign_graph(frame, request, total, margins, backend, progress,
                                      label))
    warn_if_delta_large(delta, n)
    budget = CopulaBudget(tau_part, p, n)
    if budget.scale / LATTICE > MAX_NOISE_UNITS or not m_scale <= MAX_NOISE_UNITS:
        raise InvalidParameterError("the tau matrix's noise is too large to sample; raise eps")
    warn_noise_swamps_tests(budget.scale * total.law.ci95, 2.0,
                            "this causal graph's released Kendall tau values are noisy",
                            pure=total.is_pure)
    yield Bill(total, label or f"causal graph of {p} columns", "causal-pc-copula",
               request.names)
    noisy = margins.counts + np.asarray(total.law.draw(m_scale, int(margins.counts.size)),
                                        dtype=np.int64).reshape(margins.counts.shape)
    codings = copula_codings(request, noisy)
    released_margins = {name: noisy[j] for j, name in enumerate(request.names)}
    grids, _ = correlation_grids(frame, request, backend, progress, codings)
    same_rows(grids, n)
    parts = [(f"marginal histograms ({p} x {MARGIN_BINS} counts; the bins at their "
              "quantiles)", margin_part.describe(), m_scale),
             ("Kendall tau matrix", tau_part.describe(), budget.scale)]
    tau = tau_matrix(grids, p, codings[0].size, n)  # exact, never released as such
    released = budget.release(tau)
    tests = CorrelationTests(copula_correlation(released), n, request.alpha, "copula",
                             tau=released, noise_var=budget.variance)
    detail = (f"noisy histograms of the columns, then one release of the {request.pairs} "
              "pairs' Kendall tau values; the search is post-processing")
    report = CausalReport(
        True, "copula", request.alpha, n, codings[0].size, request.max_condition_size,
        epsilon=total.epsilon, delta=total.delta,
        statement=privacy_statement(total, request.pairs, detail), parts=tuple(parts),
        passes=2, noise_scale=budget.scale,
        smallest_visible=tests.smallest_visible())
    # a column whose released histogram holds (nearly) every row in one fine bin
    # ties every pair it is in: its taus are about 0, and the report says so
    # (within the noise of one count: a constant column's bin may draw below n)
    near = ONE_SIDE * n + FLAT_Z * math.sqrt(total.law.variance(m_scale))
    report = replace(report, flat=said_flat(request.names, noisy.max(axis=1) >= n - near,
                                            "copula"))
    report = replace(report, piled=piled_ends(request.names, noisy, n, report.flat,
                                              math.sqrt(total.law.variance(m_scale))))
    return correlation_result(request, tests, released, report, codings,
                              released={"margins": released_margins})


#: An end bin of a column's released histogram holding at least this share of the
#: rows, and at least ``SPIKE`` times its neighbour plus ``PILE_SDS`` noise
#: deviations (the check of public bounds' rule, ``bounds_reading.heavy_ends``), is
#: a pile at a public bound (clamped values tie there).
PILE_SHARE = 0.05
PILE_SDS = 6.0


def piled_ends(names, noisy, n: int, flat, sd: float) -> tuple:
    """``(name, side, share)`` of the columns (not flat) whose released histogram
    piles rows in an end bin (post-processing of released counts), said in a
    warning (after the charge: shown, never raised)."""
    out = [(name, side, share)
           for name, row in zip(names, np.asarray(noisy, dtype=np.float64)) if name not in flat
           for side, share in heavy_ends(row, PILE_SDS * sd, PILE_SHARE, total=n)]
    if out:
        shown(piled_note(out).capitalize(), BoundsWarning, stacklevel=user_stacklevel())
    return tuple(out)


__all__ = ["copula_codings", "copula_graph", "correlation_grids", "margins_pass"]
