"""The release pipeline: validate -> count -> charge -> noise -> optimise -> result.

:func:`run_pairwise` (behind ``frame.dpmic.pairwise``) and :func:`private_mic`
build one :class:`~dpmic_dask.request.ReleaseRequest`, then run the stages in
order. The mechanism object answers the release's privacy cost; the budget
precheck (before any data is read) and the one charge (after counting, before
any noise) both use it. Noise is drawn once; nothing returned can redraw it.

Where is epsilon split? In the mechanism's ``calibrate`` (``dpmic_dask.mechanisms``).
Where is noise drawn? In the mechanism's ``randomise``, called only here, after
:func:`charge_budget`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np

from .accounting import PrivacyCost, default_ledger, privacy_statement
from .backends import backend_for
from .bounds import BoundsGrid
from .counting import CountSpec, pair_counts
from .defaults import default_parameters
from .errors import (
    BudgetExceededError,
    InvalidDataError,
    InvalidParameterError,
    MissingValuesError,
    PrivacyLeakWarning,
)
from .limits import (
    DEFAULT_SPLIT_EVERY,
    DEFAULT_TASK_MEMORY,
    check_mice_grid,
    check_micr_grid,
    micr_grid_cost,
    pairs_per_block,
)
from .mechanisms import check_statistics
from .noise import active_sampler
from .request import API_NAMES, ArgumentNames, ReleaseRequest, pair_request, pairwise_request
from .results import BoundsRelease, Companion, PairwiseResult, PrivacyReport, Release
from .selection import AllPairs, Selection, SelectionPlan, check_share, plan_selection
from .sensitivity import safe_down, safe_up
from .validation import MIN_ROWS, check_max_cells, check_pair

log = logging.getLogger("dpmic_dask")
DEFAULT_DATASET = "default"


def session_ledger():
    """The in-process default ledger used when no ``ledger=`` is given.

    It is *uncapped*: it accepts every dataset and records every charge without
    limiting anything. Pass a capped :class:`~dpmic_dask.InMemoryLedger` or a
    persistent :class:`~dpmic_dask.SQLLedger` to enforce a budget, or make one the
    default for a block with :func:`dpmic_dask.accounting.using_ledger`.
    """
    return default_ledger()


def _ledger(ledger):
    return default_ledger() if ledger is None else ledger


def precheck_budget(ledger, dataset, cost: PrivacyCost) -> None:
    """Before any data is read: refuse what the charge would refuse (an unknown
    dataset, a ledger that cannot be reached, a budget of the wrong kind or one too
    small). Not binding: the atomic charge after counting is what counts."""
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
    default_B, default_c = default_parameters(mech.label, n, eps_per_value)
    B = default_B if request.B is None else request.B
    c = default_c if request.c is None else request.c
    if mech.statistic.mergeable:
        B = int(B)
        check_micr_grid(B, c, min(request.n_pairs, block_size(request, B, c)),
                        request.split_every)
    else:
        check_mice_grid(B, c)
    return B, c


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

    See :meth:`dpmic_dask.accessor.DPMICAccessor.pairwise` for the parameters.
    """
    backend = backend_for(frame)
    request = pairwise_request(backend.schema(frame), eps=eps, bounds=bounds, columns=columns,
                               delta=delta, mechanism=mechanism, B=B, c=c, nulls=nulls,
                               fill=fill, split_every=split_every, label=label,
                               task_memory=task_memory)
    return release_pairs(frame, request, ledger=ledger, dataset=dataset, progress=progress)


