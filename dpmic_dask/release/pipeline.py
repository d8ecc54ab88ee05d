"""The release pipeline: validate -> count -> charge -> noise -> optimise -> result.

:func:`run_pairwise` (behind ``frame.dpmic.pairwise``) and :func:`private_mic`
build one :class:`~dpmic_dask.release.request.ReleaseRequest`, then run the stages in
order. The mechanism object answers the release's privacy cost; the budget
precheck (before any data is read) and the one charge (after counting, before
any noise) both use it. Noise is drawn once; nothing returned can redraw it.

Where is epsilon split? In the mechanism's ``calibrate`` (``dpmic_dask.privacy.mechanisms``).
Where is noise drawn? In the mechanism's ``randomise``, called only here, after
:func:`charge_budget`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from contextlib import contextmanager
from functools import partial

import numpy as np

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import MIN_ROWS, check_pair
from dpmic_dask.errors import (
    BudgetExceededError,
    DPMICError,
    InvalidDataError,
    InvalidParameterError,
    LedgerError,
    MissingValuesError,
    PrivacyLeakWarning,
    ReleaseIncompleteError,
)
from dpmic_dask.privacy.accounting import (
    PrivacyCost,
    default_ledger,
    ledger_from_url,
    note_charge_possible,
    privacy_statement,
)
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.privacy.selection import AllPairs, Selection
from dpmic_dask.release.request import ReleaseRequest, pair_request, pairwise_request
from dpmic_dask.release.results import (
    Companion,
    PairwiseResult,
    PrivacyReport,
    Release,
    warn_noise_after,
    warn_noise_before,
)
from dpmic_dask.stats.counting import CountSpec, pair_counts
from dpmic_dask.stats.limits import (
    DEFAULT_SPLIT_EVERY,
    DEFAULT_TASK_MEMORY,
    check_mice_grid,
    check_micr_grid,
    micr_grid_cost,
    pairs_per_block,
)

log = logging.getLogger("dpmic_dask")
DEFAULT_DATASET = "default"


def session_ledger():
    """The in-process default ledger used when no ``ledger=`` is given.

    It is *uncapped*: it accepts every dataset and records every charge without
    limiting anything. Pass a capped :class:`~dpmic_dask.InMemoryLedger` or a
    persistent :class:`~dpmic_dask.SQLLedger` to enforce a budget, or make one the
    default for a block with :func:`dpmic_dask.privacy.accounting.using_ledger`.
    """
    return default_ledger()


def check_ledger(ledger) -> None:
    """``None``, a ledger URL or a ledger (an object with ``check`` and ``charge``);
    anything else is refused with its type only, before any data is read."""
    if isinstance(ledger, str):
        ledger_from_url(ledger)
        return
    if ledger is None or all(callable(getattr(ledger, m, None)) for m in ("check", "charge")):
        return
    raise InvalidParameterError(
        "ledger must be a ledger (dpmic_dask.SQLLedger, dpmic_dask.InMemoryLedger, ...), a "
        f"ledger URL or None, not a {type(ledger).__name__}")


def _ledger(ledger):
    """``ledger``, or the default (the precheck comes through here before any read)."""
    check_ledger(ledger)
    if isinstance(ledger, str):
        return ledger_from_url(ledger)
    return default_ledger() if ledger is None else ledger


def precheck_budget(ledger, dataset, cost: PrivacyCost, privacy_unit=None) -> None:
    """Before any data is read: refuse what the charge would refuse (an unknown
    dataset, a ledger that cannot be reached, a budget of the wrong kind or one too
    small, a budget for another privacy unit: ``privacy_unit`` is the release's,
    ``None`` for one row). Not binding: the atomic charge after counting is what
    counts."""
    from dpmic_dask.release.units import check_ledger_unit

    check_ledger_unit(ledger, dataset, privacy_unit)
    if cost.approx_delta and not getattr(_ledger(ledger), "tracks_approx_parts", False):
        raise LedgerError(
            "this ledger does not keep the bad-event deltas of approximate parts (categories "
            "chosen from the values that occur), so it cannot pay for one; use an "
            "in-memory, SQLite or PostgreSQL ledger (nothing was read or charged)")
    try:
        _ledger(ledger).check(dataset or DEFAULT_DATASET, cost)
    except BudgetExceededError as exc:
        message = str(exc)
    else:
        return
    raise BudgetExceededError(f"{message}; no data was read")


def charge_budget(cost: PrivacyCost, ledger, dataset, *, description: str, mechanism: str,
                  columns=()):
    """The one budget charge of a release; raises before any noise if over budget."""
    note_charge_possible()  # an interruption from here on may follow the charge
    charge = _ledger(ledger).charge(dataset or DEFAULT_DATASET, cost, description=description,
                                    mechanism=mechanism, columns=tuple(columns))
    log.info("charged %s to dataset %r (charge %s)", mechanism, dataset or DEFAULT_DATASET,
             charge.charge_id)
    return charge


def warn_if_delta_large(delta: float, n: int) -> None:
    """``delta`` at or above ``1 / N`` allows releasing a random row in the clear."""
    if delta > 0 and delta * n >= 1:
        warnings.warn(
            f"delta = {delta:g} is at least 1/N for N = {n} rows: an (eps, delta) guarantee "
            "this weak allows publishing a random row in the clear; use delta well below 1/N",
            PrivacyLeakWarning, stacklevel=4)


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


@contextmanager
def after_charge(charge):
    """Around what runs after the charge of a release of several passes: a failure
    no check could foresee (the data changed or became unreadable between the
    passes) says that the budget was charged, and which charge."""
    try:
        yield
    except DPMICError as exc:
        reason = str(exc).replace(" (nothing was charged)", "").replace(
            "; nothing was charged", "")
        raise ReleaseIncompleteError(
            f"the budget was charged (charge {charge.charge_id}) but the release could not be "
            f"completed: {reason}. A step after the charge failed (the data changed or became "
            "unreadable between the passes of this release, or the cluster failed); nothing "
            "was released, and a new attempt is a new release that is charged again") from None


def block_size(request: ReleaseRequest, B: int, c: int) -> int:
    """Pairs counted together: all of them for count noise (their counts go to the
    driver), else as many as fit the request's public ``task_memory``."""
    if request.mechanism.acts_on == "counts":
        return request.n_pairs
    cells = micr_grid_cost(B, c).cells_per_pair
    return pairs_per_block(cells, request.split_every, request.task_memory)


