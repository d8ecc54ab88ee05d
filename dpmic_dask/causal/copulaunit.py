"""Causal discovery per privacy unit (``privacy_unit``, ``max_rows_per_unit``): the
copula release of :mod:`dpmic_dask.causal.copularun` on rows bounded to ``k`` per
unit, with a private row count in front of it, as the release plan's unit step
does for pairwise statistics.

Staged (:func:`unit_copula_graph`), before the charge:

1. a unit column mixing value types, and missing values in the search's columns,
   are refused from the whole table (never from the kept rows, whose choice
   depends on the fresh key);
2. at most ``k`` rows per unit are kept (:func:`~dpmic_dask.release.bounding.bound_contributions`),
   and the one pass of fine grids reads them;
3. the budget is split between the row count (``count_share``, 5% by default) and
   the tau vector, and the smallest public ``n0`` at which the tau noise can be
   sampled (the floor) is found from public quantities only.

After it: the noisy bounded row count and its lower bound ``n0``; the tau vector
tapered below ``n0`` (``min(1, n / n0) tau``), with noise for the sensitivity of
adding or removing one unit at every row count
(:func:`~dpmic_dask.causal.copula.tau_unit_sensitivities`); the search on it with
``n0`` as its row count, post-processing. Nothing after the charge refuses.
"""

from __future__ import annotations

import numpy as np
from pandas.api.types import is_object_dtype

from dpmic_dask.backends import backend_for
from dpmic_dask.causal.copula import CopulaBudget, CorrelationTests, copula_correlation, tau_matrix
from dpmic_dask.causal.copularun import correlation_grids, correlation_result
from dpmic_dask.causal.result import CausalReport
from dpmic_dask.causal.tablerelease import released_tables_graph
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import measure_for, split_front
from dpmic_dask.privacy.mechanisms.base import LATTICE, MAX_NOISE_UNITS
from dpmic_dask.privacy.selection import check_share
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.bounding import (
    bound_contributions,
    refuse_missing_in_table,
    refuse_mixed_units,
    unit_arguments,
    unit_label,
)
from dpmic_dask.release.charge import Bill, warn_if_delta_large
from dpmic_dask.release.report import warn_noise_swamps_tests
from dpmic_dask.release.rowcount import (
    DEFAULT_COUNT_SHARE,
    RowCountPlan,
    plan_row_count,
    run_row_count,
)
from dpmic_dask.release.unitbase import UnitsPlan, unit_privacy_statement

#: A very large public row count at which the tau noise is checked first.
LARGE_N = 2**40


def check_unit_arguments(schema, request, privacy_unit, max_rows_per_unit, count_share):
    """``(unit, k, share)``, or ``None`` at row level; refuses (nothing read) what
    :func:`~dpmic_dask.release.bounding.unit_arguments` refuses (a unit column
    may not be a column of the graph), ``count_share`` without a unit, and a
    test other than the copula test or the released tables."""
    if privacy_unit is None and count_share is not None:
        raise InvalidParameterError("count_share needs privacy_unit (the column that "
                                    "identifies a unit)")
    found = unit_arguments(schema, request.names, privacy_unit, max_rows_per_unit,
                           "be a column of the causal graph")
    if found is None:
        return None
    share = check_share(DEFAULT_COUNT_SHARE if count_share is None else count_share,
                        "count_share")
    if request.test not in ("copula", "chisq"):
        raise InvalidParameterError(
            "per privacy unit, causal discovery uses the copula test (bounded columns) or "
            f"released tables (test=\"chisq\"); test={request.test!r} is not available per "
            "unit")
    return (*found, share)


def _noise_fits(part, p: int, n0: int, k: int) -> bool:
    return CopulaBudget(part, p, n0, k).scale / LATTICE <= MAX_NOISE_UNITS


def find_floor(part, p: int, k: int) -> int:
    """The smallest ``n0 >= MIN_ROWS`` at which the tapered tau vector's noise can be
    sampled (its scale falls as ``n0`` grows); refuses a budget too small even at a
    very large ``n0``. Public quantities only."""
    if not _noise_fits(part, p, LARGE_N, k):
        raise InvalidParameterError("the tau matrix's noise is too large to sample; raise eps")
    if _noise_fits(part, p, MIN_ROWS, k):
        return MIN_ROWS
    lo, hi = MIN_ROWS, LARGE_N  # fails at lo, fits at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _noise_fits(part, p, mid, k) else (mid, hi)
    return hi


def plan_units(eps, delta, p: int, unit, k: int, share: float):
    """The per-unit plan: the row count's share, the tau vector's part, the floor."""
    total = measure_for(delta).total(eps, delta)
    count_part, part, _, _ = split_front(total, share, what="privacy_unit")
    floor = find_floor(part, p, k)
    rowcount = plan_row_count(count_part, sensitivity=k, floor=floor)
    return UnitsPlan(unit, k, rowcount, part, total, floor)