def _checked(counted, request: ReleaseRequest, start: float):
    """Refuse too few rows or unexpected missing values (before any charge)."""
    log.info("counted %d rows of %d columns in %.2f s", counted.rows, len(request.columns),
             time.perf_counter() - start)
    if counted.rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
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
    return _checked(agg, request, start)


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
    return _checked(evaluation, request, start)


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
    if n_rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    B, c = grid_parameters(request, n_rows)
    layout = request.layout(B, c)
    if request.companions:
        statistics = (statistic, *(m.statistic for m in request.companions))
        value_of = partial(values_of, statistics=statistics, layout=layout)
    else:
        value_of = partial(statistic.value, layout=layout)
    if mech.acts_on == "counts":
        counted = _count(frame, backend, request, layout, n_rows, progress)
    else:
        counted = _evaluate(frame, backend, request, layout, n_rows, B, c, value_of, progress)
    warn_if_delta_large(request.delta, counted.rows)
    chosen = selection.select(request.n_pairs)
    plan = mech.calibrate(n=counted.rows, pairs=len(chosen), B=B, c=c)
    description = request.label or "pairwise"
    if mech.acts_on == "counts":
        counts = counted.counts()[list(chosen)]
        charge = charge_budget(mech.cost, ledger, dataset, description=description,
                               mechanism=mech.label, columns=request.columns)
        noisy = np.stack([mech.randomise(cell_counts, plan) for cell_counts in counts])
        values = backend.map_counts(noisy, value_of)
    else:
        exact = counted.values[list(chosen)]
        labels = "+".join(m.label for m in (mech, *request.companions))
        charge = charge_budget(request.cost, ledger, dataset, description=description,
                               mechanism=labels, columns=request.columns)
        if request.companions:
            values = mech.randomise(exact[:, 0], plan)
            companions = tuple(
                _companion(m, exact[:, k + 1], counted.rows, len(chosen), B, c)
                for k, m in enumerate(request.companions))
        else:
            values = mech.randomise(exact, plan)
    log.info("released %d values (%s)", len(chosen), mech.label)
    pairs = [request.pairs[p] for p in chosen]
    report = _report(request, plan, charge, selection, len(chosen), request.n_pairs)
    if request.companions:
        report = _with_parts(report, request, len(chosen))
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


def _companion(mechanism, exact, n: int, pairs: int, B, c) -> Companion:
    """Noise on a further statistic's exact values (after the charge)."""
    plan = mechanism.calibrate(n=n, pairs=max(1, pairs), B=B, c=c)
    values = mechanism.randomise(exact, plan) if pairs else np.zeros(0)
    return Companion(statistic=mechanism.statistic.name, mechanism=mechanism.label,
                     values=tuple(float(v) for v in values), noise_scale=plan.noise_scale,
                     ci95=plan.ci95, sensitivity=plan.sensitivity, cost=mechanism.cost)


def _with_parts(report: PrivacyReport, request: ReleaseRequest, released: int) -> PrivacyReport:
    """The report of a release of several statistics: the total, and each share."""
    def share(m) -> str:
        spent = (f"epsilon {m.cost.epsilon:.4g}" if m.cost.rho is None
                 else f"rho {m.cost.rho:.4g}")
        return f"{m.statistic.name}: {spent} over {released} pairs ({m.label})"

    total = request.cost
    parts = "; ".join(share(m) for m in (request.mechanism, *request.companions))
    return dataclasses.replace(
        report, epsilon=total.epsilon, delta=total.delta, rho=total.rho, parts=parts,
        release_cost=request.mechanism.cost,
        statement=privacy_statement(total, max(1, released),
                                    detail=f"all statistics together; {parts}"))


# ------------------------------------------------------------- selected pairs


#: ``screen_B="auto"`` scores candidates on this grid (when ``B`` is larger), then
#: counts the chosen pairs again at ``B``: in ``benchmarks/selection.py`` it chose
#: the same pairs (top-10 precision 1.0 in 20 of 20 runs at n = 10**5 and 10**6)
#: 10x and 5.5x faster than scoring at ``B = 200``.
SCREEN_B_DEFAULT = 40


