"""One release plan, built once from the arguments, run by one executor.

A release of pairs is ``[private bounds] -> [selection] -> values``: every
pair's values (:func:`~dpmic_dask.release.pipeline.release_pairs`), or privately chosen
pairs' values (:func:`~dpmic_dask.release.pipeline.release_selected`), optionally after
a private-bounds step that both are paid from
(:func:`~dpmic_dask.release.private_bounds.run_private_bounds`). :func:`plan_release`
checks the arguments against the frame's schema and builds the
:class:`ReleasePlan` (nothing read, nothing charged); :func:`run_release` runs
it with one precheck and one charge. The accessor and job files build plans
here; neither picks between the steps itself.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass

from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import check_epsilon
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms import mechanism_supports
from dpmic_dask.privacy.selection import SelectionPlan, selection_rule
from dpmic_dask.release.bounds_check import (
    check_bounds_check,
    plan_bounds_check,
    refuse_with,
    run_bounds_check,
    split_check_budget,
)
from dpmic_dask.release.pipeline import release_selected
from dpmic_dask.release.private_bounds import (
    PrivateBoundsPlan,
    plan_private_bounds,
    run_private_bounds,
)
from dpmic_dask.release.private_categories import (
    UNKNOWN,
    PrivateCategoriesPlan,
    plan_private_categories,
    run_private_categories,
    split_private,
    worst_case_lists,
)
from dpmic_dask.release.request import API_NAMES, ArgumentNames, ReleaseRequest, pairwise_request
from dpmic_dask.release.results import PairwiseResult
from dpmic_dask.release.selected import selection_request
from dpmic_dask.stats.categories import category_kinds
from dpmic_dask.stats.kinds import axis_arguments, axis_frame


@dataclass(frozen=True)
class ReleasePlan:
    """What one release does and costs. Exactly one of: ``request`` alone (every
    pair), ``request`` with ``selection`` (chosen pairs), or ``bounds`` (a
    private-bounds step in front of either)."""

    request: ReleaseRequest
    selection: SelectionPlan | None = None
    bounds: PrivateBoundsPlan | None = None
    #: Each used column's kind (``None``: float64 read as it is), and the columns
    #: whose nulls drop a row (``nulls="drop"``): see :mod:`dpmic_dask.stats.kinds`.
    kinds: dict | None = None
    drop: tuple | None = None
    #: Privacy per unit (:mod:`dpmic_dask.release.units`): bounding and a private
    #: row count in front of the release, paid from the same charge.
    units: object | None = None
    #: Private categories (:mod:`dpmic_dask.release.private_categories`): a choice
    #: among public candidates in front of the release, paid from the same charge.
    private_categories: object | None = None
    #: A private check of the public bounds (:mod:`dpmic_dask.release.bounds_check`)
    #: in front of the release, paid from the same charge.
    bounds_check: object | None = None

    @property
    def cost(self) -> PrivacyCost:
        """The one charge of the whole release."""
        if self.bounds_check is not None:
            return self.bounds_check.total  # type: ignore[attr-defined]
        if self.private_categories is not None:
            return self.private_categories.total  # type: ignore[attr-defined]
        if self.units is not None:
            return self.units.total  # type: ignore[attr-defined]
        if self.bounds is not None:
            return self.bounds.total
        return self.request.cost if self.selection is None else self.selection.total

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps in order, in words (``("private bounds", "selection", "values")``)."""
        return tuple(step for step, present in (("bounds check", self.bounds_check is not None),
                                                ("private categories",
                                                 self.private_categories is not None),
                                                ("private bounds", self.bounds is not None),
                                                ("selection", self.selection is not None),
                                                ("values", True)) if present)


def has_private_bounds(bounds) -> bool:
    """Whether any column's bounds are to be released privately."""
    if isinstance(bounds, str):
        return True
    return isinstance(bounds, dict) and any(isinstance(v, str) for v in bounds.values())


