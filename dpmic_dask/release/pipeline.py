"""The values step: count every pair, charge once, noise once.

:func:`release_pairs` runs a checked :class:`~dpmic_dask.release.request.ReleaseRequest`
(the plan's values step, :mod:`dpmic_dask.release.plan`): one precheck, the
checks of the plan at the public row count (:func:`check_plan`), one pass over
the data, one charge (:mod:`dpmic_dask.release.charge`), then the noise. The
mechanism object answers the release's privacy cost; the budget precheck
(before any data is read) and the one charge (after counting, before any
noise) both use it. Noise is drawn once; nothing returned can redraw it.

Where is epsilon split? In the mechanism's ``calibrate`` (``dpmic_dask.privacy.mechanisms``).
Where is noise drawn? In the mechanism's ``randomise``, called only after
:func:`~dpmic_dask.release.charge.charge_budget`.
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, MissingValuesError
from dpmic_dask.privacy.accounting import privacy_statement
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.privacy.selection import AllPairs, Selection
from dpmic_dask.release.charge import (
    after_charge,
    charge_budget,
    log,
    precheck_budget,
    warn_if_delta_large,
)
from dpmic_dask.release.results import (
    Companion,
    PairwiseResult,
    PrivacyReport,
    warn_noise_after,
    warn_noise_before,
)
from dpmic_dask.stats.counting import CountSpec
from dpmic_dask.stats.limits import (
    check_mice_grid,
    check_micr_grid,
    micr_grid_cost,
    pairs_per_block,
)

if TYPE_CHECKING:
    from dpmic_dask.release.request import ReleaseRequest


def grid_parameters(request: ReleaseRequest, n: int, eps_per_value: float | None = None):
    """``(B, c)``: the request's, or the defaults for ``n`` rows and ``eps`` per value
    (``request.eps / P`` unless given)."""
    mech = request.mechanism
    if eps_per_value is None:
        eps_per_value = request.eps / request.n_pairs
    default_B, default_c = mech.default_grid(n, eps_per_value)
    B = default_B if request.B is None else request.B
    c = default_c if request.c is None else request.c
    if mech.statistic.mergeable:
        B = int(B)
        check_micr_grid(B, c, min(request.n_pairs, block_size(request, B, c)),
                        request.split_every)
    else:
        check_mice_grid(B, c)
    return B, c


def public_rows(request: ReleaseRequest, rows: int) -> int:
    """The row count noise scales and defaults may depend on: ``rows`` itself
    (public when neighbours replace a row), or, after ``nulls="drop"``, the
    public ``min_rows`` -- refused, before any charge, when fewer rows are left
    (a refusal only the caller sees; docs/privacy.md, "Dropping rows with nulls")."""
    if request.min_rows is None:
        return rows
    if rows < request.min_rows:
        raise InvalidDataError(
            "fewer rows than min_rows are left after dropping the rows with nulls "
            "(nothing was charged)")
    return request.min_rows


def check_plan(request: ReleaseRequest, n: int) -> tuple[int, int]:
    """Every data-independent check of releasing every pair of ``n`` rows, run
    before the charge: the grid for ``n`` (defaults from ``n`` and ``eps``), the
    count layout of every statistic at it, and every statistic's noise
    (calibrated at the number of values published). Returns ``(B, c)``."""
    if n < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    B, c = grid_parameters(request, n)
    if request.statistic.mergeable:
        request.layout(B, c)
        check_category_grids(request, B, c)
    for mechanism in (request.mechanism, *request.companions):
        planned = mechanism.calibrate(n=n, pairs=request.n_pairs, B=B, c=c)
        warn_noise_before(planned.ci95)  # public quantities only, before the charge
    return B, c


def block_size(request: ReleaseRequest, B: int, c: int) -> int:
    """Pairs counted together: all of them for count noise (their counts go to the
    driver), else as many as fit the request's public ``task_memory``."""
    if request.mechanism.acts_on == "counts":
        return request.n_pairs
    cells = micr_grid_cost(B, c).cells_per_pair
    return pairs_per_block(cells, request.split_every, request.task_memory)