def _report(request: ReleaseRequest, plan, charge, selection: Selection, released: int,
            candidates: int) -> PrivacyReport:
    return PrivacyReport(
        mechanism=plan.mechanism, statistic=plan.statistic, epsilon=plan.cost.epsilon,
        delta=plan.cost.delta, rho=plan.cost.rho, noise_scale=plan.noise_scale, ci95=plan.ci95,
        sensitivity=plan.sensitivity, n=plan.n, B=plan.B, c=plan.c, charge_id=charge.charge_id,
        seeded=not active_sampler().secure, statement=privacy_statement(plan.cost, released),
        released=released, candidates=candidates, selection=selection.description)


# ------------------------------------------------------------------------ pairwise


def run_pairwise(frame, eps, *, bounds, columns=None, delta=0.0, mechanism="auto", B=None,
                 c=None, nulls="raise", fill=None, ledger=None, dataset=None,
                 split_every: int = DEFAULT_SPLIT_EVERY, progress=None,
                 label: str | None = None,
                 task_memory: int = DEFAULT_TASK_MEMORY) -> PairwiseResult:
    """Private value of every pair of the selected columns: count, charge once, noise once.

    See :meth:`dpmic_dask.release.accessor.DPMICAccessor.pairwise` for the parameters.
    """
    backend = backend_for(frame)
    request = pairwise_request(backend.schema(frame), eps=eps, bounds=bounds, columns=columns,
                               delta=delta, mechanism=mechanism, B=B, c=c, nulls=nulls,
                               fill=fill, split_every=split_every, label=label,
                               task_memory=task_memory)
    return release_pairs(frame, request, ledger=ledger, dataset=dataset, progress=progress)


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
    report = _report(request, plan, charge, selection, len(chosen), request.n_pairs)
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


# ------------------------------------------------------------------------ one pair