#: What ``nulls=`` a release takes.
RELEASE_NULLS = ("raise", "fill", "drop", "category")


def plan_release(schema, eps, *, bounds, columns=None, delta=0.0, mechanism="auto",
                 select: dict | None = None, bounds_share=None, coverage=0.99, domain=None,
                 refine=True, nulls="raise", fill=None, label=None, statistics=("mic",),
                 B=None, c=None, names: ArgumentNames = API_NAMES, kinds=None, min_rows=None,
                 categories=None, bounds_check=None, **sizing) -> ReleasePlan:
    """Check a release against ``schema`` and plan it (nothing read or charged).

    ``select``: ``None`` (every pair), or ``{"rule": "top-k", "k": ...}`` /
    ``{"rule": "above", "threshold": ..., "max_pairs": ...}`` with the rule's
    ``share`` and ``screen_B``. ``bounds`` with ``"private"`` entries puts the
    private-bounds step first (``bounds_share``; ``coverage``, ``domain``, ``refine``,
    each one value or a dict by column).
    ``sizing``: ``split_every``, ``task_memory``. ``kinds`` names the kind of
    columns whose dtype does not say it (:mod:`dpmic_dask.stats.kinds`);
    ``nulls="drop"`` needs ``min_rows``, a public minimum of the rows kept.
    ``categories`` gives categorical columns their public lists
    (:mod:`dpmic_dask.stats.categories`; ``nulls="category"`` keeps their nulls).
    ``bounds_check`` (a share of the budget, default off) puts a private check of
    the public bounds first (:mod:`dpmic_dask.release.bounds_check`).
    """
    if not isinstance(nulls, str) or nulls not in RELEASE_NULLS:
        raise InvalidParameterError("nulls must be 'raise', 'fill' (with fill values), 'drop' "
                                    "(with min_rows) or 'category' (categorical columns)")
    if select is not None:
        selection_rule(select.get("rule"))  # a registered rule, or refused now
    # privately chosen categories: the release is planned at its share, with every
    # candidate as a category (the worst case); the choice comes first, same charge
    categories, private = split_private(categories)
    check_share = check_bounds_check(bounds_check, names.bounds_check)
    if check_share is not None:  # the check's share first; the release is planned at the rest
        refuse_with(private_bounds=has_private_bounds(bounds), private_categories=bool(private))
        eps, mechanism, check_costs = split_check_budget(check_epsilon(eps, names.eps), delta,
                                                         mechanism, check_share)
    if private:
        check_private_categories(bounds, select, nulls, min_rows)
        eps, mechanism, step_costs = plan_private_categories(eps, delta, mechanism, private)
        categories = {**(categories or {}), **worst_case_lists(schema, private)}
    # categorical columns: their public lists become their kinds (codes, bounds (0, K))
    kinds, columns, nulls, categorical = category_kinds(
        schema, categories, bounds=bounds, columns=columns, kinds=kinds, nulls=nulls,
        fill=fill, unsupported_by=None if mechanism_supports(mechanism, "categorical", delta)
        else mechanism)
    # every column in axis numbers: its kind from the schema, bounds and fill values
    # given in the column's own kind converted (dpmic_dask.stats.kinds)
    axis = axis_arguments(schema, bounds=bounds, columns=columns, fill=fill, kinds=kinds,
                          bounds_name=names.bounds, fill_name=names.fill)
    schema, bounds, fill = axis.schema, axis.bounds, axis.fill
    domain = axis.in_axis(domain)  # per-column private-bounds domains in each kind
    drop_rows = check_drop(nulls, fill, min_rows, mechanism)
    if drop_rows:
        nulls = "raise"  # the frame the release reads has no nulls left
    planned = _plan(schema, eps, bounds=bounds, columns=columns, delta=delta,
                    mechanism=mechanism, select=select, bounds_share=bounds_share,
                    coverage=coverage, domain=domain, refine=refine, nulls=nulls, fill=fill,
                    label=label,
                    statistics=statistics, B=B, c=c, names=names, **sizing)
    if drop_rows:
        planned = with_min_rows(planned, min_rows)
    if categorical:
        planned = with_categories(planned, categorical)
    if private:
        cost, eps_column, release_part, total, bad_event = step_costs
        planned = dataclasses.replace(planned, private_categories=PrivateCategoriesPlan(
            {c: categorical[c] for c in private}, eps_column, cost, release_part, total,
            tuple(c for c, listed in private.items() if listed is UNKNOWN), bad_event))
    if check_share is not None:
        planned = dataclasses.replace(planned, bounds_check=plan_bounds_check(
            planned.request, axis.kinds, check_share, check_costs))
    return dataclasses.replace(planned, kinds=axis.kinds,
                               drop=planned.request.columns if drop_rows else None)


