"""The steps in front of a release's values, as the executor runs them.

A plan (:class:`~dpmic_dask.release.plan.ReleasePlan`) holds, in this order, the
steps it asks for: contribution bounding and a private row count (per unit),
the choice of categories, the check of public bounds, private bounds; the
values come last (:mod:`dpmic_dask.release.executor`). Each step here has

- ``cost``: its part of the plan's one charge (a typed :class:`PrivacyCost`);
- ``before(run)``: what it reads and checks before the charge (it may refuse;
  nothing is drawn);
- ``after(run, charge)``: its noise and what it releases, after the charge
  (nothing here refuses), including what it tells the later steps: the
  bounded frame and ``n0``, the chosen categories, the released bounds;
- ``describe(run)``: its part of the report, in words.

Every step reads the frame as the steps before it left it (:attr:`Run.frame`):
columns are encoded once, from their kind to axis values, before the first
step, and a step never encodes them again.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import MIN_ROWS, refuse_missing
from dpmic_dask.errors import InvalidDataError
from dpmic_dask.privacy.partition_selection import (
    candidate_threshold,
    select_candidates,
    select_sorted,
)
from dpmic_dask.release.bounding import (
    add_rows_and_missing,
    bound_refusing_missing,
    refuse_mixed_units,
    rows_and_missing,
)
from dpmic_dask.release.boundsteps import BoundsStep, CheckStep
from dpmic_dask.release.category_counts import add_passes
from dpmic_dask.release.category_counts import first_pass as categories_pass
from dpmic_dask.release.category_counts import occurring as count_occurring
from dpmic_dask.release.histograms import show_warning
from dpmic_dask.release.private_categories import (
    PrivateCategoriesPlan,
    chosen_axis,
    most_kept,
    recode,
)
from dpmic_dask.release.rowcount import run_row_count
from dpmic_dask.release.runstate import Run
from dpmic_dask.release.stages import public_rows
from dpmic_dask.release.unitbase import UnitsPlan, per_unit
from dpmic_dask.stats.categories import CategoryAxis


class UnitStep:
    """Contribution bounding and a private row count (privacy per unit).

    Before the charge: a unit column mixing types and missing values (unless the
    plan fills or drops them) are refused from the whole table, never from the
    kept rows (that refusal would depend on the fresh key); then at most ``k``
    rows per unit are kept, once, for every later step. After it: the noisy count
    of the bounded rows, and ``n0``, its public lower bound."""

    name = "units"
    label = "unit-bound+count"

    def __init__(self, plan: UnitsPlan, *, fills: bool, nullable=()):
        self.plan, self.fills, self.nullable = plan, fills, tuple(nullable)

    @property
    def cost(self):
        return self.plan.rowcount.cost

    def before(self, run: Run) -> None:
        units = self.plan
        refuse_mixed_units(run.frame, units.unit, split_every=run.split_every,
                           progress=run.progress)
        read = run.read()
        # missing values refused from the whole table (raw columns with a null
        # category may hold nulls), in the bounding's first pass; the bounded
        # rows stay where they were computed for every later pass: one bounding
        # (a pass over the table and the thresholds), not one per pass (10^7 rows,
        # 2 workers: 16-20 s per release persisted, 30 s not)
        run.frame = bound_refusing_missing(
            run.frame, units.unit, units.k, read, split_every=run.split_every, raw=run.raw,
            missing=None if self.fills else [c for c in read if c not in self.nullable])
        run.unit_k = units.k

    def count(self, run: Run) -> None:
        """The bounded row count, when no later step's pass counted it."""
        read = [c for c in run.read() if c not in run.raw]
        rows, _ = backend_for(run.frame).reduce(
            run.frame, read, partial(rows_and_missing, columns=read), add_rows_and_missing,
            split_every=run.split_every, progress=run.progress)
        run.seen(rows)

    def after(self, run: Run, charge) -> None:
        count = run_row_count(self.plan.rowcount, int(run.rows))
        run.n0 = run.public = max(self.plan.floor, count.n_low)
        run.found["rows_noisy"] = count.noisy

    def describe(self, run: Run) -> str:
        return self.plan.rowcount.describe()


