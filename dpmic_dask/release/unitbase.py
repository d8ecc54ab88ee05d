"""The per-unit part of a release plan and the rewriting of a row-level plan into
its per-unit form (every statistic tapered below ``n0``, sensitivity ``k`` times
the tapered step), for the planner (:mod:`dpmic_dask.release.unitplan`), the
executor's steps and the report. Nothing here reads data or plans a release.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass

from dpmic_dask.errors import DPMICError
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import Mechanism
from dpmic_dask.release.bounding import unit_label, unit_statement
from dpmic_dask.release.rowcount import RowCountPlan
from dpmic_dask.release.stages import check_plan, check_selected_plan
from dpmic_dask.stats.group_sensitivity import UnitStatistic


@dataclass(frozen=True)
class UnitsPlan:
    """The per-unit part of a release plan: the unit, ``k``, the row count's plan,
    the release's prepaid ``part``, the ``total`` charged once, and ``floor``: the
    smallest ``n0`` at which every check of the release passes (found before
    anything is read; the bound is never released below it)."""

    unit: tuple[str, ...]
    k: int
    rowcount: RowCountPlan
    part: PrivacyCost
    total: PrivacyCost
    floor: int

    @property
    def statement(self) -> str:
        return unit_statement(self.unit, self.k)

    def parts(self, inner: str) -> str:
        return f"{self.rowcount.describe()}; release: {inner} with {self.part.describe()}"


def mechanisms_of(obj, seen=None):
    """Every :class:`Mechanism` reachable from a plan (requests, selections)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Mechanism):
        yield obj
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from mechanisms_of(getattr(obj, f.name), seen)
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from mechanisms_of(item, seen)
    elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("dpmic_dask.privacy"):
        for value in vars(obj).values():
            yield from mechanisms_of(value, seen)


def per_unit(plan, k: int, n0: int):
    """A copy of a row-level release plan whose every statistic is released per
    unit: tapered below ``n0``, sensitivity ``k * tapered_step(n0)``."""
    plan = copy.deepcopy(plan)
    for mech in mechanisms_of(plan):
        base = mech.statistic
        while isinstance(base, UnitStatistic):
            base = base.base
        mech.statistic = UnitStatistic(base, k, n0)
    return plan


def check_inner(plan, n: int) -> None:
    """Every data-independent check of the inner release at ``n`` rows."""
    if plan.selection is None:
        check_plan(plan.request, n)
    else:
        check_selected_plan(plan.request, plan.selection, n)


def passes_at(plan, k: int, n: int) -> bool:
    """Whether the plan, released per unit at ``n0 = n``, passes every check."""
    try:
        with warnings.catch_warnings():  # a search, not a release: no noise warnings
            warnings.simplefilter("ignore")
            check_inner(per_unit(plan, k, n), n)
    except DPMICError:
        return False
    return True


def unit_privacy_statement(statement: str, units: UnitsPlan | tuple) -> str:
    """The row-level statement said of the unit (a plan's, or ``(unit, k)``):
    neighbours differ by all rows of one unit (added or removed), and the
    information bound is about one unit."""
    unit, k = (units.unit, units.k) if isinstance(units, UnitsPlan) else units
    who = unit_label(unit)
    said = statement.replace(
        "with respect to replacing any one row",
        f"with respect to adding or removing all rows of any one {who} "
        f"({unit_statement(unit, k)})",
    ).replace("about any one row beyond what the other rows already reveal",
              f"about any one {who} beyond what the other units' rows already reveal"
              ).replace("a category held by a single row is published",
                        f"a category held by a single {who} is published")
    if said == statement:  # pragma: no cover - the row-level wording changed
        said = f"{statement} Neighbouring tables differ by all rows of one {who}."
    return said


def noise_at(planned, n: int):
    """The values' noise plan at ``n`` public rows (per unit: ``n0 = n``)."""
    request, selection = planned.request, planned.selection
    if planned.units is not None:
        request, selection = per_unit((request, selection), planned.units.k, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if selection is None:
            B, c = check_plan(request, n)
            return request.mechanism.calibrate(n=n, pairs=request.n_pairs, B=B, c=c)
        B, c, _ = check_selected_plan(request, selection, n)
        published = max(1, selection.selection.most(request.n_pairs))
        return selection.release.calibrate(n=n, pairs=published, B=B, c=c)


__all__ = ["UnitsPlan", "check_inner", "mechanisms_of", "noise_at", "passes_at", "per_unit",
           "unit_privacy_statement"]
