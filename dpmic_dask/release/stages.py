"""The stages of the values step: its checks before the charge and its passes.

Every data-independent check of releasing pairs' values, run before the one
charge at the public row count (:func:`check_plan`, :func:`check_selected_plan`:
grids, count layouts, noise), the passes over the data that count them
(:func:`count_pairs`, :func:`evaluate_pairs`, in blocks sized from the public
``task_memory``), and what the noise of further statistics and the report
need. :mod:`dpmic_dask.release.pipeline` runs them in order.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.checks import MIN_ROWS, refuse_missing
from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.categorygrids import category_B, check_category_grids
from dpmic_dask.release.report import (
    PrivacyReport,
    warn_count_noise_before,
    warn_noise_before,
    warn_selection_noise_before,
)
from dpmic_dask.release.results import Companion
from dpmic_dask.stats.countspec import CountSpec
from dpmic_dask.stats.defaults import noisy_grid_cap
from dpmic_dask.stats.limits import (
    check_mice_grid,
    check_micr_grid,
    micr_grid_cost,
    pairs_per_block,
)
from dpmic_dask.stats.statistics.categorical import PairValues
from dpmic_dask.stats.statistics.registry import union_layout

if TYPE_CHECKING:
    from dpmic_dask.privacy.selection import Selection, SelectionPlan
    from dpmic_dask.release.request import ReleaseRequest

log = logging.getLogger("dpmic_dask")

#: ``screen_B="auto"`` scores candidates on this grid (when ``B`` is larger), then
#: counts the chosen pairs again at ``B``: in ``benchmarks/selection.py`` it chose
#: the same pairs (top-10 precision 1.0 in 20 of 20 runs at n = 10**5 and 10**6)
#: 10x and 5.5x faster than scoring at ``B = 200``.
SCREEN_B_DEFAULT = 40


def grid_parameters(request: ReleaseRequest, n: int, eps_per_value: float | None = None,
                    noise=None):
    """``(B, c)``: the request's, or the defaults for ``n`` rows and ``eps`` per value
    (``request.eps / P`` unless given). ``noise``, ``(mechanism, values)`` of a
    private release, caps the default ``B`` where that mechanism's noise on each
    of ``values`` values is wide (:func:`~dpmic_dask.stats.defaults.noisy_grid_cap`;
    public quantities only); without it (exact values) no cap applies."""
    mech = request.mechanism
    if eps_per_value is None:
        eps_per_value = request.eps / request.n_pairs
    default_B, default_c = mech.default_grid(n, eps_per_value)
    uncapped = default_B
    if request.B is None and noise is not None:
        default_B = noisy_default_B(noise, n, default_B, default_c)
    B = default_B if request.B is None else request.B
    c = default_c if request.c is None else request.c
    if mech.statistic.mergeable:
        B = int(B)
        if request.c is None and request.companions:
            c = companion_c((request.statistic, *(m.statistic for m in request.companions)),
                            (B,), c)
        if request.B is None and request.categories and B < int(uncapped):
            # the cap for wide noise stops where the public category lists need more
            B = category_B(request, B, c, int(uncapped))
        check_micr_grid(B, c, min(request.n_pairs, block_size(request, B, c)),
                        request.split_every)
    else:
        check_mice_grid(B, c)
    return B, c



def companion_c(statistics, grids_B, c: int) -> int:
    """The default ``c``, or the largest below it whose grid families at every
    ``B`` of ``grids_B`` hold every statistic's grid (Kendall's tau needs an
    equipartition both refinements contain: none at ``c = 5`` below ``B = 20``,
    the defaults under about 200 rows; ``c = 1`` always has one). A function of
    public ``B`` and ``c`` only."""
    for smaller in range(c, 1, -1):
        try:
            for B in grids_B:
                union_layout(statistics, B, smaller)
        except InvalidParameterError:
            continue
        return smaller
    return 1


def noisy_default_B(noise, n: int, B: float, c: int) -> float:
    """``B``, or the lower cap for wide noise when ``noise = (mechanism, values)``
    puts noise on the values whose scale does not depend on the grid."""
    mechanism, values = noise
    if mechanism.grid_kind != "values":
        return B
    planned = mechanism.calibrate(n=n, pairs=max(1, values), B=B, c=c)
    cap = noisy_grid_cap(planned.ci95)
    return B if cap is None else min(B, cap)


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
    B, c = grid_parameters(request, n, noise=(request.mechanism, request.n_pairs))
    if request.statistic.mergeable:
        request.layout(B, c)
        check_category_grids(request, B, c)
    defined = defined_pairs(request, range(request.n_pairs))
    for mechanism in (request.mechanism, *request.companions):
        pairs = request.n_pairs if mechanism is request.mechanism else defined
        planned = mechanism.calibrate(n=n, pairs=pairs, B=B, c=c)
        warn_noise_before(planned.ci95)  # public quantities only, before the charge
        if planned.ci95 != planned.ci95:  # count noise (micr-geom): no ci95
            warn_count_noise_before(planned.noise_scale, n, B)
    return B, c



def check_selected_plan(request: ReleaseRequest, plan: SelectionPlan,
                        n: int) -> tuple[int, int, int]:
    """Every data-independent check of a select-then-release of ``n`` rows, run
    before the charge: the release grid for ``n``, the screening grid, the count
    layouts of every statistic at both, the selection's noise at the scores'
    sensitivity, and every released statistic's noise calibrated to the most
    pairs the rule can publish. Returns ``(B, c, screen_B)``."""
    if plan.selection.cost is None:
        B, c = check_plan(request, n)
        return B, c, B
    if n < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    release, selection = plan.release, plan.selection
    most = selection.most(request.n_pairs)
    B, c = grid_parameters(request, n, release.epsilon / most,  # type: ignore[attr-defined]
                           noise=(release, most))
    if plan.screen_B == "auto":
        screen = min(B, SCREEN_B_DEFAULT)
    else:
        screen = B if plan.screen_B is None else int(plan.screen_B)
    if request.c is None and plan.companions:  # the default c, where tau needs it
        c = companion_c((request.statistic, *(m.statistic for m in plan.companions)),
                        (screen, B), c)
    if plan.screen_B == "auto" and screen < B and request.categories:
        # the least screening grid from the default that holds every category list
        # (the release's own B does, or the refusal below says what it needs)
        screen = category_B(request, screen, c, B)
    if screen != B:
        check_micr_grid(screen, c, min(request.n_pairs, block_size(request, screen, c)),
                        request.split_every)
    for grid_B in {screen, B}:
        selection_layout(request, plan, grid_B, c)
        check_category_grids(request, grid_B, c)
    sensitivity = release.statistic.sensitivity(n, screen)  # type: ignore[attr-defined]
    selection.prepare(sensitivity)
    warn_selection_noise_before(selection.score_noise(request.n_pairs, sensitivity))
    for part in (release, *plan.companions):
        planned = part.calibrate(n=n, pairs=most, B=B, c=c)
        warn_noise_before(planned.ci95)  # at the most pairs the rule can publish
    return B, c, screen



def selection_layout(request: ReleaseRequest, plan: SelectionPlan, B: int, c: int):
    """The count layout holding every statistic the selection releases."""
    return union_layout((request.statistic, *(m.statistic for m in plan.companions)), B, c)



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



def checked_counts(counted, request: ReleaseRequest, start: float, rows: int | None = None):
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
    if request.fill is None:
        refuse_missing(request.columns, counted.missing)
    return counted



def count_pairs(frame, backend, request: ReleaseRequest, layout, rows, progress):
    """All pairs' exact counts (kept where the backend keeps them)."""
    spec = CountSpec(request.columns, request.bounds, request.fill, layout)
    start = time.perf_counter()
    agg = backend.count(frame, spec, split_every=request.split_every, progress=progress,
                        rows=rows, task_memory=request.task_memory)
    return checked_counts(agg, request, start, rows)