def value_report(request: ReleaseRequest, plan, charge, selection: Selection, released: int,
                 candidates: int) -> PrivacyReport:
    """The report of a release of one statistic's values (``plan`` its noise)."""
    return PrivacyReport(
        mechanism=plan.mechanism, statistic=plan.statistic, epsilon=plan.cost.epsilon,
        delta=plan.cost.delta, rho=plan.cost.rho, noise_scale=plan.noise_scale, ci95=plan.ci95,
        sensitivity=plan.sensitivity, n=plan.n, B=plan.B, c=plan.c, charge_id=charge.charge_id,
        seeded=not active_sampler().secure, statement=privacy_statement(plan.cost, released),
        released=released, candidates=candidates, selection=selection.description)


def _checked(counted, request: ReleaseRequest, start: float, rows: int | None = None):
    """Refuse too few rows, a row count other than the one the release was planned
    for, or unexpected missing values (before any charge)."""
    if request.min_rows is None:
        log.info("counted %d rows of %d columns in %.2f s", counted.rows,
                 len(request.columns), time.perf_counter() - start)
    else:  # the rows kept after dropping nulls are not public: not logged
        log.info("counted %d columns in %.2f s", len(request.columns),
                 time.perf_counter() - start)
    if counted.rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    if rows is not None and counted.rows != rows:
        raise InvalidDataError("the number of rows changed between two passes over the data; "
                               "release from data that does not change (nothing was charged)")
    if request.fill is None and counted.missing.any():
        names = [c for c, m in zip(request.columns, counted.missing) if m]
        raise MissingValuesError(
            f"column(s) {names} contain missing values; pass nulls='fill' with public "
            "fill values (nothing was charged)")
    return counted


def _count(frame, backend, request: ReleaseRequest, layout, rows, progress):
    """All pairs' exact counts (kept where the backend keeps them)."""
    spec = CountSpec(request.columns, request.bounds, request.fill, layout)
    start = time.perf_counter()
    agg = backend.count(frame, spec, split_every=request.split_every, progress=progress,
                        rows=rows, task_memory=request.task_memory)
    return _checked(agg, request, start, rows)


def _evaluate(frame, backend, request: ReleaseRequest, layout, rows, B, c, fn, progress):
    """``fn`` of every pair's exact counts, counted in blocks sized from
    ``request.task_memory``; only per-pair values come back."""
    spec = CountSpec(request.columns, request.bounds, request.fill, layout)
    start = time.perf_counter()
    block = block_size(request, B, c)
    log.info("counting %d pairs in blocks of up to %d", request.n_pairs, block)
    evaluation = backend.evaluate(frame, spec, fn, pairs_per_block=block,
                                  split_every=request.split_every, progress=progress,
                                  rows=rows, task_memory=request.task_memory)
    return _checked(evaluation, request, start, rows)


def release_pairs(frame, request: ReleaseRequest, *, ledger=None, dataset=None, progress=None,
                  selection: Selection | None = None) -> PairwiseResult:
    """Run a checked request: precheck, count, charge once, noise once."""
    selection = selection or AllPairs()
    if selection.cost is not None:
        raise InvalidParameterError(
            "selections that cost privacy budget are not supported by this release path")
    backend = backend_for(frame)
    mech, statistic = request.mechanism, request.statistic
    log.info("validated: %d columns, %d pairs, %s, eps=%g", len(request.columns),
             request.n_pairs, mech.label, request.eps)
    precheck_budget(ledger, dataset, request.cost)
    n_rows = backend.row_count(frame, request.columns)
    B, c = check_plan(request, public_rows(request, n_rows))
    layout = request.layout(B, c)
    if request.companions:
        statistics = (statistic, *(m.statistic for m in request.companions))
        value_of = partial(values_of, statistics=statistics, layout=layout)
    else:
        value_of = partial(statistic.value, layout=layout)
    value_of = pair_function(request, layout, value_of)
    if mech.acts_on == "counts":
        counted = _count(frame, backend, request, layout, n_rows, progress)
    else:
        counted = _evaluate(frame, backend, request, layout, n_rows, B, c, value_of, progress)
    n_public = public_rows(request, counted.rows)
    warn_if_delta_large(request.delta, n_public)
    chosen = selection.select(request.n_pairs)
    plan = mech.calibrate(n=n_public, pairs=len(chosen), B=B, c=c)
    description = request.label or "pairwise"
    if mech.acts_on == "counts":
        counts = counted.counts()[list(chosen)]
        charge = charge_budget(mech.cost, ledger, dataset, description=description,
                               mechanism=mech.label, columns=request.columns)
        noisy = np.stack([mech.randomise(cell_counts, plan) for cell_counts in counts])
        with after_charge(charge):  # the statistic of the noisy counts, on the cluster
            values = backend.map_counts(noisy, value_of)
    else:
        exact = counted.values[list(chosen)]
        labels = "+".join(m.label for m in (mech, *request.companions))
        plans = [m.calibrate(n=n_public, pairs=len(chosen), B=B, c=c)
                 for m in request.companions]
        charge = charge_budget(request.cost, ledger, dataset, description=description,
                               mechanism=labels, columns=request.columns)
        if request.companions:
            values = mech.randomise(exact[:, 0], plan)
            companions = tuple(
                companion(m, exact[:, k + 1], len(chosen), plans[k])
                for k, m in enumerate(request.companions))
        else:
            values = mech.randomise(exact, plan)
    log.info("released %d values (%s)", len(chosen), mech.label)
    order = selection.order(values)  # post-processing of the released values
    chosen = tuple(chosen[i] for i in order)
    values = np.asarray(values)[order]
    if request.companions:
        companions = tuple(dataclasses.replace(
            part, values=tuple(part.values[i] for i in order)) for part in companions)
    pairs = [request.pairs[p] for p in chosen]
    report = value_report(request, plan, charge, selection, len(chosen), request.n_pairs)
    if request.companions:
        report = _with_parts(report, request, len(chosen))
    warn_noise_after(values, plan.ci95)  # post-processing of the released values
    return PairwiseResult(
        columns=request.columns,
        pairs=tuple((request.columns[i], request.columns[j]) for i, j in pairs),
        values=tuple(float(v) for v in values),
        privacy=report,
        companions=companions if request.companions else (),
    )