def selection_request(schema, rule: str, *, eps, delta=0.0, share=0.5, k=None,
                      threshold=None, max_pairs=None, bounds, columns=None, B=None, c=None,
                      nulls="raise", fill=None, split_every=DEFAULT_SPLIT_EVERY, label=None,
                      task_memory=DEFAULT_TASK_MEMORY, screen_B="auto", statistics=("mic",),
                      names: ArgumentNames = API_NAMES):
    """Check a select-then-release request against ``schema`` (nothing read, nothing
    charged): the checked columns and grid, and the budget split
    (:func:`~dpmic_dask.selection.plan_selection`). Messages name the arguments as
    ``names`` spells them."""
    request = pairwise_request(schema, eps=eps, bounds=bounds, columns=columns, delta=delta,
                               mechanism="micr-lap" if delta == 0 else "micr-gauss", B=B, c=c,
                               nulls=nulls, fill=fill, split_every=split_every, label=label,
                               task_memory=task_memory, names=names)
    if rule == "top-k":
        k = check_count(k, names.k)
    else:
        threshold = check_threshold(threshold, names.threshold)
        max_pairs = check_count(max_pairs, names.max_pairs)
    if screen_B is not None and screen_B != "auto":
        screen_B = check_max_cells(screen_B, names.screen_B)
    plan = plan_selection(rule, eps=request.eps, delta=request.delta,
                          share=check_share(share, names.share), statistic=request.statistic,
                          k=k, threshold=threshold, max_pairs=max_pairs, screen_B=screen_B,
                          statistics=check_statistics(statistics))
    return request, plan


def check_count(value, name: str) -> int:
    """A positive integer argument (``k``, ``max_pairs``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1")
    return int(value)


def check_threshold(value, name: str = "threshold") -> float:
    """A public threshold on MICr, in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidParameterError(f"{name} must be a number in [0, 1]")
    return float(value)


def release_selected(frame, request: ReleaseRequest, plan: SelectionPlan, *, ledger=None,
                     dataset=None, progress=None) -> PairwiseResult:
    """Choose pairs privately, then release the chosen pairs' values with fresh noise.

    One precheck before any data is read; every pair's exact value computed on
    the cluster (at ``plan.screen_B`` when given, a smaller grid for speed -- the MICr
    sensitivity does not depend on ``B``); one charge of ``plan.total``; the
    selection's noise; when screening, the chosen pairs counted again at ``B``;
    the release's noise. Nothing is drawn before the charge.
    """
    backend = backend_for(frame)
    release, selection = plan.release, plan.selection
    statistic = release.statistic  # type: ignore[attr-defined]
    log.info("validated: %d columns, %d candidate pairs, %s", len(request.columns),
             request.n_pairs, selection.description)
    precheck_budget(ledger, dataset, plan.total)
    n_rows = backend.row_count(frame, request.columns)
    if n_rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    most = getattr(selection, "k", None) or getattr(selection, "max_pairs", 1)
    B, c = grid_parameters(request, n_rows, release.epsilon / most)  # type: ignore[attr-defined]
    if plan.screen_B == "auto":
        screen = min(B, SCREEN_B_DEFAULT)
    else:
        screen = B if plan.screen_B is None else int(plan.screen_B)
    if screen != B:
        check_micr_grid(screen, c, min(request.n_pairs, block_size(request, screen, c)),
                        request.split_every)
    statistics = (statistic, *(m.statistic for m in plan.companions))

    def layout_and_values(grid_B):
        if plan.companions:
            layout = plan.companions[0].statistic.layout(grid_B, c)
            return layout, partial(values_of, statistics=statistics, layout=layout)
        layout = statistic.layout(grid_B, c)
        return layout, partial(statistic.value, layout=layout)

    layout, fn = layout_and_values(screen)
    scores = _evaluate(frame, backend, request, layout, n_rows, screen, c, fn, progress)
    warn_if_delta_large(request.delta, scores.rows)
    sensitivity = statistic.sensitivity(scores.rows, screen)
    labels = "+".join(m.label for m in (release, *plan.companions))
    charge = charge_budget(
        plan.total, ledger, dataset,
        description=f"{request.label or 'selected pairs'} ({plan.parts()})",
        mechanism=f"{type(selection).__name__}+{labels}", columns=request.columns)
    mic_scores = scores.values[:, 0] if plan.companions else scores.values
    chosen = selection.select(request.n_pairs, mic_scores, sensitivity)
    log.info("selected %d of %d pairs", len(chosen), request.n_pairs)
    if chosen and screen != B:
        layout, fn = layout_and_values(B)
        spec = CountSpec(request.columns, request.bounds, request.fill, layout,
                         tuple(request.pairs[p] for p in chosen))
        exact = _values_of_pairs(backend, frame, spec, request, B, c, fn, n_rows, progress)
    else:
        exact = scores.values[list(chosen)]
    noise = release.calibrate(n=scores.rows, pairs=max(1, len(chosen)), B=B, c=c)  # type: ignore[attr-defined]
    main = exact[:, 0] if plan.companions else exact
    values = release.randomise(main, noise) if chosen else np.zeros(0)  # type: ignore[attr-defined]
    companions = tuple(_companion(m, exact[:, k + 1] if chosen else np.zeros(0), scores.rows,
                                  len(chosen), B, c)
                       for k, m in enumerate(plan.companions))
    pairs = [request.pairs[p] for p in chosen]
    report = PrivacyReport(
        mechanism=noise.mechanism, statistic=noise.statistic, epsilon=plan.total.epsilon,
        delta=plan.total.delta, rho=plan.total.rho, noise_scale=noise.noise_scale,
        ci95=noise.ci95, sensitivity=noise.sensitivity, n=noise.n, B=B, c=c,
        charge_id=charge.charge_id, seeded=not active_sampler().secure,
        statement=privacy_statement(plan.total, max(1, len(chosen)),
                                    detail="selection and release together"),
        released=len(chosen), candidates=request.n_pairs, selection=selection.description,
        parts=plan.parts(), release_cost=release.cost)  # type: ignore[attr-defined]
    return PairwiseResult(
        columns=request.columns,
        pairs=tuple((request.columns[i], request.columns[j]) for i, j in pairs),
        values=tuple(float(v) for v in values),
        privacy=report,
        companions=companions,
    )


