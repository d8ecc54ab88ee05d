"""The one executor of a release plan: every step's checks, one charge, noise.

:func:`run_release` runs a :class:`~dpmic_dask.release.plan.ReleasePlan` in a
fixed order:

1. the columns are encoded once, from their kind to axis values
   (:func:`~dpmic_dask.stats.kinds.axis_frame`; rows with nulls dropped for
   ``nulls="drop"``);
2. the budget precheck of the plan's one cost, before anything is read;
3. each front step's ``before`` (:mod:`dpmic_dask.release.steps`): its pass
   over the data and its checks, any of which may refuse;
4. the values' checks at the public row count (row level; per unit they ran at
   the plan's floor before anything was read);
5. **the one charge** of the plan's cost;
6. each front step's ``after`` (its noise; what it releases rewrites the later
   steps' inputs), then the values with their noise, paid from the same charge.
   Nothing after the charge refuses: a failure there (the data changed between
   passes) says the budget was charged, and which charge.

The report is derived from the plan and what each step released
(:func:`_report`); nothing patches it elsewhere. A plan without front steps is
the values step alone, charged at its own point (after its pass, before its
noise).

Every release of the package is charged here, by :func:`run_charged`, the only
caller of :func:`~dpmic_dask.release.charge.charge_budget`. A release is
*staged*: a generator whose code up to its one ``yield`` is its ``before``
(every pass over the data and every check; any may refuse, nothing is
charged), which yields the :class:`~dpmic_dask.release.charge.Bill` of its one
charge and receives the charge, and whose code after it is its ``after`` (the
noise and the result; it never refuses). A release plan's front steps and
values are one staged release (:func:`_stepped`); the values alone
(:mod:`dpmic_dask.release.pipeline`), private bounds and categories alone, the
contribution bound, one pair in memory and causal discovery are others.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Generator
from typing import TYPE_CHECKING, TypeVar

import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.axisframe import axis_frame
from dpmic_dask.release.bounding import BoundedFrame, unit_label
from dpmic_dask.release.bounds_check import CheckFromCounts, auto_lines, lists_left_line
from dpmic_dask.release.boundsteps import CheckStep
from dpmic_dask.release.charge import (
    Bill,
    after_charge,
    charge_budget,
    precheck_budget,
    warn_large_epsilon,
)
from dpmic_dask.release.pipeline import release_pairs, release_selected, values_cost
from dpmic_dask.release.results import PairwiseResult
from dpmic_dask.release.stages import public_rows
from dpmic_dask.release.steps import Run, check_rows, front_steps
from dpmic_dask.release.unitbase import check_inner, unit_privacy_statement
from dpmic_dask.stats.kinds import format_value

if TYPE_CHECKING:
    from dpmic_dask.privacy.charges import Charge

T = TypeVar("T")

#: A release of one charge: ``before`` up to its ``yield`` of the :class:`Bill`,
#: the charge sent back, ``after`` up to its result.
Staged = Generator[Bill, "Charge", T]


def run_charged(release: Staged[T], *, ledger=None, dataset=None) -> T:
    """Run a staged release: its ``before`` (every pass and check, any of which may
    refuse), **the one charge** of the bill it yields, then its ``after`` (noise:
    warnings are shown, never raised, and a failure says the budget was charged)."""
    bill = next(release)
    try:
        warn_large_epsilon(bill.cost)
        charge = charge_budget(bill.cost, ledger, dataset, description=bill.description,
                               mechanism=bill.mechanism, columns=bill.columns)
    except BaseException:
        release.close()
        raise
    return _after(release, charge)


def _after(release: Staged[T], charge) -> T:
    """A staged release's ``after``, paid by ``charge``."""
    with after_charge(charge), warnings.catch_warnings():
        never_raised()
        return _finish(release, charge)


def never_raised() -> None:
    """The caller's warning filters, with every ``"error"`` action shown instead:
    nothing after the charge may refuse, even under a warnings-as-errors filter,
    and a warning the caller ignores stays ignored (call inside
    ``warnings.catch_warnings()``, which puts the filters back)."""
    kept: list = list(warnings.filters)
    warnings.resetwarnings()
    for action, message, category, module, lineno in kept:
        warnings.filterwarnings("default" if action == "error" else action,
                                message=_pattern(message), category=category,
                                module=_pattern(module), lineno=lineno, append=True)


