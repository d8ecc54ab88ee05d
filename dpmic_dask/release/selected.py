"""Releases that choose pairs privately first (``top_pairs``, ``pairs_above``).

:func:`selection_request` checks the request and splits the budget
(:func:`~dpmic_dask.privacy.selection.plan_selection`); :func:`release_selected` scores
every pair where the counts are, charges the total once, then draws the
selection's noise and the release's. The charge and precheck are the
release's (:func:`~dpmic_dask.release.charge.charge_budget`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import MIN_ROWS, check_max_cells
from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.privacy.accounting import privacy_statement
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.privacy.mechanisms.registry import check_statistics
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.privacy.selection import (
    EveryPairRanked,
    SelectionPlan,
    check_share,
    plan_selection,
    selection_rule,
)
from dpmic_dask.release import pipeline
from dpmic_dask.release.charge import (
    after_charge,
    charge_budget,
    log,
    precheck_budget,
    warn_if_delta_large,
)
from dpmic_dask.release.pipeline import block_size, companion, grid_parameters, values_of
from dpmic_dask.release.request import API_NAMES, ArgumentNames, ReleaseRequest, pairwise_request
from dpmic_dask.release.results import PairwiseResult, PrivacyReport
from dpmic_dask.stats.counting import CountSpec
from dpmic_dask.stats.limits import DEFAULT_SPLIT_EVERY, DEFAULT_TASK_MEMORY, check_micr_grid
from dpmic_dask.stats.statistics.registry import union_layout

#: ``screen_B="auto"`` scores candidates on this grid (when ``B`` is larger), then
#: counts the chosen pairs again at ``B``: in ``benchmarks/selection.py`` it chose
#: the same pairs (top-10 precision 1.0 in 20 of 20 runs at n = 10**5 and 10**6)
#: 10x and 5.5x faster than scoring at ``B = 200``.
SCREEN_B_DEFAULT = 40


def selection_request(schema, rule: str, *, eps, delta=0.0, share=0.5, bounds, columns=None,
                      B=None, c=None, nulls="raise", fill=None,
                      split_every=DEFAULT_SPLIT_EVERY, label=None,
                      task_memory=DEFAULT_TASK_MEMORY, screen_B="auto", statistics=("mic",),
                      names: ArgumentNames = API_NAMES, **options):
    """Check a select-then-release request against ``schema`` (nothing read, nothing
    charged): the checked columns and grid, the rule's ``options`` (``k`` for
    ``"top-k"``; ``threshold`` and ``max_pairs`` for ``"above"``: see
    :func:`~dpmic_dask.privacy.selection.selection_rule`), and the budget split
    (:func:`~dpmic_dask.privacy.selection.plan_selection`). Messages name the arguments as
    ``names`` spells them."""
    chosen = selection_rule(rule)
    request = pairwise_request(schema, eps=eps, bounds=bounds, columns=columns, delta=delta,
                               mechanism=f"micr-{measure_for(delta).noise}", B=B, c=c,
                               nulls=nulls, fill=fill, split_every=split_every, label=label,
                               task_memory=task_memory, names=names)
    unknown = sorted(k for k, v in options.items() if k not in chosen.options and v is not None)
    if unknown:
        raise InvalidParameterError(f"selection rule {rule!r} takes no {', '.join(unknown)}")
    checked = chosen.check(options, names)
    asked = chosen.free(checked, request.n_pairs)
    if asked is not None:
        # every pair is published: choosing costs nothing, the values get it all
        request = pairwise_request(
            schema, eps=eps, bounds=bounds, columns=columns, delta=delta,
            mechanism=request.mechanism.label, B=B, c=c, nulls=nulls, fill=fill,
            split_every=split_every, label=label, task_memory=task_memory,
            statistics=statistics, names=names)
        return request, SelectionPlan(request.cost, EveryPairRanked(asked, request.n_pairs),
                                      request.mechanism, None, request.companions)
    if screen_B is not None and screen_B != "auto":
        screen_B = check_max_cells(screen_B, names.screen_B)
    plan = plan_selection(rule, eps=request.eps, delta=request.delta,
                          share=check_share(share, names.share), statistic=request.statistic,
                          screen_B=screen_B, statistics=check_statistics(statistics), **checked)
    return request, plan


def check_selected_plan(request: ReleaseRequest, plan: SelectionPlan,
                        n: int) -> tuple[int, int, int]:
    """Every data-independent check of a select-then-release of ``n`` rows, run
    before the charge: the release grid for ``n``, the screening grid, the count
    layouts of every statistic at both, the selection's noise at the scores'
    sensitivity, and every released statistic's noise calibrated to the most
    pairs the rule can publish. Returns ``(B, c, screen_B)``."""
    if plan.selection.cost is None:
        B, c = pipeline.check_plan(request, n)
        return B, c, B
    if n < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    release, selection = plan.release, plan.selection
    most = selection.most(request.n_pairs)
    B, c = grid_parameters(request, n, release.epsilon / most)  # type: ignore[attr-defined]
    if plan.screen_B == "auto":
        screen = min(B, SCREEN_B_DEFAULT)
    else:
        screen = B if plan.screen_B is None else int(plan.screen_B)
    if screen != B:
        check_micr_grid(screen, c, min(request.n_pairs, block_size(request, screen, c)),
                        request.split_every)
    for grid_B in {screen, B}:
        selection_layout(request, plan, grid_B, c)
        pipeline.check_category_grids(request, grid_B, c)
    selection.prepare(release.statistic.sensitivity(n, screen))  # type: ignore[attr-defined]
    for part in (release, *plan.companions):
        part.calibrate(n=n, pairs=most, B=B, c=c)
    return B, c, screen


def selection_layout(request: ReleaseRequest, plan: SelectionPlan, B: int, c: int):
    """The count layout holding every statistic the selection releases."""
    return union_layout((request.statistic, *(m.statistic for m in plan.companions)), B, c)


def release_selected(frame, request: ReleaseRequest, plan: SelectionPlan, *, ledger=None,
                     dataset=None, progress=None) -> PairwiseResult:
    """Choose pairs privately, then release the chosen pairs' values with fresh noise.

    One precheck before any data is read; every check of the plan
    (:func:`check_selected_plan`); every pair's exact value computed on the
    cluster (at the screening grid when it is smaller -- the MICr sensitivity
    does not depend on ``B``); one charge of ``plan.total``; the selection's
    noise; when screening, the chosen pairs counted again at ``B``; the
    release's noise. Nothing is drawn before the charge.
    """
    if plan.selection.cost is None:  # a choice that reads no data: every pair, ranked
        return pipeline.release_pairs(frame, request, ledger=ledger, dataset=dataset,
                                      progress=progress, selection=plan.selection)
    backend = backend_for(frame)
    release, selection = plan.release, plan.selection
    statistic = release.statistic  # type: ignore[attr-defined]
    log.info("validated: %d columns, %d candidate pairs, %s", len(request.columns),
             request.n_pairs, selection.description)
    precheck_budget(ledger, dataset, plan.total)
    n_rows = backend.row_count(frame, request.columns)
    B, c, screen = check_selected_plan(request, plan, pipeline.public_rows(request, n_rows))
    statistics = (statistic, *(m.statistic for m in plan.companions))

    def layout_and_values(grid_B):
        layout = selection_layout(request, plan, grid_B, c)
        if plan.companions:
            fn = partial(values_of, statistics=statistics, layout=layout)
        else:
            fn = partial(statistic.value, layout=layout)
        return layout, pipeline.pair_function(request, layout, fn, statistics)

    layout, fn = layout_and_values(screen)
    scores = pipeline._evaluate(frame, backend, request, layout, n_rows, screen, c, fn, progress)
    n_public = pipeline.public_rows(request, scores.rows)
    warn_if_delta_large(request.delta, n_public)
    sensitivity = statistic.sensitivity(n_public, screen)
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
        spec = chosen_pairs_spec(request, layout, [request.pairs[p] for p in chosen])
        with after_charge(charge):
            exact = _values_of_pairs(backend, frame, spec, request, B, c, fn, n_rows,
                                     progress)
    else:
        exact = scores.values[list(chosen)]
    published = max(1, len(chosen))
    noise = release.calibrate(n=n_public, pairs=published, B=B, c=c)  # type: ignore[attr-defined]
    main = exact[:, 0] if plan.companions else exact
    values = release.randomise(main, noise) if chosen else np.zeros(0)  # type: ignore[attr-defined]
    companions = tuple(
        companion(m, exact[:, k + 1] if chosen else np.zeros(0), len(chosen),
                  m.calibrate(n=n_public, pairs=published, B=B, c=c))
        for k, m in enumerate(plan.companions))
    pairs = [request.pairs[p] for p in chosen]
    report = PrivacyReport(
        mechanism=noise.mechanism, statistic=noise.statistic, epsilon=plan.total.epsilon,
        delta=plan.total.delta, rho=plan.total.rho, noise_scale=noise.noise_scale,
        ci95=noise.ci95, sensitivity=noise.sensitivity, n=noise.n, B=B, c=c,
        charge_id=charge.charge_id, seeded=not active_sampler().secure,
        statement=privacy_statement(plan.total, published,
                                    detail="selection and release together"),
        released=len(chosen), candidates=request.n_pairs, selection=selection.description,
        parts=plan.parts(chosen=len(chosen)), release_cost=release.cost)  # type: ignore[attr-defined]
    return PairwiseResult(
        columns=request.columns,
        pairs=tuple((request.columns[i], request.columns[j]) for i, j in pairs),
        values=tuple(float(v) for v in values),
        privacy=report,
        companions=companions,
    )


def chosen_pairs_spec(request: ReleaseRequest, layout, pairs) -> CountSpec:
    """What to count for ``pairs`` (column index pairs of ``request``): only their
    columns are read and binned (20 chosen pairs of 1,000 columns read at most 40)."""
    used = sorted({i for pair in pairs for i in pair})
    at = {column: k for k, column in enumerate(used)}
    fill = None if request.fill is None else tuple(request.fill[i] for i in used)
    return CountSpec(tuple(request.columns[i] for i in used),
                     tuple(request.bounds[i] for i in used), fill, layout,
                     tuple((at[i], at[j]) for i, j in pairs))


def _values_of_pairs(backend, frame, spec: CountSpec, request: ReleaseRequest, B, c, fn, rows,
                   progress) -> np.ndarray:
    """Exact values of the pairs in ``spec.pair_list`` (counted in blocks)."""
    block = block_size(request, B, c)
    evaluation = backend.evaluate(frame, spec, fn, pairs_per_block=block,
                                  split_every=request.split_every, progress=progress,
                                  rows=rows, task_memory=request.task_memory)
    return evaluation.values