def _values_of_pairs(backend, frame, spec: CountSpec, request: ReleaseRequest, B, c, fn, rows,
                   progress) -> np.ndarray:
    """Exact values of the pairs in ``spec.pair_list`` (counted in blocks)."""
    block = block_size(request, B, c)
    evaluation = backend.evaluate(frame, spec, fn, pairs_per_block=block,
                                  split_every=request.split_every, progress=progress,
                                  rows=rows, task_memory=request.task_memory)
    return evaluation.values


# ------------------------------------------------------------------------ one pair


def private_mic(x, y, *, eps, x_bounds, y_bounds, mechanism="auto", delta=0.0, B=None, c=None,
                ledger=None, dataset=None) -> Release:
    """Differentially private MIC of one pair of in-memory columns.

    Parameters
    ----------
    x, y : array-like of real numbers, same length n (public), no NaN
    eps : float > 0
        Total privacy budget of this release.
    x_bounds, y_bounds : (lo, hi)
        Public bounds, chosen without looking at the data; values outside are clamped.
    mechanism : {"auto", "micr-lap", "micr-gauss", "mice-lap", "micr-geom"}
        ``auto`` is ``micr-lap`` for ``delta == 0``, otherwise the one of ``micr-lap``
        and ``micr-gauss`` with less noise.
    delta : float in [0, 1)
    B, c : int, optional
        Grid parameters; defaults come from ``(n, eps)`` only (``dpmic_dask.defaults``).
    ledger : ledger, optional
        Where the charge is recorded (default: the in-process session ledger).
    dataset : str, optional
        Dataset id the charge is recorded under.

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
                            task_memory: int = DEFAULT_TASK_MEMORY):
    """Exact (NON-PRIVATE) MICr of every pair: a DataFrame ``x, y, micr, n, B, c``."""
    import pandas as pd

    backend = backend_for(frame)
    request = pairwise_request(backend.schema(frame), eps=1.0, bounds=bounds, columns=columns,
                               B=B, c=c, nulls=nulls, fill=fill, split_every=split_every,
                               mechanism="micr-lap", task_memory=task_memory)
    B, c = grid_parameters(request, MIN_ROWS)
    statistic = request.statistic
    layout = statistic.layout(B, c)
    rows = backend.row_count(frame, request.columns)
    evaluation = _evaluate(frame, backend, request, layout, rows, B, c,
                           partial(statistic.value, layout=layout), progress)
    return pd.DataFrame({
        "x": [request.columns[i] for i, _ in request.pairs],
        "y": [request.columns[j] for _, j in request.pairs],
        "micr": evaluation.values,
        "n": evaluation.rows,
        "B": B,
        "c": c,
    })


# ------------------------------------------------------------------ private bounds

#: Default share of ``eps`` spent on private bounds inside a release.
DEFAULT_BOUNDS_SHARE = 0.1


def _bounds_partition(frame, *, columns, grid, fill):
    """One partition's exact histograms, row count and missing-value flags."""
    from .bounds import column_histograms
    from .counting import column_values

    values, missing = [], np.zeros(len(columns), dtype=bool)
    for k, name in enumerate(columns):
        v = column_values(frame, name)
        nan = np.isnan(v)
        if nan.any():
            missing[k] = True
            v = np.where(nan, fill[k], v) if fill is not None else v[~nan]
        values.append(v)
    return column_histograms(values, grid), len(frame), missing