class CategoriesStep:
    """The choice of categories (:mod:`dpmic_dask.release.private_categories`).

    Before the charge: one pass counting each private column's candidates (or the
    values that occur, sorted and capped), the row count and missing values; the
    most values a column chosen from the values that occur may keep, at the
    worst case of the values' checks. After it: the noisy choice, the columns
    recoded to the chosen lists, the values' request given them."""

    name = "categories"

    @property
    def label(self) -> str:
        return "categories-" + ("lap-sel" if self.plan.unknown else "lap")

    def __init__(self, plan: PrivateCategoriesPlan):
        self.plan = plan
        self.kept_at_most = 0
        self.hist: Any = None
        self.occurring: dict = {}

    @property
    def cost(self):
        return self.plan.cost

    def before(self, run: Run) -> None:
        step, request = self.plan, run.request
        private = tuple(step.axes)
        codes = {c: a.codes for c, a in step.axes.items()}
        nullable = tuple(c for c in step.unknown if step.axes[c].null_category)
        self.hist, rows, missing = backend_for(run.frame).reduce(
            run.frame, request.columns,
            partial(categories_pass, columns=request.columns, private=private, codes=codes,
                    fill=request.fill, unknown=step.unknown, null_category=nullable),
            add_passes, split_every=run.split_every, progress=run.progress)
        if request.fill is None:
            refuse_missing(request.columns, missing, "pass nulls='fill' or nulls='category'")
        run.seen(rows)
        if step.unknown:
            if run.unit_k is None:  # the most values the grid holds at the public rows
                self.kept_at_most = most_kept(run.request, run.selection, step.unknown,
                                              public_rows(run.request, int(run.rows)))
            for name, counts in zip(private, self.hist):
                if name in step.unknown:  # sorted now: after the charge only noise runs
                    self.occurring[name] = count_occurring(name, counts)
        # the public thresholds and limit, for the charge's description made before the
        # noise (the report's too)
        run.said["categories"] = (self.thresholds(), self.kept_at_most)

    def thresholds(self) -> list[int]:
        """Each column's public threshold (the plan's alone: nothing read)."""
        step = self.plan
        return [step.threshold() if name in step.unknown
                else candidate_threshold(step.scale, len(axis.categories))
                for name, axis in step.axes.items()]

    def after(self, run: Run, charge) -> None:
        step = self.plan
        if step.unknown and run.unit_k is not None:
            # per unit: the most values the grid holds at the released n0 (public
            # now; the plan passed with two values at its floor, so this never fails)
            request, selection = per_unit((run.request, run.selection), run.unit_k, run.n0)
            self.kept_at_most = most_kept(request, selection, step.unknown, run.n0)
        chosen, remaps, coded, report = {}, {}, {}, {}
        thresholds = self.thresholds()
        for name, counts, threshold in zip(step.axes, self.hist, thresholds):
            axis = step.axes[name]
            if name in step.unknown:
                values, exact = self.occurring[name]
                listed = tuple(select_sorted(values, exact, step.eps_column, threshold,
                                             limit=self.kept_at_most,
                                             sensitivity=step.sensitivity))
                final = coded[name] = CategoryAxis(name, listed, axis.null_category)
            else:
                kept, _, _ = select_candidates(counts[:len(axis.categories)],
                                               step.eps_column, threshold,
                                               sensitivity=step.sensitivity)
                final, remaps[name] = chosen_axis(axis, kept)
            chosen[name] = final
            report[name] = final.categories
        one_bin = [name for name, final in chosen.items()
                   if not final.categories and not final.null_category]
        if one_bin:  # after the charge: said, never refused
            show_warning(
                f"no category of column(s) {one_bin} passed its threshold: every row of "
                "each is in the one 'other' bin, so its pairs were released as those of a "
                "constant column (noise around 0); a larger eps, more rows or public "
                "categories would keep some")
        run.frame = recode(run.frame, remaps, coded)
        run.raw = ()
        axes = {**dict(run.request.categories), **chosen}
        bounds = tuple(axes[c].bounds if c in axes else b
                       for c, b in zip(run.request.columns, run.request.bounds))
        run.request = dataclasses.replace(run.request, categories=tuple(axes.items()),
                                          bounds=bounds)
        run.found["private_categories"] = report
        run.said["categories"] = (thresholds, self.kept_at_most)

    def describe(self, run: Run) -> str:
        step = self.plan
        thresholds, kept_at_most = run.said.get("categories", ((), 0))
        shown = ", ".join(str(t) for t in sorted(set(thresholds)))
        limit = ""
        if step.unknown:
            limit = (f"; at most {kept_at_most} values kept per column chosen from the values "
                     "that occur" if kept_at_most else "; at most as many values kept per "
                     "column chosen from the values that occur as the grid holds at the "
                     "released n0")
        return (f"{step.describe()} (noise scale {step.scale:.4g} on each count, threshold "
                f"{shown}{limit})")


def front_steps(plan) -> list:
    """The plan's steps in front of the values, in the order they run."""
    steps: list = []
    if plan.units is not None:
        fills = plan.request.fill is not None or bool(plan.drop)
        choice = plan.private_categories
        nullable = () if choice is None else tuple(
            c for c in choice.unknown if choice.axes[c].null_category)
        steps.append(UnitStep(plan.units, fills=fills, nullable=nullable))
    if plan.private_categories is not None:
        steps.append(CategoriesStep(plan.private_categories))
    if plan.bounds_check is not None:
        steps.append(CheckStep(plan.bounds_check))
    if plan.bounds is not None:
        steps.append(BoundsStep(plan.bounds, kinds=plan.kinds))
    return steps


def check_rows(run: Run) -> None:
    """The public row count a release needs at least (row level; per unit the
    plan's floor is the least ``n0`` and was checked before anything was read)."""
    if run.unit_k is None and run.rows is not None and run.rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")


__all__ = ["BoundsStep", "CategoriesStep", "CheckStep", "Run", "UnitStep", "check_rows",
           "front_steps"]
