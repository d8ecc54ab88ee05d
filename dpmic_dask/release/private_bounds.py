"""Releases with private bounds: estimate bounds first, in the same charge.

:func:`private_bounds` releases bounds alone. :func:`plan_private_bounds`
plans a release with a private-bounds step in front (nothing read), and
:func:`run_private_bounds` estimates the ``"private"`` columns' bounds, charges
the total once, and runs the release (every pair, or a private selection) on a
prepaid part of that charge; :mod:`dpmic_dask.release.plan` builds and runs them.
The mechanism is in :mod:`dpmic_dask.privacy.bounds`; the proof in ``docs/privacy.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

from dpmic_dask.backends import backend_for
from dpmic_dask.errors import (
    InvalidParameterError,
)
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import check_epsilon
from dpmic_dask.privacy.costs import measure_for, split_front
from dpmic_dask.privacy.selection import SelectionPlan, check_share
from dpmic_dask.release.axisframe import axis_frame
from dpmic_dask.release.bounding import (
    bound_contributions,
    check_max_rows,
    check_unit_columns,
    check_unit_dtypes,
    refuse_missing_in_table,
    refuse_mixed_units,
    unit_label,
)
from dpmic_dask.release.boundsresult import BoundsRelease
from dpmic_dask.release.charge import after_charge, charge_budget, precheck_budget
from dpmic_dask.release.histograms import (
    BoundsPlan,
    bounds_counts,
    bounds_release,
    plan_bounds,
    refine_counts,
)
from dpmic_dask.release.request import ReleaseRequest, pairwise_request
from dpmic_dask.release.selected import selection_request
from dpmic_dask.stats.kinds import axis_arguments
from dpmic_dask.stats.limits import DEFAULT_SPLIT_EVERY

#: Default share of ``eps`` spent on private bounds inside a release.
DEFAULT_BOUNDS_SHARE = 0.1


def _unit_arguments(schema, names, privacy_unit, max_rows_per_unit):
    """``(unit columns, k)`` for a standalone bounds step per unit, else ``None``
    (checked before anything is read)."""
    if privacy_unit is None:
        if max_rows_per_unit is not None:
            raise InvalidParameterError("max_rows_per_unit needs privacy_unit (the column "
                                        "that identifies a unit)")
        return None
    unit = check_unit_columns(privacy_unit)
    if max_rows_per_unit is None:
        raise InvalidParameterError("privacy_unit needs max_rows_per_unit, the most rows of "
                                    "one unit that are used")
    k = check_max_rows(max_rows_per_unit)
    if any(u not in schema for u in unit):
        raise InvalidParameterError("privacy_unit column(s) are not in the frame")
    check_unit_dtypes(schema, unit)
    clash = sorted(set(unit) & set(names))
    if clash:
        raise InvalidParameterError(
            f"the privacy unit column(s) {clash} cannot have bounds released")
    return unit, k


def private_bounds(frame, eps, *, columns, coverage=0.99, domain=None, refine=True,
                   nulls="raise", fill=None, ledger=None, dataset=None,
                   split_every=DEFAULT_SPLIT_EVERY, progress=None,
                   label=None, privacy_unit=None, max_rows_per_unit=None) -> BoundsRelease:
    """Estimate public-to-be bounds of ``columns`` with ``eps`` (pure DP), one charge.

    See :mod:`dpmic_dask.privacy.bounds` for the mechanism; ``docs/privacy.md`` for the proof.
    ``coverage``, ``domain`` and ``refine`` are one value for every column or a dict
    by column name: the share of values to contain (default 0.99); a loose public
    ``(lo, hi)`` to grid instead of the whole float range; whether the column's
    budget is split over a first pass and a refining pass (default ``True``:
    ``FIRST_PASS_SHARE`` of it to the first) or spent on the first pass alone.
    Columns of every kind (:mod:`dpmic_dask.stats.kinds`) are estimated on their axis
    (times: seconds since the epoch, UTC); the report prints them in their kind.

    ``privacy_unit`` (a column or columns) with ``max_rows_per_unit = k``: privacy
    per unit -- at most ``k`` rows per unit are kept (a keyed hash, fresh key) and
    each histogram's noise is ``k / eps_pass`` (``docs/privacy.md`` section 12); the
    row count is not released.
    """
    backend = backend_for(frame)
    names = [columns] if isinstance(columns, str) else list(columns or ())
    unit = _unit_arguments(backend.schema(frame), names, privacy_unit, max_rows_per_unit)
    axis = axis_arguments(backend.schema(frame), bounds=dict.fromkeys(names, (0.0, 1.0)),
                          columns=names, fill=fill)
    fill = axis.fill
    domain = axis.in_axis(domain)  # per-column domains given in each column's kind
    plan = plan_bounds(axis.schema, columns, coverage, domain, nulls, fill,
                       PrivacyCost(check_epsilon(eps)), refine)
    if unit is not None:
        plan = plan.per_unit(unit_label(unit[0]), unit[1])
    precheck_budget(ledger, dataset, PrivacyCost(plan.eps),
                    **({"privacy_unit": unit[0]} if unit is not None else {}))
    if unit is not None:  # a unit column of objects mixing types: refused from the table
        refuse_mixed_units(frame, unit[0], split_every=split_every, progress=progress)
    # every column in axis numbers once, before bounding (the keyed hash then reads
    # them: a per-row map, so the kept set is still the unit's rows and the key's)
    frame = axis_frame(frame, axis.kinds)
    if unit is not None:  # every check passed: bound, then read only the bounded rows
        if plan.fill is None:  # refused from the whole table, not the rows the key keeps
            refuse_missing_in_table(frame, plan.columns, split_every=split_every,
                                    progress=progress)
        frame = bound_contributions(frame, unit[0], unit[1], plan.columns)
        backend = backend_for(frame)
        frame = backend.persist(frame)  # both passes read the same bounded rows
    counts, rows = bounds_counts(frame, backend, plan, plan.columns, plan.fill, split_every,
                                 progress, min_rows=unit is None)
    if unit is not None:
        rows = None  # the bounded row count is not public
    else:
        plan.warn_if_blind(rows)
    charge = charge_budget(PrivacyCost(plan.eps), ledger, dataset,
                           description=label or "private bounds", mechanism="bounds-hist",
                           columns=plan.columns)
    recount = partial(refine_counts, frame, backend, plan, split_every, progress)
    with after_charge(charge):
        found = bounds_release(counts, rows, plan, charge.charge_id, recount)
    return dataclasses.replace(found, kinds={c: k for c, k in axis.kinds.items() if k})


@dataclass(frozen=True)
class PrivateBoundsPlan:
    """A release with a private-bounds step in front, planned (nothing read):
    the bounds step, the release it pays for (``request``, and ``selection`` when
    the release chooses pairs privately), the release's prepaid ``part`` and the
    ``total`` charged once. ``spec`` is every column's bounds as asked
    (``(lo, hi)`` or ``"private"``); ``placeholder`` stands in for the private
    ones until they are released."""

    bounds: BoundsPlan
    request: ReleaseRequest
    selection: SelectionPlan | None
    total: PrivacyCost
    part: PrivacyCost
    spec: dict
    placeholder: dict

    def parts(self) -> str:
        """The two parts in words, for the ledger and the report."""
        inner = (self.request.mechanism.label if self.selection is None
                 else f"{self.selection.selection.description} and the chosen values")
        return f"{self.bounds.describe()}; release: {inner} with {self.part.describe()}"


def plan_private_bounds(schema, eps, *, bounds, columns=None, delta=0.0, bounds_share=None,
                        coverage=0.99, domain=None, refine=True, mechanism="auto",
                        nulls="raise",
                        fill=None, label=None, select: dict | None = None,
                        **release) -> PrivateBoundsPlan:
    """Check a release whose bounds are ``"private"`` (some or all) and split its
    budget: ``bounds_share`` of ``eps`` (or of ``rho`` under zCDP) to the bounds,
    the rest to the release (Gaussian with ``delta > 0``). ``select`` (the
    arguments of :func:`selection_request` after ``rule``, with ``rule``) makes the
    release a private selection instead of every pair. Nothing is read."""
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
    private_fill = {c: fill[c] for c in private if c in fill} if fill else None
    # the budget split: the bounds' part, the release's part, and the whole
    total = measure_for(delta).total(eps, delta)
    bounds_part, part, release_eps, release_mechanism = split_front(
        total, share, mechanism, "private bounds")
    plan = plan_bounds(schema, private, coverage, domain, nulls, private_fill, bounds_part,
                       refine)
    # private columns are checked against a wide placeholder (fill values included);
    # the released bounds replace it before anything is counted
    placeholder = {c: (spec[c] if c not in private else plan.wide(c))
                   for c in spec}
    selection_plan = None
    if select is None:
        request = pairwise_request(schema, eps=release_eps, bounds=placeholder,
                                   columns=columns or list(spec), delta=delta,
                                   mechanism=release_mechanism, nulls=nulls, fill=fill,
                                   label=label, **release)
        inner_cost = request.cost
    else:
        options = dict(select)
        request, selection_plan = selection_request(
            schema, options.pop("rule"), eps=release_eps, delta=delta,
            bounds=placeholder, columns=columns or list(spec), nulls=nulls, fill=fill,
            label=label, **options, **release)
        inner_cost = selection_plan.total
    if not part.measure.fits(inner_cost, part):
        raise InvalidParameterError("the release does not fit its share")  # pragma: no cover
    return PrivateBoundsPlan(plan, request, selection_plan, total, part, spec, placeholder)


def first_pass(frame, planned: PrivateBoundsPlan, *, progress=None, min_rows=True):
    """The pass before the charge over every column of the release: the bounds'
    exact first-pass histograms and the row count (missing values refused)."""
    plan, request = planned.bounds, planned.request
    read = tuple(dict.fromkeys((*request.columns, *plan.columns)))
    return bounds_counts(frame, backend_for(frame), plan, read,
                         _fills_for(read, request, plan), request.split_every, progress,
                         min_rows=min_rows)


def _fills_for(read, request, plan: BoundsPlan) -> tuple | None:
    """Fill values of the columns read by the first pass (``None``: no fills)."""
    if request.fill is None:
        return None
    fills = dict(zip(request.columns, request.fill))
    if plan.fill is not None:
        fills.update(zip(plan.columns, plan.fill))
    return tuple(fills[name] for name in read)