def _add_histograms(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] | b[2]


def noisy_histograms(counts, eps_column: float):
    """Every column's histogram with exact discrete Laplace noise of scale
    ``2 / eps_column`` on each count (replacing one row moves one count down and
    one up: L1 sensitivity 2 per column). Call only after the charge."""
    from .mechanisms.base import check_noise_units

    scale = safe_up(2.0 / eps_column)
    check_noise_units(scale, "histogram")
    sampler = active_sampler()
    noisy = [row.astype(np.float64) + sampler.discrete_laplace(scale, row.size).astype(np.float64)
             for row in counts]
    return noisy, scale


def _noisy_bounds(counts, grid, eps_column: float, coverage: float):
    """Noisy histograms, then the bounds read off them (post-processing)."""
    from .bounds import bounds_from_noisy

    noisy, scale = noisy_histograms(counts, eps_column)
    return [bounds_from_noisy(row, grid, coverage, scale) for row in noisy], scale


def private_bounds(frame, eps, *, columns, coverage=0.99, domain=None, nulls="raise",
                   fill=None, ledger=None, dataset=None, split_every=DEFAULT_SPLIT_EVERY,
                   progress=None, label=None) -> BoundsRelease:
    """Estimate public-to-be bounds of ``columns`` with ``eps`` (pure DP), one charge.

    See :mod:`dpmic_dask.bounds` for the mechanism; ``docs/privacy.md`` for the proof.
    """
    backend = backend_for(frame)
    plan = _bounds_plan(backend.schema(frame), eps, columns, coverage, domain, nulls, fill)
    precheck_budget(ledger, dataset, PrivacyCost(plan.eps))
    counts, rows = _bounds_counts(frame, backend, plan, split_every, progress)
    charge = charge_budget(PrivacyCost(plan.eps), ledger, dataset,
                           description=label or "private bounds", mechanism="bounds-hist",
                           columns=plan.columns)
    return _bounds_release(counts, rows, plan, charge.charge_id)


@dataclass(frozen=True)
class _BoundsPlan:
    columns: tuple
    eps: float
    coverage: float
    grid: BoundsGrid
    fill: tuple | None