def evaluate_pairs(frame, backend, request: ReleaseRequest, layout, rows, B, c, fn, progress,
                   side=None):
    """``fn`` of every pair's exact counts, counted in blocks sized from
    ``request.task_memory``; only per-pair values come back. ``side``: a step
    that reads its counts off the same pass (``side.columns_for(layout)`` the
    columns whose counts on the joint refinement it takes, given to
    ``side.counted``)."""
    spec = CountSpec(request.columns, request.bounds, request.fill, layout)
    start = time.perf_counter()
    block = block_size(request, B, c)
    log.info("counting %d pairs in blocks of up to %d", request.n_pairs, block)
    wanted = () if side is None or not backend.counts_marginals(frame) else \
        side.columns_for(layout)
    more = {"marginals": tuple(request.columns.index(c) for c in wanted)} if wanted else {}
    evaluation = backend.evaluate(frame, spec, fn, pairs_per_block=block,
                                  split_every=request.split_every, progress=progress,
                                  rows=rows, task_memory=request.task_memory, **more)
    checked = checked_counts(evaluation, request, start, rows)
    if wanted and all(request.columns.index(c) in evaluation.marginals for c in wanted):
        side.counted(layout, {request.columns[k]: m for k, m in evaluation.marginals.items()})
    return checked



