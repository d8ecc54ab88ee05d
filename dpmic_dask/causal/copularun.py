"""The correlation tests' release: one pass of fine grids, one charge, one noisy
Kendall tau matrix (or, exactly, the Pearson or copula correlations), and PC on
it as post-processing (:mod:`dpmic_dask.causal.copula` holds the statistics).
The private release is staged (:func:`copula_graph`): the executor
(:func:`~dpmic_dask.release.executor.run_charged`) makes its one charge."""

from __future__ import annotations

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
    tau_matrix,
)
from dpmic_dask.causal.orient import cpdag
from dpmic_dask.causal.request import CausalRequest
from dpmic_dask.causal.result import CausalGraph, CausalReport
from dpmic_dask.causal.skeleton import exact_decision, pc_skeleton
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, MissingValuesError
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


def correlation_grids(frame, request, backend, progress):
    """The one pass of the correlation tests: every pair's fine grid (and, for
    ``fisherz``, the raw moments); refuses missing values."""
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


def copula_graph(frame, request, eps, delta, backend, progress,
                 label) -> Generator[Bill, Charge, CausalGraph]:
    """The private copula release, staged: one pass and every check, the bill, then
    one noisy tau matrix; PC on it is post-processing."""
    grids, codings = correlation_grids(frame, request, backend, progress)
    n = check_rows(int(grids.rows))
    warn_if_delta_large(delta, n)
    p = len(codings)
    budget = CopulaBudget.plan(eps, delta, p=p, n=n)
    if budget.scale / LATTICE > MAX_NOISE_UNITS:
        raise InvalidParameterError("the tau matrix's noise is too large to sample; raise eps")
    factor = budget.total.law.ci95
    warn_noise_swamps_tests(budget.scale * factor, 2.0,
                            "this causal graph's released Kendall tau values are noisy")
    tau = tau_matrix(grids, p, codings[0].size, n)  # exact, never released as such
    yield Bill(budget.total, label or f"causal graph of {p} columns", "causal-pc-copula",
               request.names)
    released = budget.release(tau)
    tests = CorrelationTests(copula_correlation(released), n, request.alpha, "copula",
                             tau=released, noise_var=budget.variance)
    detail = (f"one release of the {request.pairs} pairs' Kendall tau values; the search "
              "is post-processing")
    report = CausalReport(
        True, "copula", request.alpha, n, codings[0].size, request.max_condition_size,
        epsilon=budget.total.epsilon, delta=budget.total.delta,
        statement=privacy_statement(budget.total, request.pairs, detail),
        parts=(("Kendall tau matrix", budget.total.describe(), budget.scale),),
        passes=1, noise_scale=budget.scale, smallest_visible=tests.smallest_visible())
    return correlation_result(request, tests, released, report)


def correlation_result(request, tests: CorrelationTests, tau, report) -> CausalGraph:
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
    return CausalGraph(request.names, graph, dict(skeleton.separating_sets),
                       dict(skeleton.last_statistic), report, extra)


__all__ = ["check_rows", "copula_graph", "correlation_grids", "correlation_result",
           "refuse_missing_values"]