def _bounds_plan(schema, eps, columns, coverage, domain, nulls, fill) -> _BoundsPlan:
    from .accounting import check_epsilon
    from .bounds import BoundsGrid, check_coverage, check_domain
    from .validation import check_frame_request

    eps = check_epsilon(eps)
    if isinstance(columns, str) or not columns:
        raise InvalidParameterError("columns must name the columns to estimate bounds for")
    names = list(columns)
    grid = BoundsGrid(check_domain(domain))
    # the request checks (names, numeric types, nulls/fill) with placeholder bounds
    placeholder = {name: (-1.0, 1.0) for name in names}
    if fill is not None and grid.domain is None:
        placeholder = {name: (-abs(float(fill.get(name, 0.0))) - 1.0,
                              abs(float(fill.get(name, 0.0))) + 1.0) for name in names}
    if grid.domain is not None:
        placeholder = {name: grid.domain for name in names}
    checked_columns, _, fills = check_frame_request(schema, bounds=placeholder, columns=names,
                                                    nulls=nulls, fill=fill, min_columns=1)
    return _BoundsPlan(tuple(checked_columns), eps, check_coverage(coverage), grid, fills)


def _bounds_counts(frame, backend, plan: _BoundsPlan, split_every, progress):
    counts, rows, missing = backend.reduce(
        frame, plan.columns,
        partial(_bounds_partition, columns=plan.columns, grid=plan.grid, fill=plan.fill),
        _add_histograms, split_every=split_every, progress=progress)
    if plan.fill is None and missing.any():
        names = [c for c, m in zip(plan.columns, missing) if m]
        raise MissingValuesError(
            f"column(s) {names} contain missing values; pass nulls='fill' with public "
            "fill values (nothing was charged)")
    if rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    return counts, int(rows)


def _bounds_release(counts, rows, plan: _BoundsPlan, charge_id: str) -> BoundsRelease:
    eps_column = safe_down(plan.eps / len(plan.columns))
    found, scale = _noisy_bounds(counts, plan.grid, eps_column, plan.coverage)
    fallback = plan.grid.domain or (-1.0, 1.0)
    unresolved = tuple(c for c, b in zip(plan.columns, found) if b is None)
    if unresolved:
        warnings.warn(f"no private bounds could be found for column(s) {list(unresolved)} "
                      f"at this budget and row count; they fall back to {fallback}",
                      UserWarning, stacklevel=3)
    bounds = {c: (b if b is not None else fallback) for c, b in zip(plan.columns, found)}
    return BoundsRelease(bounds=bounds, epsilon=plan.eps, epsilon_per_column=eps_column,
                         coverage=plan.coverage, noise_scale=scale, rows=rows,
                         domain=plan.grid.domain, unresolved=unresolved, charge_id=charge_id,
                         seeded=not active_sampler().secure)


