"""A release plan as users see it: its steps, its one cost, its noise, and
:meth:`Plan.release`.

``plan = frame.dpmic.plan(eps, ...)`` takes ``pairwise``'s arguments (and
``top_k`` or ``threshold`` with ``max_pairs`` for a selection), reads the
frame's schema only, and returns a :class:`Plan`: nothing is read, nothing is
charged. ``plan.explain()`` says what the release will do; ``plan.cost`` is
the one charge; ``plan.release(ledger=...)`` runs it (each call is a new
release, charged again). ``pairwise(...)`` is ``plan(...).release()``.
"""

from __future__ import annotations

from dpmic_dask.config import resolve
from dpmic_dask.errors import DPMICError, counted
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.release.bounds_check import auto_lines, lists_left_line, rows_to_speak
from dpmic_dask.release.boundsspec import DEFAULT_SETTINGS
from dpmic_dask.release.executor import run_release
from dpmic_dask.release.unitbase import noise_at
from dpmic_dask.stats.defaults import capped_at
from dpmic_dask.stats.kinds import format_bounds

#: Row counts at which the noise is shown when the plan has no public one.
SHOWN_ROWS = (10_000, 100_000, 1_000_000)


class Plan:
    """A planned release of one frame (nothing read, nothing charged)."""

    def __init__(self, frame, planned, known_rows: int | None = None):
        self._frame = frame
        self._planned = planned
        self._known_rows = known_rows

    @property
    def cost(self) -> PrivacyCost:
        """The one charge the release makes (typed: pure ``epsilon``, or zCDP ``rho``
        with its ``(epsilon, delta)``)."""
        return self._planned.cost

    @property
    def planned(self):
        """The :class:`~dpmic_dask.release.plan.ReleasePlan` behind this plan."""
        return self._planned

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps in the order they run, in words."""
        return self._planned.steps

    def release(self, *, ledger=None, dataset=None, progress=None):
        """Run the plan: every check before one charge of :attr:`cost`, then noise.

        The plan's ``task_memory`` and ``split_every`` were read when it was made;
        ``progress`` (default: :mod:`dpmic_dask.config`) is read now, once."""
        return run_release(self._frame, self._planned, ledger=ledger, dataset=dataset,
                           progress=resolve("progress", progress))

    def explain(self, rows: int | None = None, *, show: bool = True) -> str:
        """What the release does, in words: its steps and each one's part of the one
        charge, each column's kind and where its bounds and categories come from,
        and the noise scale and ``ci95`` each pair's value will get at ``rows`` rows
        (default: the plan's public row count where it has one, else a few sizes).
        Printed (``show=False``: only returned)."""
        text = "\n".join(explain_lines(self._planned, rows or self._known_rows))
        if show:
            print(text)
        return text

    def __repr__(self) -> str:
        return (f"<Plan: {' -> '.join(self.steps)}; one charge of "
                f"{self.cost.describe()}>")


def explain_lines(planned, rows: int | None) -> list[str]:
    """:meth:`Plan.explain`'s lines."""
    request = planned.request
    cost = planned.cost
    head = f"epsilon {cost.epsilon:g}" + (f", delta {cost.delta:g}" if cost.delta else "")
    lines = [f"Release plan: {counted(len(request.columns), 'column')}, "
             f"{counted(request.n_pairs, 'pair')}; one "
             f"charge of {head} ({cost.describe()})."]
    units = planned.units
    if units is not None:
        lines.append(f"Privacy unit: {units.statement}; neighbouring tables differ by all "
                     "rows of one unit.")
    else:
        lines.append("Privacy unit: one row.")
    # bounds_check="auto": the release runs the check where it can speak at the
    # public row count (min_rows after dropping nulls), as the executor decides
    auto = planned.auto_check
    public = request.min_rows if planned.drop and units is None else rows
    chosen = auto if public is None else planned.auto_at(public)
    runs = chosen is not None
    shown = chosen if runs else planned
    lines.append("Steps, in order:")
    for number, (name, said) in enumerate(_step_lines(shown), start=1):
        if name == "bounds check" and auto is not None and public is None:
            name = (f"bounds check (automatic: only from {rows_to_speak(auto.bounds_check):,} "
                    "rows, which the row count read before the charge decides)")
        lines.append(f"  {number}. {name}: {said}")
    fallback = planned.auto_fallback
    if auto is not None and public is None and fallback is not None:
        # from the fallback's size to the full check's, the lists are left out
        lines.append(f"  From {rows_to_speak(fallback.bounds_check):,} to "
                     f"{rows_to_speak(auto.bounds_check) - 1:,} rows the check leaves the "
                     f"category lists {list(auto.bounds_check.lists)} out: " + "; ".join(
                         f"{name}: {said}" for name, said in _step_lines(fallback)) + ".")
    if auto is not None and public is None:  # both ways: each list adds up to the charge
        least = (fallback or auto).bounds_check
        lines.append(f"  Below {rows_to_speak(least):,} rows the check is left "
                     "out and its part goes to the other steps: " + "; ".join(
                         f"{name}: {said}" for name, said in _step_lines(planned)) + ".")
    lines.append("Columns:")
    lines.extend("  " + line for line in _column_lines(shown))
    lines.append("Noise of each released value:")
    lines.extend("  " + line for line in _noise_lines(planned, rows))
    if auto is not None and public is not None and not runs:
        lines.append(auto_lines(public, (planned.auto_fallback or auto).bounds_check,
                                auto.bounds_check))
    elif auto is not None and public is not None and chosen is planned.auto_fallback:
        lines.append(lists_left_line(public, auto.bounds_check))
    lines.extend(planned.notes)
    return lines


def _step_lines(planned) -> list[tuple[str, str]]:
    """Each step's name and its own part of the one charge (the parts add up to
    it)."""
    out = []
    if planned.units is not None:
        out.append(("contribution bounding and row count",
                    f"at most {planned.units.k} rows per unit kept (a keyed hash, fresh key); "
                    + planned.units.rowcount.describe()))
    if planned.private_categories is not None:
        step = planned.private_categories
        out.append(("private categories", f"{step.describe()} (noise scale {step.scale:.4g} "
                                          "on each count)"))
    if planned.bounds_check is not None:
        out.append(("bounds check", planned.bounds_check.describe()))
    if planned.bounds is not None:
        out.append(("private bounds", planned.bounds.bounds.describe()))
    if planned.selection is not None:
        out.append(("selection", planned.selection.selection.description))
    out.append(("values", _values_said(planned)))
    return out


def _values_said(planned) -> str:
    """The values step's own part: after a selection the chosen values' (the
    selection has its own line), so that the steps' parts add up to the charge."""
    if planned.selection is None:
        return planned.values_label()
    selected = planned.selection
    return "the chosen pairs' values: " + ", ".join(
        f"{m.label} with {m.cost.describe()}" for m in (selected.release,
                                                         *selected.companions))


def _column_lines(planned) -> list[str]:
    request = planned.request
    kinds = planned.kinds or {}
    categories = dict(request.categories)
    private_categories = planned.private_categories
    chosen = private_categories.axes if private_categories is not None else {}
    private_bounds = set(planned.bounds.bounds.columns) if planned.bounds is not None else set()
    checked = set(planned.bounds_check.columns) if planned.bounds_check is not None else set()
    width = max(len(str(c)) for c in request.columns)
    out = []
    for name, bounds in zip(request.columns, request.bounds):
        kind = kinds.get(name)
        kind_name = "number" if kind is None else getattr(kind, "name", "number")
        if name in chosen:
            where = ("categories chosen privately from the values that occur"
                     if name in private_categories.unknown else
                     f"categories chosen privately among {len(chosen[name].categories)} "
                     "public candidates")
        elif name in categories:
            where = (f"{len(categories[name].categories)} public categories (others: 'other')"
                     + (", checked privately" if name in checked else ""))
        elif name in private_bounds:
            where = "bounds released privately (private bounds step" + _settings(
                planned.bounds.bounds, name, kind) + ")"
        elif getattr(kind, "implied_bounds", None) is not None:
            where = "bounds (0, 1) from its type"
        else:
            where = f"public bounds {format_bounds(kind, bounds)}" + (
                ", checked privately" if name in checked else "")
        out.append(f"{str(name):<{width}}  {kind_name:<9}  {where}")
    return out


def _settings(plan, name, kind) -> str:
    """A private-bounds column's settings that are not the defaults, in words
    (``"; coverage 0.95, public domain [0, 1e+06], first pass only"``), or ``""``."""
    index = plan.columns.index(name)
    said = []
    if plan.coverages[index] != DEFAULT_SETTINGS["coverage"]:
        said.append(f"coverage {plan.coverages[index]:g}")
    if plan.grids[index].domain is not None:
        said.append(f"public domain {format_bounds(kind, plan.grids[index].domain)}")
    if plan.refines and not plan.refines[index]:
        said.append("first pass only")
    return "; " + ", ".join(said) if said else ""


def _noise_lines(planned, rows: int | None) -> list[str]:
    request = planned.request
    if planned.drop and planned.units is None:
        sizes = [request.min_rows]
        said = "at the public min_rows"
    elif rows is not None:
        sizes = [int(rows)]
        said = "at the public row count" if planned.units is None else "at n0"
    else:
        sizes = list(SHOWN_ROWS)
        said = ("per unit at n0, the released lower bound of the bounded rows"
                if planned.units is not None else "the row count is not known before reading")
    out = []
    for n in sizes:
        # bounds_check="auto" releases the plan with the check wherever the check
        # can speak at this row count (its share widens the values' noise)
        at = planned.auto_at(n) or planned
        try:
            noise = noise_at(at, n)
        except DPMICError as exc:
            out.append(f"n = {n:,}: refused at this size ({exc})")
            continue
        values = request.B is None and request.mechanism.grid_kind == "values"
        cap = capped_at(noise.ci95, noise.B) if values else None
        capped = "" if cap is None else f"; the default B is capped at {cap} for noise this wide"
        out.append(f"n = {n:,}: {noise.mechanism}, noise scale {noise.noise_scale:.4g}, "
                   f"ci95 +/-{noise.ci95:.3g} (B = {noise.B:g}, c = {noise.c}{capped})")
    return [f"({said})", *out]


__all__ = ["Plan", "explain_lines"]
