"""The steps of a release about bounds, as the executor runs them
(:mod:`dpmic_dask.release.steps`): the check of public bounds and private bounds."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import refuse_missing
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.release.bounds_check import (
    BoundsCheckPlan,
    _add,
    check_partition,
    read_check,
    read_list,
)
from dpmic_dask.release.boundsfound import BoundsCheck, show_messages
from dpmic_dask.release.boundsplan import given_fills
from dpmic_dask.release.boundsread import bounds_release
from dpmic_dask.release.histograms import (
    bounds_counts,
    noisy_histograms,
    refine_counts,
    show_warning,
)
from dpmic_dask.release.runstate import Run
from dpmic_dask.release.stages import public_rows


class CheckStep:
    """The check of public bounds (:mod:`dpmic_dask.release.bounds_check`).

    Before the charge: one pass (each checked column's histogram over its public
    bounds, the row count, missing values refused). After it: the noise and the
    findings, shown as warnings and kept for the report."""

    name = "bounds check"
    label = "bounds-check"

    def __init__(self, plan: BoundsCheckPlan):
        self.plan = plan
        self.hists: Any = None

    @property
    def cost(self):
        return self.plan.cost

    def before(self, run: Run) -> None:
        step = self.plan
        columns, fill = run.numeric()
        checked = tuple(columns.index(name) for name in step.columns)
        self.hists, rows, missing = backend_for(run.frame).reduce(
            run.frame, columns,
            partial(check_partition, columns=columns, checked=checked, bounds=step.bounds,
                    fill=fill, lists=tuple(step.columns.index(c) for c in step.lists)),
            _add, split_every=run.split_every, progress=run.progress)
        if fill is None:
            refuse_missing(columns, missing)
        run.seen(rows)

    def after(self, run: Run, charge) -> None:
        step = self.plan
        # a categorical column's two counts (in its list, outside it); the others' bins
        exact = [h[:step.counted_in(c)] for c, h in zip(step.columns, self.hists)]
        noisy, scale = noisy_histograms(exact, step.eps_column, step.sensitivity)
        checks = {c: read_check(h, b, scale)
                  for c, h, b in zip(step.columns, noisy, step.bounds) if c not in step.lists}
        lists = {c: read_list(h, scale)
                 for c, h in zip(step.columns, noisy) if c in step.lists}
        found = BoundsCheck(
            bounds=dict(zip(step.columns, step.bounds)),
            histograms={c: tuple(int(x) for x in h) for c, h in zip(step.columns, noisy)},
            checks=checks, noise_scale=scale, epsilon_per_column=step.eps_column,
            cost=step.cost, kinds=dict(step.kinds), seeded=not active_sampler().secure,
            lists=lists)
        # post-processing of released counts
        show_messages([*(found.message(c) for c in found.wide), *found.piled_messages(),
               *(line for line, warned in found.bound_messages() if warned),
               *(found.outside_message(c) for c in found.outside)])
        run.found["bounds_check"] = found

    def describe(self, run: Run) -> str:
        return self.plan.describe()


class BoundsStep:
    """Private bounds (:mod:`dpmic_dask.release.private_bounds`).

    Before the charge: the first pass (each private column's histogram on its
    fixed grid, the row count, missing values refused). After it: the bounds read
    off the noisy histograms (and a refining pass), given to the values."""

    name = "private bounds"
    label = "bounds-hist"

    def __init__(self, planned, kinds=None):
        self.planned = planned
        self.kinds = kinds or {}  # each column's kind, for the words of its bounds
        self.counts: Any = None

    @property
    def cost(self):
        """Inside the values' part: private bounds and the values share it."""
        return self.planned.total

    def before(self, run: Run) -> None:
        plan, request = self.planned.bounds, run.request
        read = tuple(c for c in run.read() if c not in run.raw)
        given = given_fills(request, plan)
        fills = None if given is None else tuple(given[name] for name in read)
        self.counts, rows = bounds_counts(run.frame, backend_for(run.frame), plan, read, fills,
                                          run.split_every, run.progress,
                                          min_rows=run.unit_k is None)
        run.seen(rows)
        if run.unit_k is None:
            plan.warn_if_blind(public_rows(request, int(rows)))

    def after(self, run: Run, charge) -> None:
        planned = self.planned
        recount = partial(refine_counts, run.frame, backend_for(run.frame), planned.bounds,
                          run.split_every, run.progress)
        found = bounds_release(self.counts, run.public, planned.bounds, charge.charge_id,
                               recount, kinds=self.kinds)
        # only the columns whose bounds were asked private: every other column keeps
        # the bounds the steps before left it (a categorical column chosen privately
        # has its chosen list's, not the worst case's the plan's placeholder holds)
        private = set(planned.bounds.columns)
        final = {c: found.bounds.get(c, planned.placeholder[c]) for c in planned.spec
                 if c in private}
        run.request = dataclasses.replace(run.request, bounds=tuple(
            tuple(map(float, final[c])) if c in final else b
            for c, b in zip(run.request.columns, run.request.bounds)))
        # a public fill outside the released bounds: every filled row clamps to a
        # bound (post-processing of released bounds and public fills; said)
        fills = given_fills(run.request, planned.bounds) or {}
        outside = {c: float(fills[c]) for c in final
                   if fills.get(c) is not None and not final[c][0] <= fills[c] <= final[c][1]}
        if outside:
            found = dataclasses.replace(found, clamped_fills=outside)
            show_warning(found.fill_note())
        run.found["private_bounds"] = found

    def describe(self, run: Run) -> str:
        return self.planned.bounds.describe()


__all__ = ["BoundsStep", "CheckStep"]