def run_with_private_bounds(frame, eps, *, bounds, columns=None, delta=0.0, bounds_share=None,
                            coverage=0.99, domain=None, mechanism="auto", nulls="raise",
                            fill=None, ledger=None, dataset=None, progress=None, label=None,
                            select: dict | None = None, **release) -> PairwiseResult:
    """``pairwise`` where some bounds are ``"private"``: one charge covers the bounds
    (``bounds_share`` of ``eps``, pure DP) and the release (the rest; Gaussian
    with ``delta > 0``). Order: precheck, the bounds' histograms (one pass),
    the charge, the bounds' noise, then the release's counting and noise.
    ``select`` (the arguments of :func:`selection_request` after ``rule``, with
    ``rule``) makes the release a private selection (``top_pairs``,
    ``pairs_above``) instead of every pair."""
    import dataclasses as dc

    from .accounting import PrepaidLedger, check_epsilon, eps_from_rho, rho_from_eps_delta

    eps = check_epsilon(eps)
    share = check_share(DEFAULT_BOUNDS_SHARE if bounds_share is None else bounds_share,
                        "bounds_share")
    if isinstance(bounds, str) and bounds != "private":
        raise InvalidParameterError('bounds must be a dict of (lo, hi) or "private"')
    if isinstance(bounds, str) and not columns:
        raise InvalidParameterError('bounds="private" needs columns=[...]')
    spec = {name: "private" for name in columns} if isinstance(bounds, str) else dict(bounds)
    private = [c for c, b in spec.items() if isinstance(b, str)]
    if any(b != "private" for b in spec.values() if isinstance(b, str)):
        raise InvalidParameterError('a column\'s bounds must be (lo, hi) or "private"')
    backend = backend_for(frame)
    plan = _bounds_plan(backend.schema(frame), safe_down(share * eps), private, coverage,
                        domain, nulls, {c: fill[c] for c in private if c in fill}
                        if fill else None)
    # the release's part, and the whole
    if delta == 0:
        total = PrivacyCost(eps)
        part = PrivacyCost(safe_down(eps - plan.eps))
        release_eps, release_mechanism = part.epsilon, mechanism
    else:
        if mechanism not in ("auto", "micr-gauss"):
            raise InvalidParameterError("with private bounds and delta > 0 the release is "
                                        "micr-gauss (mechanism='auto' or 'micr-gauss')")
        rho = rho_from_eps_delta(eps, delta)
        rest = safe_down(rho - plan.eps ** 2 / 2.0)
        if not rest > 0:
            raise InvalidParameterError("bounds_share leaves no budget for the release")
        release_eps = eps_from_rho(rest, delta)
        while rho_from_eps_delta(release_eps, delta) > rest:
            release_eps = safe_down(release_eps)
        total = PrivacyCost(eps, delta, rho)
        part = PrivacyCost(release_eps, delta, rest)
        release_mechanism = "micr-gauss"
    # private columns are checked against a wide placeholder (fill values included);
    # the released bounds replace it before anything is counted
    placeholder = {c: (spec[c] if c not in private else (plan.grid.domain or (-1e300, 1e300)))
                   for c in spec}
    selection_plan = None
    if select is None:
        request = pairwise_request(backend.schema(frame), eps=release_eps, bounds=placeholder,
                                   columns=columns or list(spec), delta=delta,
                                   mechanism=release_mechanism, nulls=nulls, fill=fill,
                                   label=label, **release)
        inner_cost = request.cost
    else:
        options = dict(select)
        request, selection_plan = selection_request(
            backend.schema(frame), options.pop("rule"), eps=release_eps, delta=delta,
            bounds=placeholder, columns=columns or list(spec), nulls=nulls, fill=fill,
            label=label, **options, **release)
        inner_cost = selection_plan.total
    if not PrepaidLedger(None, part)._fits(inner_cost):  # type: ignore[arg-type]
        raise InvalidParameterError("the release does not fit its share")  # pragma: no cover
    precheck_budget(ledger, dataset, total)
    counts, rows = _bounds_counts(frame, backend, plan, request.split_every, progress)
    spent = f"epsilon {part.epsilon:.4g}" if part.rho is None else f"rho {part.rho:.4g}"
    inner = (request.mechanism.label if selection_plan is None
             else f"{selection_plan.selection.description} and the chosen values")
    parts = f"private bounds for {list(plan.columns)}: epsilon {plan.eps:.4g}; release: " \
            f"{inner} with {spent}"
    charge = charge_budget(total, ledger, dataset,
                           description=f"{label or 'pairwise'} ({parts})",
                           mechanism=f"bounds-hist+{request.mechanism.label}",
                           columns=request.columns)
    found = _bounds_release(counts, rows, plan, charge.charge_id)
    final = {c: found.bounds.get(c, placeholder[c]) for c in spec}
    request = dc.replace(request, bounds=tuple(tuple(map(float, final[c]))
                                               for c in request.columns))
    prepaid = PrepaidLedger(charge, part)
    if selection_plan is None:
        result = release_pairs(frame, request, ledger=prepaid, dataset=dataset,
                               progress=progress)
    else:
        result = release_selected(frame, request, selection_plan, ledger=prepaid,
                                  dataset=dataset, progress=progress)
    privacy = dc.replace(
        result.privacy, epsilon=total.epsilon, delta=total.delta, rho=total.rho, parts=parts,
        release_cost=part,
        statement=privacy_statement(total, max(1, len(result.pairs)),
                                    detail=f"bounds and release together; {parts}"))
    return dc.replace(result, privacy=privacy, private_bounds=found)
