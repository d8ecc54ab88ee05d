"""The plan of a release per privacy unit: the row-level plan, its noise
calibrated per unit at a public lower bound ``n0`` of the bounded rows, the
share of the private row count, and the smallest ``n0`` the plan passes at
(:func:`find_floor`), all before anything is read. :mod:`dpmic_dask.release.units`
runs it.
"""

from __future__ import annotations

import dataclasses
import warnings

from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.config import resolve
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import check_epsilon
from dpmic_dask.privacy.costs import measure_for, split_front
from dpmic_dask.privacy.selection import check_share
from dpmic_dask.release.bounding import (
    check_max_rows,
    check_unit_columns,
    check_unit_dtypes,
    unit_label,
)
from dpmic_dask.release.plan import plan_release
from dpmic_dask.release.private_categories import UNKNOWN, choice_total, split_private
from dpmic_dask.release.rowcount import (
    DEFAULT_BETA,
    DEFAULT_COUNT_SHARE,
    plan_row_count,
)
from dpmic_dask.release.unitbase import (  # noqa: F401 (re-exported)
    UnitsPlan,
    check_inner,
    mechanisms_of,
    passes_at,
    per_unit,
    unit_privacy_statement,
)
from dpmic_dask.stats.group_sensitivity import check_unit_statistic

#: A very large public row count at which the plan is also checked (grid defaults
#: grow with ``n`` up to a compute cap).
LARGE_N = 2**40


def find_floor(plan, k: int) -> int:
    """The smallest ``n0 >= MIN_ROWS`` at which the inner plan passes every check
    (noise scales shrink as ``n0`` grows, so passing is monotone in ``n0``).
    Refuses (nothing read) a plan that does not pass even at a very large ``n0``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_inner(per_unit(plan, k, LARGE_N), LARGE_N)  # raises the plan's own error
    if passes_at(plan, k, MIN_ROWS):
        return MIN_ROWS
    lo, hi = MIN_ROWS, LARGE_N  # fails at lo, passes at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes_at(plan, k, mid):
            hi = mid
        else:
            lo = mid
    return hi


def plan_units(schema, inner_planner, total: PrivacyCost, *, delta, unit, k, count_share=None,
               beta=DEFAULT_BETA):
    """Split ``total`` into the row count's share and the release's part, plan the
    inner release with ``inner_planner(release_eps, mechanism_override, budget)``
    (``budget``: its part, carrying ``total``'s bad-event delta) and find the
    floor. Nothing is read."""
    unit = check_unit_columns(unit)
    k = check_max_rows(k)
    missing = [u for u in unit if u not in schema]
    if missing:
        raise InvalidParameterError(f"privacy_unit column(s) {missing} are not in the frame")
    check_unit_dtypes(schema, unit)
    share = check_share(DEFAULT_COUNT_SHARE if count_share is None else count_share,
                        "count_share")
    measure = total.measure
    count_part, part, release_eps, _ = split_front(total, share)
    rowcount = plan_row_count(count_part, sensitivity=k, beta=beta)
    forced = measure.forced_mechanism
    budget = part
    if total.approx_delta:  # the bad events of choosing categories: the inner plan's
        budget = PrivacyCost(release_eps, delta, part.rho, total.approx_delta)
    inner = inner_planner(release_eps, forced, budget)
    used = set(inner.request.columns)
    if inner.bounds is not None:
        used |= set(inner.bounds.bounds.columns)
    clash = sorted(used & set(unit))
    if clash:
        raise InvalidParameterError(
            f"the privacy unit column(s) {clash} cannot be released or be part of a pair")
    for mech in mechanisms_of(inner):
        if mech.acts_on != "values":
            raise InvalidParameterError(
                f"mechanism {mech.label!r} adds noise to counts; with privacy_unit use "
                "micr-lap or micr-gauss")
        try:
            check_unit_statistic(mech.statistic.name)
        except ValueError:
            raise InvalidParameterError(
                f"statistic {mech.statistic.name!r} cannot be released per unit") from None
    if inner.bounds is not None:
        # the bounds step reads the bounded frame: each histogram's L1 sensitivity is k
        # under add/remove of one unit (docs/privacy.md, section 12); refused now if a
        # scale k / eps_pass cannot be sampled
        inner = dataclasses.replace(inner, bounds=dataclasses.replace(
            inner.bounds, bounds=inner.bounds.bounds.per_unit(unit_label(unit), k)))
    if not part.measure.fits(inner.cost, part):
        raise InvalidParameterError("the release does not fit its share")  # pragma: no cover
    floor = find_floor(inner, k)
    rowcount = dataclasses.replace(rowcount, floor=floor)
    units = UnitsPlan(unit, k, rowcount, part, total, floor)
    return inner, units


def plan_unit_release(schema, eps, *, privacy_unit=None, max_rows_per_unit=None, delta=0.0,
                      mechanism="auto", count_share=None, beta=DEFAULT_BETA, **release):
    """Plan a release (:func:`dpmic_dask.release.plan.plan_release`), per unit when
    ``privacy_unit`` is given: bounding to ``max_rows_per_unit`` rows per unit and a
    private row count (``count_share`` of the budget, default 5%) in front of it.
    Without ``privacy_unit`` this is exactly the row-level plan. Nothing is read.
    ``task_memory`` and ``split_every`` not given (or ``None``) are read from
    :mod:`dpmic_dask.config` here, once, and recorded in the plan's request."""
    for name in ("task_memory", "split_every"):
        release[name] = resolve(name, release.get(name))
    if privacy_unit is None:
        if max_rows_per_unit is not None or count_share is not None:
            raise InvalidParameterError(
                "max_rows_per_unit and count_share need privacy_unit (the column that "
                "identifies a unit)")
        return plan_release(schema, eps, delta=delta, mechanism=mechanism, **release)
    if max_rows_per_unit is None:
        raise InvalidParameterError(
            "privacy_unit needs max_rows_per_unit, the most rows of one unit that are used "
            "(see dpmic_dask.contribution_bound to choose it privately)")
    measure_for(delta).release_mechanism(mechanism, "privacy_unit")
    private = split_private(release.get("categories"))[1]
    total, _ = choice_total(check_epsilon(eps), delta,
                            [c for c, listed in private.items() if listed is UNKNOWN])
    k = check_max_rows(max_rows_per_unit)

    def planner(release_eps, forced, budget):
        return plan_release(schema, release_eps, delta=delta, mechanism=forced or mechanism,
                            budget=budget, unit_k=k, **release)

    inner, units = plan_units(schema, planner, total, delta=delta, unit=privacy_unit,
                              k=k, count_share=count_share, beta=beta)
    return dataclasses.replace(inner, units=units)


