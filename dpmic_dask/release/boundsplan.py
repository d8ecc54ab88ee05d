"""A release with a private-bounds step in front, planned (nothing read).

:func:`plan_private_bounds` checks such a release and splits its budget between
the bounds and the release they pay for (:class:`PrivateBoundsPlan`);
:mod:`dpmic_dask.release.plan` makes it a step of a release plan, which the
executor runs. :func:`dpmic_dask.release.private_bounds.private_bounds` releases
bounds alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpmic_dask.backends import backend_for
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import check_epsilon
from dpmic_dask.privacy.costs import measure_for, split_front
from dpmic_dask.privacy.selection import SelectionPlan, check_share
from dpmic_dask.release.histograms import BoundsPlan, bounds_counts, plan_bounds
from dpmic_dask.release.request import ReleaseRequest, pairwise_request
from dpmic_dask.release.selected import selection_request

#: Default share of ``eps`` spent on private bounds inside a release.
DEFAULT_BOUNDS_SHARE = 0.1



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
        if self.selection is None:
            return (f"{self.bounds.describe()}; release: {self.request.mechanism.label} "
                    f"with {self.part.describe()}")
        return (f"{self.bounds.describe()}; release: {self.selection.selection.description} "
                f"and the chosen values, together {self.part.describe()}")


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


def given_fills(request, plan: BoundsPlan) -> dict | None:
    """Each column's fill value (the bounds plan's for its own columns), or ``None``
    without ``nulls="fill"``."""
    if request.fill is None:
        return None
    fills = dict(zip(request.columns, request.fill))
    if plan.fill is not None:
        fills.update(zip(plan.columns, plan.fill))
    return fills


def _fills_for(read, request, plan: BoundsPlan) -> tuple | None:
    """Fill values of the columns read by the first pass (``None``: no fills)."""
    fills = given_fills(request, plan)
    return None if fills is None else tuple(fills[name] for name in read)
