"""Causal discovery per privacy unit (``privacy_unit``, ``max_rows_per_unit``): the
copula release's signs at released medians (:mod:`dpmic_dask.causal.quadrant`)
on rows bounded to ``k`` per unit, with a private row count in front of it, as
the release plan's unit step does for pairwise statistics; and the released
tables on the bounded rows.

Staged (:func:`unit_copula_graph`), before the charge:

1. a unit column mixing value types, and missing values in the search's columns,
   are refused from the whole table (never from the kept rows, whose choice
   depends on the fresh key; the missing values in the first pass of step 3);
2. the budget is split between the row count (``count_share``, 5% by default),
   the medians' picks (10% of the rest) and the sign sums, and every noise is
   checked (public quantities only);
3. at most ``k`` rows per unit are kept once
   (:func:`~dpmic_dask.release.bounding.bound_refusing_missing`, persisted: both
   passes read the same rows), and the first pass reads their fine histograms.

After it: the noisy bounded row count; each column's cut near its median by
noisy top-1 (scores of L-infinity sensitivity ``k / 2`` for a unit); the sign
sums' pass and one noisy vector of them (L1 ``k (p + P)``, L2 ``k sqrt(p + P)``);
the search on it with the noisy count (at least 4) as its row count,
post-processing.
Nothing after the charge refuses.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pandas.api.types import is_object_dtype, is_string_dtype

from dpmic_dask.backends import backend_for
from dpmic_dask.causal.copularun import margins_pass
from dpmic_dask.causal.result import CausalReport
from dpmic_dask.causal.signsrun import plan_signs, release_signs, sign_result, warn_noisy_signs
from dpmic_dask.causal.tablerelease import released_tables_graph
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import measure_for, split_front
from dpmic_dask.privacy.selection import check_share
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.bounding import (
    bound_refusing_missing,
    refuse_mixed_units,
    unit_arguments,
    unit_label,
)
from dpmic_dask.release.charge import Bill, warn_if_delta_large
from dpmic_dask.release.rowcount import (
    DEFAULT_COUNT_SHARE,
    RowCountPlan,
    plan_row_count,
    run_row_count,
)
from dpmic_dask.release.unitbase import unit_privacy_statement


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


def plan_unit_signs(eps, delta, p: int, k: int, share: float):
    """``(total, row count plan, signs plan)``, every noise checked; public
    quantities only (the sums' row count is set after the charge)."""
    total = measure_for(delta).total(eps, delta)
    count_part, part, _, _ = split_front(total, share, what="privacy_unit")
    rowcount = plan_row_count(count_part, sensitivity=k)
    return total, rowcount, plan_signs(part, p, 1, k)


def unit_copula_graph(frame, request, eps, delta, units: tuple, backend, split_every,
                      progress, label):
    """The copula release per unit, staged (see the module's docstring)."""
    unit, k, share = units
    p = len(request.codings)
    total, rowcount, plan = plan_unit_signs(eps, delta, p, k, share)
    names = list(request.names)
    refuse_mixed_units(frame, unit, split_every=split_every, progress=progress)
    # the bounding (missing values refused from the whole table in its first pass;
    # kept rows persisted), the margins' and the signs' (and an object unit's types)
    schema = backend.schema(frame)
    passes = 3 + any(is_object_dtype(schema[u]) or is_string_dtype(schema[u]) for u in unit)
    bounded = _bounded(frame, unit, k, names, split_every)  # both passes read the kept rows
    backend = backend_for(bounded)
    margins = margins_pass(bounded, request, backend, progress)
    yield Bill(total, label or f"causal graph of {p} columns per {unit_label(unit)}",
               "causal-pc-copula", request.names)
    count = run_row_count(rowcount, int(margins.rows))
    n = max(count.noisy, MIN_ROWS)  # post-processing: the tests need a few rows
    # after the charge (the count is released): shown, never raised
    warn_if_delta_large(delta, n)
    warn_noisy_signs(replace(plan.budget, n=n))
    budget, released, cuts, tests, flat = release_signs(
        plan, bounded, request, backend, progress, margins, n,
        count_sd=math.sqrt(rowcount.law.variance(rowcount.scale)))
    detail = (f"noisy picks of each column's median, then one release of the {p} columns' "
              f"and {request.pairs} pairs' sums of signs, on at most {k} rows per unit, "
              "after a private row count; the search is post-processing")
    statement = unit_privacy_statement(privacy_statement(total, request.pairs, detail),
                                       (unit, k))
    report = CausalReport(
        True, "copula", request.alpha, n, 2, request.max_condition_size,
        epsilon=total.epsilon, delta=total.delta, statement=statement,
        parts=(_count_part(rowcount, count.noisy), *plan.parts(budget)),
        passes=passes, noise_scale=budget.scale, smallest_visible=tests.smallest_visible(),
        unit=unit_label(unit), max_rows_per_unit=k, rows_noisy=count.noisy,
        statistic="signs")
    return sign_result(request, tests, report, released, cuts, flat)


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
    bounded = _bounded(frame, unit, k, names, split_every, raw)
    return (yield from released_tables_graph(bounded, request, eps, delta, level_shares,
                                             backend_for(bounded), split_every, progress,
                                             label, units=(unit, k)))


def _bounded(frame, unit, k: int, names, split_every, raw=()):
    """The kept rows, persisted, with missing values in the graph's columns refused
    from the whole table (never from the kept rows, whose choice depends on the
    fresh key) in the bounding's first pass."""
    return bound_refusing_missing(frame, unit, k, names, missing=names, split_every=split_every,
                                  raw=raw, hint="fill them with public values or drop the "
                                  "rows first")


def _count_part(rowcount: RowCountPlan, noisy: int) -> tuple:
    return (f"row count of the bounded rows (noisy {noisy}, the tests' row count)",
            rowcount.cost.describe(), rowcount.scale)


__all__ = ["check_unit_arguments", "plan_unit_signs", "unit_copula_graph", "unit_table_graph"]