def check_private_categories(bounds, select, nulls, min_rows) -> None:
    """What a release with private categories does not combine with (refused
    before anything is read)."""
    if has_private_bounds(bounds):
        raise InvalidParameterError(
            "private categories and private bounds in one release are not supported: "
            "release the bounds first (dpmic_dask.private_bounds) and give them as public")
    if nulls not in ("raise", "category") or min_rows is not None:
        raise InvalidParameterError(
            "private categories take nulls='raise' or nulls='category'")


def check_drop(nulls, fill, min_rows, mechanism) -> bool:
    """Whether ``nulls="drop"`` was asked for, after checking what it needs: a
    public ``min_rows`` (the kept row count is not public; noise is calibrated to
    this minimum, docs/privacy.md "Dropping rows with nulls")."""
    if nulls != "drop":
        if min_rows is not None:
            raise InvalidParameterError('min_rows applies to nulls="drop" only')
        return False
    if fill is not None:
        raise InvalidParameterError("fill is only used with nulls='fill'")
    if isinstance(min_rows, bool) or not isinstance(min_rows, numbers.Integral) \
            or min_rows < MIN_ROWS:
        raise InvalidParameterError(
            f'nulls="drop" needs min_rows, a public minimum (an integer >= {MIN_ROWS}) of the '
            "rows left after dropping those with nulls, chosen without looking at the data")
    if not mechanism_supports(mechanism, "drop"):
        raise InvalidParameterError(f'mechanism {mechanism!r} does not support nulls="drop" '
                                    "(its noise is calibrated to the exact row count)")
    return True


def with_min_rows(planned: ReleasePlan, min_rows: int) -> ReleasePlan:
    """``planned`` with every request calibrated to ``min_rows`` rows."""
    request = dataclasses.replace(planned.request, min_rows=int(min_rows))
    bounds = planned.bounds
    if bounds is not None:
        bounds = dataclasses.replace(bounds, request=request)
    return dataclasses.replace(planned, request=request, bounds=bounds)


def with_categories(planned: ReleasePlan, axes: dict) -> ReleasePlan:
    """``planned`` with every request knowing its categorical columns' codings
    (their pairs' statistic has a categorical axis, ``docs/statistics.md``)."""
    from dpmic_dask.release.stages import check_category_grids

    request = dataclasses.replace(planned.request, categories=tuple(axes.items()))
    if request.B is not None and request.c is not None:
        check_category_grids(request, int(request.B), request.c)  # before any read
    bounds = planned.bounds
    if bounds is not None:
        bounds = dataclasses.replace(bounds, request=request)
    return dataclasses.replace(planned, request=request, bounds=bounds)