def private_mic(x, y, *, eps, x_bounds, y_bounds, mechanism="auto", delta=0.0, B=None, c=None,
                ledger=None, dataset=None, units=None, privacy_unit="unit",
                max_rows_per_unit=None) -> Release:
    """Differentially private MIC of one pair of in-memory columns.

    Parameters
    ----------
    x, y : array-like of real numbers, same length n (public), no NaN
    eps : float > 0
        Total privacy budget of this release.
    x_bounds, y_bounds : (lo, hi)
        Public bounds, chosen without looking at the data; values outside are clamped.
    mechanism : {"auto", "micr-lap", "micr-gauss", "mice-lap", "micr-geom"}
        ``auto`` is ``micr-lap`` for ``delta == 0`` and ``micr-gauss`` (zCDP, less
        noise at the same zCDP charge) for ``delta > 0``.
    delta : float in [0, 1)
    B, c : int, optional
        Grid parameters; defaults come from ``(n, eps)`` only (``dpmic_dask.stats.defaults``).
    ledger : ledger, optional
        Where the charge is recorded (default: the in-process session ledger).
    dataset : str, optional
        Dataset id the charge is recorded under.
    units, privacy_unit, max_rows_per_unit : optional
        Privacy per unit: ``units[i]`` identifies the unit (named ``privacy_unit``,
        e.g. ``"patient"``) that owns row ``i``; at most ``max_rows_per_unit`` rows
        per unit are used and neighbours differ by all rows of one unit
        (docs/privacy.md, section 12). Default: one row.

    Returns
    -------
    Release
        The value is computed, charged and noised exactly once.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 2000)
    >>> release = private_mic(x, x ** 2, eps=1.0, x_bounds=(0, 1), y_bounds=(0, 1))
    >>> release.mechanism, release.n, release.B
    ('micr-lap', 2000, 98)
    >>> release.value > 0.9  # a noiseless relationship, noise of scale ~0.01
    True
    """
    if units is not None or max_rows_per_unit is not None:  # per unit (docs/privacy.md, 12)
        from dpmic_dask.release.units import private_mic_per_unit

        return private_mic_per_unit(x, y, units, eps=eps, x_bounds=x_bounds,
                                    y_bounds=y_bounds, privacy_unit=privacy_unit,
                                    max_rows_per_unit=max_rows_per_unit, mechanism=mechanism,
                                    delta=delta, B=B, c=c, ledger=ledger, dataset=dataset)
    request = pair_request(eps=eps, x_bounds=x_bounds, y_bounds=y_bounds, mechanism=mechanism,
                           delta=delta, B=B, c=c)
    mech, statistic = request.mechanism, request.statistic
    precheck_budget(ledger, dataset, mech.cost)
    xa, ya = check_pair(x, y)
    n = xa.shape[0]
    if not statistic.mergeable and n < 6:
        raise InvalidDataError(f"mechanism {mech.label!r} needs at least 6 rows")
    warn_if_delta_large(request.delta, n)
    B, c = grid_parameters(request, n)
    plan = mech.calibrate(n=n, pairs=1, B=B, c=c)
    description = f"private_mic {mech.label}"
    if statistic.mergeable:
        layout = statistic.layout(B, c)
        counts = pair_counts(xa, ya, request.bounds[0], request.bounds[1], layout)
        if mech.acts_on == "counts":
            charge = charge_budget(mech.cost, ledger, dataset, description=description,
                                   mechanism=mech.label, columns=("x", "y"))
            value = statistic.value(mech.randomise(counts, plan), layout)
        else:
            exact = np.array([statistic.value(counts, layout)])
            charge = charge_budget(mech.cost, ledger, dataset, description=description,
                                   mechanism=mech.label, columns=("x", "y"))
            value = mech.randomise(exact, plan)[0]
    else:
        # Ties broken by secret per-row keys: the published MICe sensitivity holds
        # only for distinct values (docs/privacy.md, "MICe-Lap").
        keys = active_sampler().random_keys(n)
        exact = np.array([statistic.value_of_rows(xa, ya, B, c, keys)])
        charge = charge_budget(mech.cost, ledger, dataset, description=description,
                               mechanism=mech.label, columns=("x", "y"))
        value = mech.randomise(exact, plan)[0]
    return Release(value=float(value),
                   privacy=_report(request, plan, charge, AllPairs(), 1, 1))


# ------------------------------------------------------------------------ non-private


def run_pairwise_nonprivate(frame, *, bounds, B, c, columns=None, nulls="raise", fill=None,
                            split_every: int = DEFAULT_SPLIT_EVERY, progress=None,
                            task_memory: int = DEFAULT_TASK_MEMORY, categories=None):
    """Exact (NON-PRIVATE) MICr of every pair: a DataFrame ``x, y, micr, n, B, c``.
    ``categories`` (column -> :class:`~dpmic_dask.stats.categories.CategoryAxis`,
    columns already coded) gives those columns' pairs a categorical axis."""
    import pandas as pd

    backend = backend_for(frame)
    request = pairwise_request(backend.schema(frame), eps=1.0, bounds=bounds, columns=columns,
                               B=B, c=c, nulls=nulls, fill=fill, split_every=split_every,
                               mechanism="micr-lap", task_memory=task_memory)
    B, c = grid_parameters(request, MIN_ROWS)
    statistic = request.statistic
    layout = statistic.layout(B, c)
    if categories:
        request = dataclasses.replace(request, categories=tuple(categories.items()))
        check_category_grids(request, B, c)
    rows = backend.row_count(frame, request.columns)
    evaluation = _evaluate(frame, backend, request, layout, rows, B, c,
                           pair_function(request, layout, partial(statistic.value, layout=layout)),
                           progress)
    return pd.DataFrame({
        "x": [request.columns[i] for i, _ in request.pairs],
        "y": [request.columns[j] for _, j in request.pairs],
        "micr": evaluation.values,
        "n": evaluation.rows,
        "B": B,
        "c": c,
    })