def _pattern(held) -> str:
    """A filter's message or module as the pattern ``filterwarnings`` takes (a
    compiled pattern's own; a plain name, as Python's built-in filters hold them,
    matched whole)."""
    if held is None:
        return ""
    return held.pattern if hasattr(held, "pattern") else re.escape(held) + r"\Z"


def _paid(release: Staged[T], charge) -> T:
    """A staged release run inside another's ``after``, paid by that one charge: its
    ``before`` (its pass, whose checks ran at the worst case before the charge),
    then its ``after``; the bill it yields is part of the charge already made."""
    next(release)
    return _finish(release, charge)


def _finish(release: Staged[T], charge) -> T:
    """Send ``charge`` to a staged release waiting at its bill; its result."""
    try:
        release.send(charge)
    except StopIteration as done:
        return done.value
    release.close()
    raise TypeError("a staged release yields one bill")


def run_release(frame, plan, *, ledger=None, dataset=None, progress=None) -> PairwiseResult:
    """Run a plan: one precheck, every check before one charge, noise once."""
    if plan.kinds or plan.drop:  # every column in axis numbers, once
        step = plan.private_categories
        raw = step.unknown if step is not None else ()  # coded after the choice
        kinds = {c: k for c, k in (plan.kinds or {}).items() if c not in raw}
        frame = axis_frame(frame, kinds, drop=plan.drop,
                           keep=plan.units.unit if plan.units is not None else ())
    note = None
    if plan.auto_check is not None:  # bounds_check="auto": on where it can speak
        precheck_budget(ledger, dataset, plan.cost)
        plan, note = _auto_check(frame, plan)
    steps = front_steps(plan)
    if not steps:
        precheck_budget(ledger, dataset, values_cost(plan.request, plan.selection))
        result = run_charged(_values(frame, plan.request, plan.selection, progress=progress),
                             ledger=ledger, dataset=dataset)
        return _in_kinds(dataclasses.replace(result, bounds_note=note), plan, None)
    run = Run(frame, plan.request, plan.selection, plan.bounds,
              plan.request.split_every, progress,
              raw=plan.private_categories.unknown if plan.private_categories else ())
    unit = plan.units.unit if plan.units is not None else None
    precheck_budget(ledger, dataset, plan.cost, privacy_unit=unit)
    staged = (_checked_values(plan, steps[0], run, progress) if _check_alone(plan, steps)
              else _stepped(plan, steps, run, progress))
    result = run_charged(staged, ledger=ledger, dataset=dataset)
    result = dataclasses.replace(_report(result, plan, steps, run), bounds_note=note)
    return _in_kinds(result, plan, run)


def _stepped(plan, steps, run: Run, progress) -> Staged[PairwiseResult]:
    """A plan with steps in front of the values, staged: each step's ``before``, the
    values' checks at the worst case, the bill of the plan's one cost; then each
    step's ``after`` and the values, paid from the same charge."""
    for step in steps:
        step.before(run)
    if run.rows is None:  # per unit with no other step: the bounded rows counted
        steps[0].count(run)
    check_rows(run)
    if run.unit_k is None:  # every check of the values at the worst case, before the charge
        run.public = public_rows(run.request, run.rows)
        check_inner(plan, run.public)
    charge = yield _bill(plan, steps, run)
    for step in steps:
        step.after(run, charge)
    values_request, selection = run.values_plan()
    values_frame = run.frame if run.unit_k is None else BoundedFrame(run.frame, run.n0)
    return _paid(_values(values_frame, values_request, selection, progress=progress), charge)


def _check_alone(plan, steps) -> bool:
    """A row-level plan whose one step in front of the values is the check of
    public bounds: its histograms can come from the values' own pass."""
    return plan.units is None and len(steps) == 1 and isinstance(steps[0], CheckStep)


