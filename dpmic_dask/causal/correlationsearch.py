"""What every correlation release's search shares: the row and missing-value
checks of its passes and PC-stable on its tests (:func:`correlation_result`),
post-processing of what was released."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpmic_dask.causal.copula import CorrelationMargins, CorrelationTests
from dpmic_dask.causal.orient import cpdag
from dpmic_dask.causal.request import CausalRequest
from dpmic_dask.causal.result import NEAR_COPY, CausalGraph
from dpmic_dask.causal.skeleton import exact_decision, pc_skeleton
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidDataError, MissingValuesError


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
                                 "public values first (dropping those rows would make the "
                                 "row count, which the search reads as public, depend on "
                                 "them: docs/causal.md); nothing was charged")


def same_rows(grids, n: int) -> None:
    """The grids' pass read the first pass's ``n`` rows (only data changed between
    the two passes fails here)."""
    if int(grids.rows) != n:
        raise InvalidDataError("the number of rows changed between the two passes over "
                               "the data; release from data that does not change")


def correlation_result(request, tests: CorrelationTests, tau, report,
                       codings=None, released=None) -> CausalGraph:
    """PC-stable on the tests (no data read), the CPDAG as causal-learn orients it
    (a v-structure when the middle column is outside every separating set of the
    pair's level), the separating test's statistic of every removed pair;
    ``released``: further released quantities the result carries (by name)."""
    def count_level(keys):
        return keys, None

    def margins(keys, _):
        return CorrelationMargins(keys, tests)

    skeleton = pc_skeleton(len(request.codings), count_level=count_level,
                           decide=exact_decision, max_level=request.max_condition_size,
                           margins=margins)
    # only where the released statistics' noise is too small to carry a pair from
    # far below 0.99 to it (at a small n or eps independent columns came out so)
    copies = (near_copies(request.names, tests.r)
              if math.sqrt(max(tests.noise_var, 0.0)) < (1.0 - NEAR_COPY) / 4.0 else ())
    report = replace(report, levels=tuple(skeleton.levels), copies=copies)
    graph = cpdag(skeleton.adjacency, skeleton.separating_union)
    extra = {"tau": tau, "correlation": tests.r, "removed": dict(skeleton.removed_statistic)}
    if codings is not None and codings[0].lookup is not None:  # released bins
        extra["bins"] = {c.name: c.lookup for c in codings}
    extra.update(released or {})
    return CausalGraph(request.names, graph, dict(skeleton.separating_sets),
                       dict(skeleton.last_statistic), report, extra)


def near_copies(names, r) -> tuple:
    """The pairs (by name) whose released correlation ``r`` is at least
    :data:`NEAR_COPY` in absolute value (post-processing): near copies, through
    either of which PC separates the other's neighbours, as it does without noise
    (faithfulness fails), so the graph keeps one of them where the data hold both."""
    r = np.asarray(r, dtype=np.float64)
    i, j = np.triu_indices(r.shape[0], 1)
    close = np.abs(r[i, j]) >= NEAR_COPY
    return tuple((names[a], names[b]) for a, b in zip(i[close], j[close]))


__all__ = ["check_rows", "correlation_result", "near_copies",
           "refuse_missing_values", "same_rows"]
