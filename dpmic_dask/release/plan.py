"""One release plan, built once from the arguments, run by one executor.

A release of pairs is ``[private bounds] -> [selection] -> values``: every
pair's values (:func:`~dpmic_dask.release.pipeline.release_pairs`), or privately chosen
pairs' values (:func:`~dpmic_dask.release.selected.release_selected`), optionally after
a private-bounds step that both are paid from
(:func:`~dpmic_dask.release.private_bounds.run_private_bounds`). :func:`plan_release`
checks the arguments against the frame's schema and builds the
:class:`ReleasePlan` (nothing read, nothing charged); :func:`run_release` runs
it with one precheck and one charge. The accessor and job files build plans
here; neither picks between the steps itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.selection import SelectionPlan, selection_rule
from dpmic_dask.release.private_bounds import (
    PrivateBoundsPlan,
    plan_private_bounds,
    run_private_bounds,
)
from dpmic_dask.release.request import API_NAMES, ArgumentNames, ReleaseRequest, pairwise_request
from dpmic_dask.release.results import PairwiseResult
from dpmic_dask.release.selected import release_selected, selection_request


@dataclass(frozen=True)
class ReleasePlan:
    """What one release does and costs. Exactly one of: ``request`` alone (every
    pair), ``request`` with ``selection`` (chosen pairs), or ``bounds`` (a
    private-bounds step in front of either)."""

    request: ReleaseRequest
    selection: SelectionPlan | None = None
    bounds: PrivateBoundsPlan | None = None
    #: Privacy per unit (:mod:`dpmic_dask.release.units`): bounding and a private
    #: row count in front of the release, paid from the same charge.
    units: object | None = None

    @property
    def cost(self) -> PrivacyCost:
        """The one charge of the whole release."""
        if self.units is not None:
            return self.units.total  # type: ignore[attr-defined]
        if self.bounds is not None:
            return self.bounds.total
        return self.request.cost if self.selection is None else self.selection.total

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps in order, in words (``("private bounds", "selection", "values")``)."""
        return tuple(step for step, present in (("private bounds", self.bounds is not None),
                                                ("selection", self.selection is not None),
                                                ("values", True)) if present)


def has_private_bounds(bounds) -> bool:
    """Whether any column's bounds are to be released privately."""
    if isinstance(bounds, str):
        return True
    return isinstance(bounds, dict) and any(isinstance(v, str) for v in bounds.values())


def plan_release(schema, eps, *, bounds, columns=None, delta=0.0, mechanism="auto",
                 select: dict | None = None, bounds_share=None, coverage=0.99, domain=None,
                 nulls="raise", fill=None, label=None, statistics=("mic",), B=None, c=None,
                 names: ArgumentNames = API_NAMES, **sizing) -> ReleasePlan:
    """Check a release against ``schema`` and plan it (nothing read or charged).

    ``select``: ``None`` (every pair), or ``{"rule": "top-k", "k": ...}`` /
    ``{"rule": "above", "threshold": ..., "max_pairs": ...}`` with the rule's
    ``share`` and ``screen_B``. ``bounds`` with ``"private"`` entries puts the
    private-bounds step first (``bounds_share``, ``coverage``, ``domain``).
    ``sizing``: ``split_every``, ``task_memory``.
    """
    if select is not None:
        selection_rule(select.get("rule"))  # a registered rule, or refused now
    if has_private_bounds(bounds):
        if select is None:
            inner: dict = {"B": B, "c": c, "statistics": statistics, **sizing}
        else:
            inner = {}
            select = {**select, "B": B, "c": c, "statistics": statistics, **sizing}
        planned = plan_private_bounds(
            schema, eps, bounds=bounds, columns=columns, delta=delta,
            bounds_share=bounds_share, coverage=coverage, domain=domain, mechanism=mechanism,
            nulls=nulls, fill=fill, label=label, select=select, **inner)
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

    if plan.units is not None:
        from dpmic_dask.release.units import run_units

        return run_units(frame, plan, ledger=ledger, dataset=dataset, progress=progress)
    if plan.bounds is not None:
        return run_private_bounds(frame, plan.bounds, ledger=ledger, dataset=dataset,
                                  progress=progress)
    if plan.selection is not None:
        return release_selected(frame, plan.request, plan.selection, ledger=ledger,
                                dataset=dataset, progress=progress)
    return release_pairs(frame, plan.request, ledger=ledger, dataset=dataset,
                         progress=progress)


__all__ = ["ReleasePlan", "has_private_bounds", "plan_release", "run_release"]