def _checked_values(plan, step: CheckStep, run: Run, progress) -> Staged[PairwiseResult]:
    """The check of public bounds and the values in one pass, staged: the values'
    pass counts the check's histograms too where its grid holds their edges
    (:class:`~dpmic_dask.release.bounds_check.CheckFromCounts`; the check makes
    its own pass only where it does not), then every check of the values at the
    public row count, the bill of the plan's one cost; then the check's noise
    and the values' noise, paid from the same charge."""
    side = CheckFromCounts(step.plan)
    values = _values(run.frame, run.request, run.selection, progress=progress, side=side)
    try:
        next(values)  # the values' pass and checks; its own bill is part of the plan's
        if side.histograms is None:
            step.before(run)
        else:
            step.hists = side.histograms
    except BaseException:
        values.close()
        raise
    charge = yield _bill(plan, [step], run)
    step.after(run, charge)
    return _finish(values, charge)


#: A charge's description names the release so, unless it has a label.
_DEFAULT_LABEL = {True: "pairwise", False: "selected pairs"}


def _bill(plan, steps, run: Run) -> Bill:
    """The bill of a plan's one cost, with the charge's description (made before
    the charge, from the plan and public facts)."""
    parts = "; ".join(step.describe(run) for step in steps)
    request = plan.request
    values = plan.values_label()
    if plan.selection is None:
        mechanisms = [m.label for m in (request.mechanism, *request.companions)]
    else:  # the selection's own parts, as a release without front steps records them
        values += f" ({plan.selection.parts()})"
        mechanisms = [type(plan.selection.selection).__name__,
                      *(m.label for m in (plan.selection.release, *plan.selection.companions))]
    return Bill(
        plan.cost,
        description=f"{request.label or _DEFAULT_LABEL[plan.selection is None]} "
                    f"({_unit_said(plan)}{parts}; release: "
                    f"{values})",
        mechanism="+".join([*(step.label for step in steps), *mechanisms]),
        columns=request.columns)


def _auto_check(frame, plan):
    """``bounds_check="auto"``: the plan with the check where it can speak at the
    public row count (row level: the row count, or ``min_rows`` after dropping
    nulls), else the plan without it and the report's line saying why."""
    least = plan.auto_fallback or plan.auto_check  # the check needing fewest rows
    rows = (plan.request.min_rows if plan.drop
            else backend_for(frame).row_count(frame, plan.request.columns))
    checked = plan.auto_at(rows)
    if checked is not None:  # the lists left out by the fallback are said
        return checked, (lists_left_line(rows, plan.auto_check.bounds_check)
                         if checked is plan.auto_fallback else None)
    return (dataclasses.replace(plan, auto_check=None, auto_fallback=None),
            auto_lines(rows, least.bounds_check, plan.auto_check.bounds_check))


def _unit_said(plan) -> str:
    """The unit and ``k`` in the charge's description (``per customer_id, at most 8
    rows each; ``), or nothing at row level."""
    return f"{plan.units.statement}; " if plan.units is not None else ""


def _values(frame, request, selection, *, progress=None, side=None) -> Staged[PairwiseResult]:
    """The values step, staged: every pair, or the pairs a selection chooses."""
    if selection is None:
        return release_pairs(frame, request, progress=progress, side=side)
    return release_selected(frame, request, selection, progress=progress, side=side)


def _report(result: PairwiseResult, plan, steps, run: Run) -> PairwiseResult:
    """The result's privacy report, derived from the plan (its one charge and each
    step's part) and what each step released."""
    total = plan.cost
    parts = "; ".join([*(step.describe(run) for step in steps),
                       f"release: {plan.values_label(chosen=len(result.pairs))}"])
    names = " and ".join(step.name for step in steps)
    statement = privacy_statement(total, max(1, len(result.pairs)),
                                  detail=f"{names} and release together; {parts}")
    extra: dict = {}
    if plan.units is not None:
        statement = unit_privacy_statement(statement, plan.units)
        extra = dict(privacy_unit=unit_label(plan.units.unit), max_rows_per_unit=plan.units.k,
                     rows_lower_bound=run.n0, rows_noisy=run.found.get("rows_noisy"))
    # What the values cost: after a selection, the chosen values' own part (the
    # selection's result already holds it), not the selection and values together
    values = result.privacy.release_cost
    privacy = dataclasses.replace(
        result.privacy, epsilon=total.epsilon, delta=total.delta, rho=total.rho, parts=parts,
        release_cost=values or plan.values_part, statement=statement, **extra)
    found = {name: run.found[name] for name in ("private_categories", "bounds_check",
                                                "private_bounds") if name in run.found}
    return dataclasses.replace(result, privacy=privacy, **found)


