"""The values step: count the pairs, one charge, noise once.

:func:`release_pairs` releases every pair's values; :func:`release_selected`
chooses pairs privately first (``top_pairs``, ``pairs_above``), then releases
the chosen pairs' values with fresh noise. Each is a staged release
(:func:`~dpmic_dask.release.executor.run_charged`) of a checked
:class:`~dpmic_dask.release.request.ReleaseRequest` (the plan's values step,
:mod:`dpmic_dask.release.plan`): the checks of the plan at the public row count
(:mod:`dpmic_dask.release.stages`) and the passes over the data, then the bill
of its one charge, then, with the charge the executor made (the plan's one
charge when steps came in front), the noise. The mechanism object answers the
release's privacy cost; the executor's budget precheck (before any data is
read, :func:`values_cost`) and the one charge (after counting, before any
noise) both use it. Noise is drawn once; nothing returned can redraw it.

Where is epsilon split? In the mechanism's ``calibrate`` (``dpmic_dask.privacy.mechanisms``).
Where is noise drawn? In the mechanism's ``randomise``, called only after the charge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.backends import backend_for
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.privacy.selection import AllPairs, Selection
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release import stages
from dpmic_dask.release.charge import Bill, log, warn_if_delta_large
from dpmic_dask.release.report import PrivacyReport, selection_noise_said, warn_noise_after
from dpmic_dask.release.results import PairwiseResult
from dpmic_dask.release.stages import (
    check_plan,
    check_selected_plan,
    chosen_pairs_spec,
    companion,
    count_pairs,
    defined_pairs,
    pair_function,
    public_rows,
    selection_layout,
    undefined_pairs,
    value_report,
    values_of,
    values_of_pairs,
    with_parts,
)

if TYPE_CHECKING:
    from dpmic_dask.privacy.charges import Charge
    from dpmic_dask.privacy.costs import PrivacyCost
    from dpmic_dask.privacy.selection import SelectionPlan
    from dpmic_dask.release.request import ReleaseRequest

#: The values step, staged (:data:`dpmic_dask.release.executor.Staged`).
Values = Generator[Bill, "Charge", PairwiseResult]


def values_cost(request: ReleaseRequest, plan: SelectionPlan | None) -> PrivacyCost:
    """What the values step alone is charged (its budget precheck's cost)."""
    if plan is None or plan.selection.cost is None:
        return request.cost
    return plan.total


def release_pairs(frame, request: ReleaseRequest, *, progress=None,
                  selection: Selection | None = None, side=None) -> Values:
    """Run a checked request, staged: count, the bill, then (charged) noise once.
    ``side``: a step reading its counts off the same pass, where it can
    (:func:`~dpmic_dask.release.stages.evaluate_pairs`)."""
    selection = selection or AllPairs()
    if selection.cost is not None:
        raise InvalidParameterError(
            "selections that cost privacy budget are not supported by this release path")
    backend = backend_for(frame)
    mech, statistic = request.mechanism, request.statistic
    log.info("validated: %d columns, %d pairs, %s, the values' part eps=%g (after any "
             "step in front of them)", len(request.columns), request.n_pairs, mech.label,
             request.eps)
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
        counted = count_pairs(frame, backend, request, layout, n_rows, progress)
    else:
        counted = stages.evaluate_pairs(frame, backend, request, layout, n_rows, B, c, value_of,
                                         progress, side=side)
    n_public = public_rows(request, counted.rows)
    warn_if_delta_large(request.delta, n_public)
    chosen = selection.select(request.n_pairs)
    plan = mech.calibrate(n=n_public, pairs=len(chosen), B=B, c=c)
    description = request.label or "pairwise"
    if mech.acts_on == "counts":
        counts = counted.counts()[list(chosen)]
        charge = yield Bill(mech.cost, description, mech.label, request.columns)
        noisy = mech.randomise(counts, plan)  # every pair's cells in one vector of draws
        values = backend.map_counts(noisy, value_of)  # of the noisy counts, on the cluster
    else:
        exact = counted.values[list(chosen)]
        labels = "+".join(m.label for m in (mech, *request.companions))
        plans = [m.calibrate(n=n_public, pairs=defined_pairs(request, chosen), B=B, c=c)
                 for m in request.companions]  # over the pairs whose value is defined
        charge = yield Bill(request.cost, description, labels, request.columns)
        if request.companions:
            values = mech.randomise(exact[:, 0], plan)
            companions = tuple(
                companion(m, exact[:, k + 1], len(chosen), plans[k],
                          undefined_pairs(request, chosen))
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
        report = with_parts(report, request, len(chosen), defined_pairs(request, chosen))
    warn_noise_after(values, plan.ci95)  # post-processing of the released values
    return PairwiseResult(
        columns=request.columns,
        pairs=tuple((request.columns[i], request.columns[j]) for i, j in pairs),
        values=tuple(float(v) for v in values),
        privacy=report,
        companions=companions if request.companions else (),
    )




def release_selected(frame, request: ReleaseRequest, plan: SelectionPlan, *,
                     progress=None, side=None) -> Values:
    """Choose pairs privately, then release the chosen pairs' values with fresh noise.

    Staged: every check of the plan (:func:`check_selected_plan`); every pair's
    exact value computed on the cluster (at the screening grid when it is smaller
    -- the MICr sensitivity does not depend on ``B``); the bill of
    ``plan.total``; then, charged once, the selection's noise; when screening,
    the chosen pairs counted again at ``B``; the release's noise. Nothing is
    drawn before the charge.
    """
    if plan.selection.cost is None:  # a choice that reads no data: every pair, ranked
        return (yield from release_pairs(frame, request, progress=progress,
                                         selection=plan.selection, side=side))
    backend = backend_for(frame)
    release, selection = plan.release, plan.selection
    statistic = release.statistic  # type: ignore[attr-defined]
    log.info("validated: %d columns, %d candidate pairs, %s", len(request.columns),
             request.n_pairs, selection.description)
    n_rows = backend.row_count(frame, request.columns)
    B, c, screen = check_selected_plan(request, plan, public_rows(request, n_rows))
    statistics = (statistic, *(m.statistic for m in plan.companions))

    def layout_and_values(grid_B):
        layout = selection_layout(request, plan, grid_B, c)
        if plan.companions:
            fn = partial(values_of, statistics=statistics, layout=layout)
        else:
            fn = partial(statistic.value, layout=layout)
        return layout, pair_function(request, layout, fn, statistics)

    layout, fn = layout_and_values(screen)
    scores = stages.evaluate_pairs(frame, backend, request, layout, n_rows, screen, c, fn, progress,
                                   side=side)
    n_public = public_rows(request, scores.rows)
    warn_if_delta_large(request.delta, n_public)
    sensitivity = statistic.sensitivity(n_public, screen)
    labels = "+".join(m.label for m in (release, *plan.companions))
    charge = yield Bill(plan.total, f"{request.label or 'selected pairs'} ({plan.parts()})",
                        f"{type(selection).__name__}+{labels}", request.columns)
    mic_scores = scores.values[:, 0] if plan.companions else scores.values
    chosen = selection.select(request.n_pairs, mic_scores, sensitivity)
    log.info("selected %d of %d pairs", len(chosen), request.n_pairs)
    if chosen and screen != B:
        layout, fn = layout_and_values(B)
        spec = chosen_pairs_spec(request, layout, [request.pairs[p] for p in chosen])
        exact = values_of_pairs(backend, frame, spec, request, B, c, fn, n_rows, progress)
    else:
        exact = scores.values[list(chosen)]
    published = max(1, len(chosen))
    noise = release.calibrate(n=n_public, pairs=published, B=B, c=c)  # type: ignore[attr-defined]
    main = exact[:, 0] if plan.companions else exact
    values = release.randomise(main, noise) if chosen else np.zeros(0)  # type: ignore[attr-defined]
    warn_noise_after(values, noise.ci95)  # post-processing of the released values
    companions = tuple(  # each over the chosen pairs whose value it has (public)
        companion(m, exact[:, k + 1] if chosen else np.zeros(0), len(chosen),
                  m.calibrate(n=n_public, pairs=defined_pairs(request, chosen), B=B, c=c),
                  undefined_pairs(request, chosen))
        for k, m in enumerate(plan.companions))
    pairs = [request.pairs[p] for p in chosen]
    report = PrivacyReport(
        mechanism=noise.mechanism, statistic=noise.statistic, epsilon=plan.total.epsilon,
        delta=plan.total.delta, rho=plan.total.rho, noise_scale=noise.noise_scale,
        ci95=noise.ci95, sensitivity=noise.sensitivity, n=noise.n, B=B, c=c,
        charge_id=charge.charge_id, seeded=not active_sampler().secure,
        statement=privacy_statement(plan.total, published,
                                    detail="selection and release together"),
        released=len(chosen), candidates=request.n_pairs,
        selection=selection.description + (
            f"; scored on the screening grid B = {screen}, the chosen pairs' values "
            f"released at B = {B}" if screen != B else "") + selection_noise_said(
                selection.score_noise(request.n_pairs, sensitivity)),
        parts=plan.parts(chosen=len(chosen)), release_cost=release.cost)  # type: ignore[attr-defined]
    return PairwiseResult(
        columns=request.columns,
        pairs=tuple((request.columns[i], request.columns[j]) for i, j in pairs),
        values=tuple(float(v) for v in values),
        privacy=report,
        companions=companions,
    )