def values_of(counts, *, statistics, layout) -> tuple[float, ...]:
    """Every released statistic of one pair, from its counts in ``layout``."""
    return tuple(s.value(counts, layout) for s in statistics)



def pair_function(request: ReleaseRequest, layout, fn, statistics=None):
    """``fn`` (the statistics of a pair's counts), or, with categorical columns, the
    per-pair functions that give their pairs a categorical axis (MIC) and leave
    Kendall's tau undefined (NaN)."""
    if not request.categories:
        return fn

    if statistics is None:
        statistics = (request.statistic, *(m.statistic for m in request.companions))
    return PairValues(statistics, layout, dict(request.categories), len(statistics) > 1)



def companion(mechanism, exact, pairs: int, plan, undefined) -> Companion:
    """Noise of ``plan`` (calibrated before the charge) on a further statistic's
    exact values (after the charge). The ``undefined`` values (a public mask:
    tau of a pair with a categorical axis) are published as NaN, their noise
    discarded; any other exact value that is not a number (only data changed
    between two passes could make one) is noised as 0, never published raw."""
    exact = np.asarray(exact, dtype=np.float64)
    undefined = np.asarray(undefined, dtype=bool)
    exact = np.where(np.isnan(exact), 0.0, exact)
    values = mechanism.randomise(np.where(undefined, 0.0, exact), plan) if pairs else np.zeros(0)
    if pairs and undefined.any():
        values = np.where(undefined, np.nan, values)
    return Companion(statistic=mechanism.statistic.name, mechanism=mechanism.label,
                     values=tuple(float(v) for v in values), noise_scale=plan.noise_scale,
                     ci95=plan.ci95, sensitivity=plan.sensitivity, cost=mechanism.cost)



def undefined_pairs(request: ReleaseRequest, chosen) -> np.ndarray:
    """Which of the ``chosen`` pairs have a categorical column (public)."""
    categorical = {request.columns.index(name) for name, _ in request.categories}
    return np.array([bool(set(request.pairs[p]) & categorical) for p in chosen], dtype=bool)


def defined_pairs(request: ReleaseRequest, chosen) -> int:
    """How many of the ``chosen`` pairs (indices into ``request.pairs``) have no
    categorical column: those whose companion statistic (Kendall's tau) is
    defined. The others' are NaN whatever the data (a public fact of the lists),
    so a companion's share is split over these only (at least one)."""
    return max(1, int(np.count_nonzero(~undefined_pairs(request, chosen))))


def with_parts(report: PrivacyReport, request: ReleaseRequest, released: int,
               defined: int | None = None) -> PrivacyReport:
    """The report of a release of several statistics: the total, and each share
    (a companion's over the ``defined`` pairs whose value it has)."""
    def share(m, pairs) -> str:
        return f"{m.statistic.name}: {m.cost.describe()} over {pairs} pairs ({m.label})"

    total = request.cost
    defined = released if defined is None else defined
    parts = "; ".join([share(request.mechanism, released),
                       *(share(m, defined) for m in request.companions)])
    return dataclasses.replace(
        report, epsilon=total.epsilon, delta=total.delta, rho=total.rho, parts=parts,
        release_cost=request.mechanism.cost,
        statement=privacy_statement(total, max(1, released),
                                    detail=f"all statistics together; {parts}"))



def chosen_pairs_spec(request: ReleaseRequest, layout, pairs) -> CountSpec:
    """What to count for ``pairs`` (column index pairs of ``request``): only their
    columns are read and binned (20 chosen pairs of 1,000 columns read at most 40)."""
    used = sorted({i for pair in pairs for i in pair})
    at = {column: k for k, column in enumerate(used)}
    fill = None if request.fill is None else tuple(request.fill[i] for i in used)
    return CountSpec(tuple(request.columns[i] for i in used),
                     tuple(request.bounds[i] for i in used), fill, layout,
                     tuple((at[i], at[j]) for i, j in pairs))



def values_of_pairs(backend, frame, spec: CountSpec, request: ReleaseRequest, B, c, fn, rows,
                   progress) -> np.ndarray:
    """Exact values of the pairs in ``spec.pair_list`` (counted in blocks)."""
    block = block_size(request, B, c)
    evaluation = backend.evaluate(frame, spec, fn, pairs_per_block=block,
                                  split_every=request.split_every, progress=progress,
                                  rows=rows, task_memory=request.task_memory)
    return evaluation.values