def _in_kinds(result: PairwiseResult, plan, run: Run | None) -> PairwiseResult:
    """Post-processing for the reader: private bounds printed in each column's kind,
    what ``n`` means after ``nulls="drop"``, and the steps asked for that did
    nothing here."""
    if result.private_bounds is not None and plan.kinds:
        result = dataclasses.replace(result, private_bounds=dataclasses.replace(
            result.private_bounds, kinds={c: k for c, k in plan.kinds.items() if k}))
    typed = {c for c, k in (plan.kinds or {}).items()
             if getattr(k, "implied_bounds", None) is not None}
    private = set(result.private_bounds.bounds) if result.private_bounds is not None else set()
    given = set(result.columns) - typed - private - set(result.private_categories or {})
    if typed and not given and result.bounds_check is None and result.bounds_note is None:
        # no public bounds at all: the report said they were "used as given"
        result = dataclasses.replace(result, bounds_note=(
            "No public bounds given: every column's bounds are released privately or come "
            "from its type (booleans: 0 and 1) or its category list."))
    result = dataclasses.replace(result, public_bounds=_public_bounds(result, plan))
    note = ""
    if plan.drop and plan.units is None:
        note = (f" Rows with a missing value in any of the {len(plan.drop)} columns were "
                f"dropped (nulls='drop'): n = {plan.request.min_rows} is the public minimum "
                "min_rows that every noise scale is calibrated to; the number of rows kept "
                "is not released. The guarantee holds for every table that keeps at least "
                "min_rows rows (docs/privacy.md, 'Dropping rows with nulls').")
    elif plan.drop:
        note = (f" Rows with a missing value in any of the {len(plan.drop)} columns were "
                "dropped (nulls='drop') before bounding each unit's rows; n is the public "
                "lower bound of the kept rows released by the private row count.")
    request = plan.request
    if request.fill is not None:  # public values only: how many rows were filled is not said
        filled = ", ".join(f"{c} {format_value((plan.kinds or {}).get(c), v)}"
                           for c, v in zip(request.columns, request.fill))
        note += (f" Missing values were filled with each column's public fill value "
                 f"(nulls='fill': {filled}); how many rows were filled is not released, and "
                 "a column with many missing values reads as one with a spike at its fill "
                 "value, its MIC lower than its observed values would give.")
    for line in plan.notes:
        note += " " + line
    if note:
        result = dataclasses.replace(result, privacy=dataclasses.replace(
            result.privacy, statement=result.privacy.statement + note))
    return result


def _public_bounds(result: PairwiseResult, plan) -> dict:
    """The public bounds (in each column's kind) and lists the values used; not the
    bounds a type implies (booleans), nor those released privately."""
    private = set(result.private_bounds.bounds) if result.private_bounds is not None else set()
    private |= set(result.private_categories or {})
    lists = dict(plan.request.categories)
    out: dict = {}
    for name, bounds in zip(plan.request.columns, plan.request.bounds):
        kind = (plan.kinds or {}).get(name)
        if name in private or (name not in lists and getattr(kind, "implied_bounds", None)):
            continue
        out[name] = (list(lists[name].categories) if name in lists
                     else tuple(_exact(kind, v) for v in bounds))
    return out


def _exact(kind, value):
    """A public bound exactly, in its column's kind: a float, or a time as ISO text
    (a duration as pandas writes it), never rounded for printing."""
    shown = kind.format(value) if kind is not None and hasattr(kind, "format") else value
    if hasattr(shown, "isoformat") and not isinstance(shown, pd.Timedelta):
        return shown.isoformat()
    return str(shown) if isinstance(shown, pd.Timedelta) else float(shown)


__all__ = ["Staged", "run_charged", "run_release"]
