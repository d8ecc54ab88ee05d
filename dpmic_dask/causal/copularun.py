"""The correlation tests' release: one pass of fine grids, one charge, one noisy
Kendall tau matrix (or, exactly, the Pearson or copula correlations), and PC on
it as post-processing (:mod:`dpmic_dask.causal.copula` holds the statistics).
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
    CorrelationMargins,
    CorrelationTests,
    combine_grids,
    copula_bins,
    copula_correlation,
    fine_codings,
    grid_partition,
    nearest_correlation,
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
from dpmic_dask.causal.orient import cpdag
from dpmic_dask.causal.quadrant import (
    QuadrantBudget,
    combine_signs,
    concordances,
    median_cuts,
    median_selector,
    sign_partition,
    tetrachoric,
)
from dpmic_dask.causal.request import CausalRequest
from dpmic_dask.causal.result import CausalGraph, CausalReport
from dpmic_dask.causal.skeleton import exact_decision, pc_skeleton
from dpmic_dask.causal.tables import LevelCounts, combine_counts
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, MissingValuesError
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.privacy.mechanisms.base import (
    LATTICE,
    MAX_NOISE_UNITS,
)
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.charge import Bill, warn_if_delta_large
from dpmic_dask.release.report import warn_noise_swamps_tests

if TYPE_CHECKING:
    from dpmic_dask.privacy.charges import Charge


def check_rows(n: int) -> int:
    """``n`` when there are enough rows (refused before the charge otherwise)."""
    if n < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    return n


def refuse_missing_values(summed, request: CausalRequest) -> None:
    """Refuse (before the charge) missing values in any column of the search."""
    if summed.missing.any():
        cols = [request.names[j] for j in np.flatnonzero(summed.missing)]
        raise MissingValuesError(f"column(s) {cols} contain missing values; fill them with "
                                 "public values or drop the rows first (nothing was charged)")


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


def same_rows(grids, n: int) -> None:
    """The grids' pass read the first pass's ``n`` rows (only data changed between
    the two passes fails here)."""
    if int(grids.rows) != n:
        raise InvalidDataError("the number of rows changed between the two passes over "
                               "the data; release from data that does not change")


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
    graph = correlation_result(request, tests, released, report, codings)
    graph._extra["margins"] = released_margins
    return graph


def sign_graph(frame, request, total, margins, backend, progress,
               label) -> Generator[Bill, Charge, CausalGraph]:
    """The copula release without bins (:mod:`dpmic_dask.causal.quadrant`): after
    the first pass (``margins``, exact) and every check, the bill; then each
    column's cut by noisy top-1 near its median, the pass of the sign sums, one
    noisy vector of them, and PC on their tetrachoric correlations."""
    p = len(request.codings)
    n = int(margins.rows)
    median_part, sign_part = total.measure.split(total, [MARGIN_SHARE, 1.0 - MARGIN_SHARE])
    budget = QuadrantBudget(sign_part, p, n)
    if not budget.count_scale <= MAX_NOISE_UNITS:
        raise InvalidParameterError("the sign sums' noise is too large to sample; raise eps")
    selector = median_selector(median_part, p)
    try:  # the pick's noise must be calibrated before the charge
        pick = selector.noise_scale(MARGIN_BINS + 1, 1.0)
    except Exception as exc:  # noqa: BLE001 - OpenDP refuses an infinite scale
        raise InvalidParameterError("the medians' noise cannot be calibrated; raise eps") \
            from exc
    warn_if_delta_large(total.delta, n)
    warn_noise_swamps_tests(budget.scale * total.law.ci95, 2.0,
                            "this causal graph's released sign concordances are noisy",
                            pure=total.is_pure)
    yield Bill(total, label or f"causal graph of {p} columns", "causal-pc-copula",
               request.names)
    cuts = median_cuts(margins.counts, n, median_part)
    sums = backend.reduce(frame, request.names,
                          partial(sign_partition, codings=fine_margin_codings(request.codings),
                                  cuts=cuts),
                          combine_signs, split_every=8, progress=progress)
    same_rows(sums, n)
    refuse_missing_values(sums, request)  # only data changed between the passes
    released = budget.release(sums.vector())
    r, slope, sampling, cuts_h = tetrachoric(released, p, n)
    tests = CorrelationTests(nearest_correlation(r), n, request.alpha, "copula",
                             noise_var=budget.variance, slope=slope, sampling=sampling,
                             beta=concordances(released, p, n), cuts=cuts_h)
    parts = ((f"medians ({p} noisy picks of a cut among {MARGIN_BINS + 1})",
              median_part.describe(), pick),
             ("sign sums", sign_part.describe(), budget.count_scale))
    detail = (f"noisy picks of each column's median, then one release of the {p} columns' "
              f"and {request.pairs} pairs' sums of signs; the search is post-processing")
    report = CausalReport(
        True, "copula", request.alpha, n, 2, request.max_condition_size,
        epsilon=total.epsilon, delta=total.delta,
        statement=privacy_statement(total, request.pairs, detail), parts=parts,
        passes=2, noise_scale=budget.scale, smallest_visible=tests.smallest_visible(),
        statistic="signs")
    graph = correlation_result(request, tests, None, report)
    graph._extra["signs"] = released
    graph._extra["cuts"] = {name: int(c) for name, c in zip(request.names, cuts)}
    return graph


def correlation_result(request, tests: CorrelationTests, tau, report,
                       codings=None) -> CausalGraph:
    """PC-stable on the tests (no data read), the CPDAG as causal-learn orients it
    (a v-structure when the middle column is outside every separating set of the
    pair's level), the separating test's statistic of every removed pair."""
    def count_level(keys):
        return keys, None

    def margins(keys, _):
        return CorrelationMargins(keys, tests)

    skeleton = pc_skeleton(len(request.codings), count_level=count_level,
                           decide=exact_decision, max_level=request.max_condition_size,
                           margins=margins)
    report = replace(report, levels=tuple(skeleton.levels))
    removed = {pair: tests.zscore(pair[0], pair[1], cond)
               for pair, cond in skeleton.separating_sets.items()}
    graph = cpdag(skeleton.adjacency, skeleton.separating_union)
    extra = {"tau": tau, "correlation": tests.r, "removed": removed}
    if codings is not None and codings[0].lookup is not None:  # released bins
        extra["bins"] = {c.name: c.lookup for c in codings}
    return CausalGraph(request.names, graph, dict(skeleton.separating_sets),
                       dict(skeleton.last_statistic), report, extra)


__all__ = ["check_rows", "copula_codings", "copula_graph", "correlation_grids",
           "correlation_result", "margins_pass", "refuse_missing_values"]