def _plan(schema, eps, *, bounds, columns, delta, mechanism, select, bounds_share, coverage,
          domain, nulls, fill, label, statistics, B, c, names, refine=True,
          **sizing) -> ReleasePlan:
    if has_private_bounds(bounds):
        if select is None:
            inner: dict = {"B": B, "c": c, "statistics": statistics, **sizing}
        else:
            inner = {}
            select = {**select, "B": B, "c": c, "statistics": statistics, **sizing}
        planned = plan_private_bounds(
            schema, eps, bounds=bounds, columns=columns, delta=delta,
            bounds_share=bounds_share, coverage=coverage, domain=domain, refine=refine,
            mechanism=mechanism, nulls=nulls, fill=fill, label=label, select=select, **inner)
        return ReleasePlan(planned.request, planned.selection, planned)
    if bounds_share is not None:
        raise InvalidParameterError('bounds_share applies to bounds="private" only')
    if select is None:
        return ReleasePlan(pairwise_request(
            schema, eps=eps, bounds=bounds, columns=columns, delta=delta, mechanism=mechanism,
            B=B, c=c, nulls=nulls, fill=fill, label=label, statistics=statistics, names=names,
            **sizing))
    options = dict(select)
    request, selection = selection_request(
        schema, options.pop("rule"), eps=eps, delta=delta, bounds=bounds, columns=columns,
        B=B, c=c, nulls=nulls, fill=fill, label=label, statistics=statistics, names=names,
        **options, **sizing)
    return ReleasePlan(request, selection)


def run_release(frame, plan: ReleasePlan, *, ledger=None, dataset=None,
                progress=None) -> PairwiseResult:
    """Run a plan: one precheck, every check before one charge, noise once."""
    from dpmic_dask.release.pipeline import release_pairs

    if plan.kinds or plan.drop:  # every column in axis numbers (dpmic_dask.stats.kinds)
        step = plan.private_categories
        raw = step.unknown if isinstance(step, PrivateCategoriesPlan) else ()
        kinds = {c: k for c, k in (plan.kinds or {}).items() if c not in raw}
        frame = axis_frame(frame, kinds, drop=plan.drop)  # raw: coded after the choice
    if plan.bounds_check is not None:
        return _in_kinds(run_bounds_check(frame, plan, ledger=ledger, dataset=dataset,
                                          progress=progress), plan)
    if plan.private_categories is not None:
        return _in_kinds(run_private_categories(frame, plan, ledger=ledger, dataset=dataset,
                                                progress=progress), plan)
    if plan.units is not None:
        from dpmic_dask.release.units import run_units

        return run_units(frame, plan, ledger=ledger, dataset=dataset, progress=progress)
    if plan.bounds is not None:
        result = run_private_bounds(frame, plan.bounds, ledger=ledger, dataset=dataset,
                                    progress=progress)
    elif plan.selection is not None:
        result = release_selected(frame, plan.request, plan.selection, ledger=ledger,
                                  dataset=dataset, progress=progress)
    else:
        result = release_pairs(frame, plan.request, ledger=ledger, dataset=dataset,
                               progress=progress)
    return _in_kinds(result, plan)


def _in_kinds(result: PairwiseResult, plan: ReleasePlan) -> PairwiseResult:
    """Post-processing for the reader: private bounds printed in each column's kind,
    and, after ``nulls="drop"``, what ``n`` means."""
    if result.private_bounds is not None and plan.kinds:
        result = dataclasses.replace(result, private_bounds=dataclasses.replace(
            result.private_bounds, kinds={c: k for c, k in plan.kinds.items() if k}))
    if plan.drop:
        note = (f" Rows with a missing value in any of the {len(plan.drop)} columns were "
                f"dropped (nulls='drop'): n = {plan.request.min_rows} is the public minimum "
                "min_rows that every noise scale is calibrated to; the number of rows kept "
                "is not released. The guarantee holds for every table that keeps at least "
                "min_rows rows (docs/privacy.md, 'Dropping rows with nulls').")
        result = dataclasses.replace(result, privacy=dataclasses.replace(
            result.privacy, statement=result.privacy.statement + note))
    return result


__all__ = ["ReleasePlan", "has_private_bounds", "plan_release", "run_release"]