def values_of(counts, *, statistics, layout) -> tuple[float, ...]:
    """Every released statistic of one pair, from its counts in ``layout``."""
    return tuple(s.value(counts, layout) for s in statistics)


def check_category_grids(request: ReleaseRequest, B: int, c: int) -> None:
    """Refuse, before the charge, a pair whose categorical axis does not fit the
    grid family of ``(B, c)`` (too many categories for ``B``)."""
    if not request.categories:
        return
    from dpmic_dask.stats.grids import master_grid_family
    from dpmic_dask.stats.statistics.categorical import check_pair_grid

    axes = dict(request.categories)
    family = master_grid_family(B, c)
    names = request.columns
    for i, j in request.pairs:
        if names[i] in axes or names[j] in axes:
            check_pair_grid(axes.get(names[i]), axes.get(names[j]), family)


def pair_function(request: ReleaseRequest, layout, fn, statistics=None):
    """``fn`` (the statistics of a pair's counts), or, with categorical columns, the
    per-pair functions that give their pairs a categorical axis (MIC) and leave
    Kendall's tau undefined (NaN)."""
    if not request.categories:
        return fn
    from dpmic_dask.stats.statistics.categorical import PairValues

    if statistics is None:
        statistics = (request.statistic, *(m.statistic for m in request.companions))
    return PairValues(statistics, layout, dict(request.categories), len(statistics) > 1)


def companion(mechanism, exact, pairs: int, plan) -> Companion:
    """Noise of ``plan`` (calibrated before the charge) on a further statistic's
    exact values (after the charge). A value that is undefined (NaN: tau of a
    pair with a categorical axis) gets noise like every other and is published
    as NaN (post-processing)."""
    exact = np.asarray(exact, dtype=np.float64)
    undefined = np.isnan(exact)
    values = mechanism.randomise(np.where(undefined, 0.0, exact), plan) if pairs else np.zeros(0)
    if pairs and undefined.any():
        values = np.where(undefined, np.nan, values)
    return Companion(statistic=mechanism.statistic.name, mechanism=mechanism.label,
                     values=tuple(float(v) for v in values), noise_scale=plan.noise_scale,
                     ci95=plan.ci95, sensitivity=plan.sensitivity, cost=mechanism.cost)


def _with_parts(report: PrivacyReport, request: ReleaseRequest, released: int) -> PrivacyReport:
    """The report of a release of several statistics: the total, and each share."""
    def share(m) -> str:
        return f"{m.statistic.name}: {m.cost.describe()} over {released} pairs ({m.label})"

    total = request.cost
    parts = "; ".join(share(m) for m in (request.mechanism, *request.companions))
    return dataclasses.replace(
        report, epsilon=total.epsilon, delta=total.delta, rho=total.rho, parts=parts,
        release_cost=request.mechanism.cost,
        statement=privacy_statement(total, max(1, released),
                                    detail=f"all statistics together; {parts}"))