def tapered_tau(grids, p: int, bins: int, n0: int) -> np.ndarray:
    """``min(1, n / n0) tau_a`` of every pair (0 off the diagonal below two rows)."""
    n = int(grids.rows)
    if n < 2:
        return np.eye(p)
    tau = tau_matrix(grids, p, bins, n)
    weight = min(1.0, n / n0)
    out = tau * weight
    np.fill_diagonal(out, 1.0)
    return out


def unit_copula_graph(frame, request, eps, delta, units: tuple, backend, split_every,
                      progress, label):
    """The copula release per unit, staged (see the module's docstring)."""
    unit, k, share = units
    plan = plan_units(eps, delta, len(request.codings), unit, k, share)
    names = list(request.names)
    refuse_mixed_units(frame, unit, split_every=split_every, progress=progress)
    _refuse_missing(frame, names, split_every, progress)
    bounded = bound_contributions(frame, unit, k, names)
    grids, codings = correlation_grids(bounded, request, backend, progress)
    p, bins = len(codings), codings[0].size
    schema = backend.schema(frame)  # the missing values' pass and the grids', and the
    passes = 2 + any(is_object_dtype(schema[u]) for u in unit)  # object unit's types
    yield Bill(plan.total, label or f"causal graph of {p} columns per {unit_label(unit)}",
               "causal-pc-copula", request.names)
    count = run_row_count(plan.rowcount, int(grids.rows))
    n0 = max(plan.floor, count.n_low)
    budget = CopulaBudget(plan.part, p, n0, k)
    # after the charge (n0 is released): shown, never raised
    warn_if_delta_large(delta, n0)
    warn_noise_swamps_tests(budget.scale * budget.total.law.ci95, 2.0,
                            "this causal graph's released Kendall tau values are noisy",
                            pure=budget.total.is_pure)
    released = budget.release(tapered_tau(grids, p, bins, n0))
    tests = CorrelationTests(copula_correlation(released), n0, request.alpha, "copula",
                             tau=released, noise_var=budget.variance)
    detail = (f"one release of the {request.pairs} pairs' Kendall tau values on at most {k} "
              "rows per unit, after a private row count; the search is post-processing")
    statement = unit_privacy_statement(privacy_statement(plan.total, request.pairs, detail),
                                       plan)
    report = CausalReport(
        True, "copula", request.alpha, n0, bins, request.max_condition_size,
        epsilon=plan.total.epsilon, delta=plan.total.delta, statement=statement,
        parts=(_count_part(plan.rowcount, count.noisy, n0),
               ("Kendall tau matrix (tapered below n0)", plan.part.describe(), budget.scale)),
        passes=passes, noise_scale=budget.scale, smallest_visible=tests.smallest_visible(),
        unit=unit_label(unit), max_rows_per_unit=k, rows_noisy=count.noisy)
    return correlation_result(request, tests, released, report)


def unit_table_graph(frame, request, eps, delta, units: tuple, level_shares, backend,
                     split_every, progress, label):
    """Released tables per unit, staged: the refusals from the whole table, at most
    ``k`` rows per unit kept once (persisted: every level's pass reads the same
    rows), then :func:`~dpmic_dask.causal.tablerelease.released_tables_graph` with
    the add/remove sensitivity of one unit (``k T`` in L1, ``k sqrt(T)`` in L2)."""
    unit, k, _ = units  # count_share: no row count is released (the tables hold it)
    names = list(request.names)
    raw = [c.name for c in request.codings if c.categories is not None]  # not numbers
    refuse_mixed_units(frame, unit, split_every=split_every, progress=progress)
    _refuse_missing(frame, names, split_every, progress, raw)
    bounded = bound_contributions(frame, unit, k, names)
    bounded = backend_for(bounded).persist(bounded)
    return (yield from released_tables_graph(bounded, request, eps, delta, level_shares,
                                             backend_for(bounded), split_every, progress,
                                             label, units=(unit, k)))


def _refuse_missing(frame, names, split_every, progress, raw=()) -> None:
    """Missing values in the graph's columns, refused from the whole table (never
    from the kept rows, whose choice depends on the fresh key)."""
    refuse_missing_in_table(frame, names, split_every=split_every, progress=progress,
                            raw=raw, hint="fill them with public values or drop the rows "
                            "first")


def _count_part(rowcount: RowCountPlan, noisy: int, n0: int) -> tuple:
    return (f"row count of the bounded rows (noisy {noisy}, lower bound n0 = {n0} at "
            f"1 - {rowcount.beta:g})", rowcount.cost.describe(), rowcount.scale)


__all__ = ["check_unit_arguments", "find_floor", "plan_units", "tapered_tau",
           "unit_copula_graph", "unit_table_graph"]
