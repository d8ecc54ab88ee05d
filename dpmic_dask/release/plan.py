"""One release plan, built once from the arguments, run by one executor.

A release of pairs is ``[private bounds] -> [selection] -> values``: every
pair's values (:func:`~dpmic_dask.release.pipeline.release_pairs`), or privately chosen
pairs' values (:func:`~dpmic_dask.release.pipeline.release_selected`), optionally after
a private-bounds step that both are paid from
(:func:`~dpmic_dask.release.boundsplan.plan_private_bounds`). :func:`plan_release`
checks the arguments against the frame's schema and builds the
:class:`ReleasePlan` (nothing read, nothing charged); :func:`run_release` runs
it with one precheck and one charge. The accessor and job files build plans
here; neither picks between the steps itself.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpmic_dask.errors import DPMICError, InvalidParameterError, UnusedParameterWarning
from dpmic_dask.privacy.conversion import check_delta, check_epsilon
from dpmic_dask.privacy.costs import PrivacyCost, column_epsilon, split_front
from dpmic_dask.privacy.mechanisms import mechanism_supports
from dpmic_dask.privacy.partition_selection import (
    ROW_SENSITIVITY,
    bad_event_threshold,
    candidate_scale,
)
from dpmic_dask.privacy.selection import SelectionPlan, selection_rule
from dpmic_dask.release.bounds_check import (
    AUTO,
    AUTO_SHARE,
    check_bounds_check,
    plan_bounds_check,
    speaks_at,
)
from dpmic_dask.release.boundsplan import PrivateBoundsPlan, plan_private_bounds
from dpmic_dask.release.boundsspec import typed_bounds
from dpmic_dask.release.planparts import (
    check_drop,
    checkable_columns,
    refuse_companions_without_pairs,
    with_categories,
    with_min_rows,
)
from dpmic_dask.release.private_categories import (
    CATEGORIES_SHARE,
    UNKNOWN,
    PrivateCategoriesPlan,
    choice_total,
    split_private,
    worst_case_lists,
)
from dpmic_dask.release.request import API_NAMES, ArgumentNames, ReleaseRequest, pairwise_request
from dpmic_dask.release.selected import selection_request
from dpmic_dask.stats.categories import PRIVATE, category_kinds
from dpmic_dask.stats.kinds import axis_arguments
from dpmic_dask.stats.sensitivity import safe_down


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
    units: Any = None
    #: Private categories (:mod:`dpmic_dask.release.private_categories`): a choice
    #: among public candidates in front of the release, paid from the same charge.
    private_categories: Any = None
    #: A private check of the public bounds (:mod:`dpmic_dask.release.bounds_check`)
    #: in front of the release, paid from the same charge.
    bounds_check: Any = None
    #: With steps in front of the values: the one charge, split into every
    #: step's part, and the part left to the values (private bounds included).
    total: PrivacyCost | None = None
    release_part: PrivacyCost | None = None
    #: Lines the report gives about steps that were asked for and do nothing here.
    notes: tuple = ()
    #: ``bounds_check="auto"``: the same release with a check of its public bounds
    #: (``AUTO_SHARE`` of the budget), run instead of this plan when the public row
    #: count is large enough for the check to speak (row level only: per unit the
    #: row count is private).
    auto_check: ReleasePlan | None = None
    #: ... and with a check of the numeric and time columns alone (no list), run
    #: where ``auto_check`` cannot speak and this can (more of the share each).
    auto_fallback: ReleasePlan | None = None

    def auto_at(self, rows: int) -> ReleasePlan | None:
        """The first of :attr:`auto_check`, :attr:`auto_fallback` that speaks at
        ``rows`` public rows, or ``None``."""
        for checked in (self.auto_check, self.auto_fallback):
            if checked is not None and speaks_at(checked.bounds_check, rows):
                return checked
        return None

    @property
    def cost(self) -> PrivacyCost:
        """The one charge of the whole release."""
        if self.units is not None:
            return self.units.total
        if self.total is not None:
            return self.total
        return self.values_cost

    @property
    def values_cost(self) -> PrivacyCost:
        """What the values step spends (with a private-bounds step, both)."""
        if self.bounds is not None:
            return self.bounds.total
        return self.request.cost if self.selection is None else self.selection.total

    @property
    def values_part(self) -> PrivacyCost:
        """The values' own part of the one charge (after every step in front)."""
        if self.bounds is not None:
            return self.bounds.part
        if self.release_part is not None:
            return self.release_part
        return self.units.part if self.units is not None else self.values_cost

    def values_label(self, chosen: int | None = None) -> str:
        """The values step in words, with its part (the ledger's and report's wording);
        with a selection and ``chosen`` pairs released, the selection's own parts (a
        threshold's charges the whole budget whatever passes, and says so)."""
        if self.selection is None:
            mechanisms = (self.request.mechanism, *self.request.companions)
            if len(mechanisms) == 1:
                return f"{self.request.mechanism.label} with {self.values_part.describe()}"
            # every statistic an equal share of the values' part (split_mechanism)
            return (f"{' and '.join(m.label for m in mechanisms)} with "
                    f"{self.values_part.describe()}, an equal share each")
        inner = f"{self.selection.selection.description} and the chosen values"
        label = f"{inner}, together {self.values_part.describe()}"
        if chosen is None:
            return label
        return f"{label} ({self.selection.parts(chosen=chosen)})"

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps in order, in words (``("private bounds", "selection", "values")``)."""
        return tuple(step for step, present in (("contribution bounding and row count",
                                                 self.units is not None),
                                                ("private categories",
                                                 self.private_categories is not None),
                                                ("bounds check", self.bounds_check is not None),
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
                 categories=None, bounds_check=None, budget: PrivacyCost | None = None,
                 unit_k: int | None = None, check_lists: bool = True, **sizing) -> ReleasePlan:
    """Check a release against ``schema`` and plan it (nothing read or charged).

    ``select``: ``None`` (every pair), or ``{"rule": "top-k", "k": ...}`` /
    ``{"rule": "above", "threshold": ..., "max_pairs": ...}`` with the rule's
    ``share`` and ``screen_B``. ``bounds`` with ``"private"`` or
    :class:`~dpmic_dask.release.boundsspec.PrivateBounds` entries (or either for
    every column) puts the private-bounds step first (``bounds_share``;
    ``coverage``, ``domain``, ``refine``, each one value or a dict by column, a
    PrivateBounds' own fields overriding them for its column).
    ``sizing``: ``split_every``, ``task_memory``. ``kinds`` names the kind of
    columns whose dtype does not say it (:mod:`dpmic_dask.stats.kinds`);
    ``nulls="drop"`` needs ``min_rows``, a public minimum of the rows kept.
    ``categories`` gives categorical columns their public lists
    (:mod:`dpmic_dask.stats.categories`; ``nulls="category"`` keeps their nulls).
    ``bounds_check`` (a share, ``"auto"``, or off) puts a private check of the
    public bounds and lists first (:mod:`dpmic_dask.release.bounds_check`; its
    lists left out with ``check_lists=False``). The front steps' parts are split
    off one total, in order: the check, the choice of categories, then (inside
    the values' part) private bounds. ``budget``: the part this plan may spend
    when a step in front of it (the row count per unit) has taken its own;
    ``unit_k``: per unit, each front step's counts have sensitivity ``k``.
    """
    if not isinstance(nulls, str) or nulls not in RELEASE_NULLS:
        raise InvalidParameterError("nulls must be 'raise', 'fill' (with fill values), 'drop' "
                                    "(with min_rows) or 'category' (categorical columns)")
    if select is not None:
        selection_rule(select.get("rule"))  # a registered rule, or refused now
    # PrivateBounds: "private" and its settings per column (a setting given twice refused)
    bounds, typed = typed_bounds(bounds, {"coverage": coverage, "domain": domain,
                                          "refine": refine})
    coverage, domain, refine = typed["coverage"], typed["domain"], typed["refine"]
    # privately chosen categories: the release is planned at its share, with every
    # candidate as a category (the worst case); the choice comes first, same charge
    categories, private = split_private(categories)
    unknown = tuple(c for c, listed in private.items() if listed is UNKNOWN)
    check_share = check_bounds_check(bounds_check, names.bounds_check)
    if check_share == AUTO:
        return _plan_auto(schema, eps, bounds=bounds, columns=columns, delta=delta,
                          mechanism=mechanism, select=select, bounds_share=bounds_share,
                          coverage=coverage, domain=domain, refine=refine, nulls=nulls,
                          fill=fill, label=label, statistics=statistics, B=B, c=c,
                          names=names, kinds=kinds, min_rows=min_rows,
                          categories=categories if not private else
                          {**(categories or {}), **_as_given(private)},
                          budget=budget, unit_k=unit_k, **sizing)
    checkable = check_share is not None and bool(checkable_columns(
        schema, bounds, columns, categories if check_lists else None, private, kinds))
    total = budget
    if private or checkable:  # the one total the front steps' parts are split off
        eps = check_epsilon(eps, names.eps)
        chosen, _ = choice_total(eps, check_delta(delta, names.delta), unknown)
        total = chosen if budget is None else budget  # unknown: a pure budget refused
    check_part = None
    fronts = FrontSplit(total, eps, mechanism)
    if checkable:
        check_part = fronts.take(float(check_share), "bounds_check")  # type: ignore[arg-type]
    if private:
        step_part = fronts.take(CATEGORIES_SHARE, "private categories")
        sensitivity = ROW_SENSITIVITY if unit_k is None else unit_k
        eps_column = column_epsilon(step_part, len(private))
        assert total is not None  # private categories: the total was made above
        bad_event = safe_down(total.approx_delta / len(unknown)) if unknown else 0.0
        candidate_scale(eps_column, sensitivity)  # a scale that cannot be used is refused now
        if unknown:
            bad_event_threshold(eps_column, bad_event, sensitivity=sensitivity,
                                held=1 if unit_k is None else unit_k)
        if unknown and nulls == "fill":
            # a value chosen among those that occur cannot be named in advance
            raise InvalidParameterError(
                f"column(s) {list(unknown)} have their categories chosen from the values "
                "that occur (categories='private'), so no fill value can be a category "
                "known in advance: pass nulls='category' (nulls as a category of their "
                "own) or nulls='drop', or give candidates")
        categories = {**(categories or {}), **worst_case_lists(schema, private)}
    eps, mechanism = fronts.eps, fronts.mechanism
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
    drop_rows = check_drop(nulls, fill, min_rows, mechanism, per_unit=unit_k is not None)
    if drop_rows:
        nulls = "raise"  # the frame the release reads has no nulls left
    planned = _plan(schema, eps, bounds=bounds, columns=columns, delta=delta,
                    mechanism=mechanism, select=select, bounds_share=bounds_share,
                    coverage=coverage, domain=domain, refine=refine, nulls=nulls, fill=fill,
                    label=label,
                    statistics=statistics, B=B, c=c, names=names, **sizing)
    if drop_rows and unit_k is None:
        planned = with_min_rows(planned, min_rows)
    if categorical:
        refuse_companions_without_pairs(planned.request.columns, categorical, statistics)
        planned = with_categories(planned, categorical)
    if private:
        assert total is not None and fronts.rest is not None  # split off the total above
        planned = dataclasses.replace(planned, private_categories=PrivateCategoriesPlan(
            {c: categorical[c] for c in private}, eps_column, step_part, fronts.rest, total,
            unknown, bad_event, unit_k))
    if check_part is not None:
        private_bounds = planned.bounds.bounds.columns if planned.bounds is not None else ()
        planned = dataclasses.replace(planned, bounds_check=plan_bounds_check(
            planned.request, axis.kinds, float(check_share),  # type: ignore[arg-type]
            (check_part, fronts.rest, total),
            exclude=(*private_bounds, *private, *(() if check_lists else categorical)),
            sensitivity=ROW_SENSITIVITY if unit_k is None else unit_k))
    elif check_share is not None:
        planned = dataclasses.replace(planned, notes=(
            "Bounds check: nothing to check (no numeric or time column has public bounds, "
            "no categorical column a public list); no budget was spent on it.",))
    if fronts.taken or budget is not None:
        planned = dataclasses.replace(planned, total=total, release_part=fronts.rest)
    return dataclasses.replace(planned, kinds=axis.kinds,
                               drop=planned.request.columns if drop_rows else None)


def _as_given(private: dict) -> dict:
    """Private category entries as the caller spelled them (split_private's inverse)."""
    return {c: (PRIVATE if listed is UNKNOWN else {PRIVATE: listed})
            for c, listed in private.items()}


def _plan_auto(schema, eps, *, unit_k, **arguments) -> ReleasePlan:
    """``bounds_check="auto"``: the plan without a check, and beside it (row level,
    with public bounds to check) the same release with a check of
    :data:`AUTO_SHARE`, which the executor runs instead where the check can speak at
    the public row count."""
    off = plan_release(schema, eps, bounds_check=None, unit_k=unit_k, **arguments)

    def checked(**more):
        with warnings.catch_warnings():  # the same arguments: said once, by the plan above
            warnings.simplefilter("ignore", UnusedParameterWarning)
            return plan_release(schema, eps, bounds_check=AUTO_SHARE, unit_k=unit_k,
                                **arguments, **more)
    try:
        on = checked()
    except DPMICError:  # nothing to check, or a check this small cannot be sampled
        return off
    if on.bounds_check is None:  # nothing to check (every bound private, say)
        return off
    if unit_k is not None:
        what = "Public bounds and category lists" if on.bounds_check.lists else "Public bounds"
        return dataclasses.replace(off, notes=(*off.notes, (
            f"{what}: used as given, not checked (per unit the row count is private, so "
            "bounds_check='auto' does not check them; bounds_check=<share> does).")))
    lists, columns = on.bounds_check.lists, on.bounds_check.columns
    return dataclasses.replace(off, auto_check=on, auto_fallback=checked(
        check_lists=False) if 0 < len(lists) < len(columns) else None)


class FrontSplit:
    """The parts of one total taken by the steps in front of the values, in order
    (each a ``share`` of what is left: of ``eps``, or of ``rho`` under zCDP); what
    is left (:attr:`rest`) is the values' part, planned at :attr:`eps` with
    :attr:`mechanism` (``micr-gauss`` under zCDP)."""

    def __init__(self, total: PrivacyCost | None, eps: float, mechanism: str):
        self.rest, self.eps, self.mechanism = total, eps, mechanism
        self.taken: list = []

    def take(self, share: float, what: str) -> PrivacyCost:
        assert self.rest is not None, "a front step needs the plan's total"
        part, self.rest, self.eps, self.mechanism = split_front(
            self.rest, share, self.mechanism, what)
        self.taken.append(part)
        return part


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
    # the knobs of private bounds, given where no column's bounds are private,
    # would be ignored without a word: refused, as bounds_share is
    ignored = [name for name, given in (("bounds_share", bounds_share is not None),
                                        ("domain", domain is not None),
                                        ("coverage", not _default_coverage(coverage)),
                                        ("refine", refine is not True)) if given]
    if ignored:
        raise InvalidParameterError(
            f"{', '.join(ignored)} appl{'ies' if len(ignored) == 1 else 'y'} to "
            'bounds="private" only, and no column\'s bounds are private here (booleans '
            "and categorical columns take none)")
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


#: The coverage of private bounds that every release function defaults to.
DEFAULT_COVERAGE = 0.99


def _default_coverage(coverage) -> bool:
    """Whether ``coverage`` is the default of every release function (0.99)."""
    return not isinstance(coverage, Mapping) and coverage == DEFAULT_COVERAGE


__all__ = ["FrontSplit", "ReleasePlan", "has_private_bounds", "plan_release"]
