"""A private check of public bounds: are they far wider than the data?

``bounds_check=0.05`` (job files: ``[bounds] check = 0.05``) spends that share of
a release's budget, inside its one charge, on a noisy histogram of each numeric
or time column with public bounds ``[lo, hi]``: :data:`CHECK_BINS` equal bins of
``[lo, hi]``, values binned exactly as the release bins them (clamped to the
bounds, nulls as the release's null policy), counted per partition and summed.
Each column's histogram gets discrete Laplace noise of scale ``2 / eps_c``
(replacing one row moves one count down and one up; ``docs/privacy.md``, "The
check of public bounds"). A plan step like private categories:
the plan splits the budget before anything is read; the executor counts the
histograms in the release's own pass (:class:`CheckFromCounts`) or, where it
cannot, in a pass of the check's own (:func:`check_partition`, the step's
``before``), checks the release at that row count, charges the total once,
then draws the check's noise and the release's.

What is said about a column is post-processing of its noisy histogram only
(:func:`read_check`): the shortest run of bins holding :data:`COVERAGE` of the
clipped-at-0 noisy mass; when it spans at most :data:`NARROW` of the range and
the noisy total is at least :data:`MIN_TOTAL_SCALES` noise scales, the bounds
are reported as far wider than the values, with the run's edges as a suggestion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.costs import column_epsilon
from dpmic_dask.privacy.histnoise import histogram_scale
from dpmic_dask.privacy.selection import check_share
from dpmic_dask.release.bounds_reading import (
    CHECK_BINS,
    COVERAGE,
    MIN_TOTAL_SCALES,
    NARROW,
    OUTSIDE,
    PILED,
    PILED_NOISE,
    PILED_OTHER,
    ColumnCheck,
    ListCheck,
    read_check,
    read_list,
    shortest_run,
)
from dpmic_dask.release.boundsfound import BoundsCheck
from dpmic_dask.stats.counting import bins, column_values
from dpmic_dask.stats.grids import refinement_cuts
from dpmic_dask.stats.kinds import BooleanKind

#: ``bounds_check="auto"`` (the default): the share the check takes where it can
#: speak (2% of the budget: the values' noise grows by about 2%), and nothing
#: where it cannot (docs/parameters.md, "The check of public bounds").
AUTO = "auto"
AUTO_SHARE = 0.02


def check_bounds_check(share, name: str = "bounds_check") -> float | str | None:
    """``None`` or ``False`` (off), ``"auto"``, or the share of the release's
    budget: a number in (0, 1)."""
    if share is None or share is False:
        return None
    if isinstance(share, str) and share == AUTO:
        return AUTO
    return check_share(share, name)


def rows_to_speak(plan: BoundsCheckPlan) -> int:
    """The least public row count at which the check of ``plan`` can say anything:
    :data:`MIN_TOTAL_SCALES` noise scales, as a whole number of rows (the float
    product's and the scale's safe rounding ignored: 200 scales of 200 need 40,000 rows)."""
    return math.ceil(MIN_TOTAL_SCALES * plan.scale * (1.0 - 1e-9))


def speaks_at(plan: BoundsCheckPlan, rows: int) -> bool:
    """Whether the check of ``plan`` can say anything at ``rows`` public rows (a
    public rule: :func:`rows_to_speak`)."""
    return rows >= rows_to_speak(plan)


def auto_lines(rows: int, plan: BoundsCheckPlan, full: BoundsCheckPlan | None = None) -> str:
    """The report's line when ``"auto"`` left the check off at ``rows`` rows
    (``full``: the check with the category lists, when ``plan`` leaves them out)."""
    need = rows_to_speak(plan)
    lists = full is not None and bool(full.lists) and not plan.lists
    what = "Public bounds and category lists" if plan.lists or lists else "Public bounds"
    more = (f", and the category lists with them from {rows_to_speak(full):,}"  # type: ignore[arg-type]
            if lists else "")
    return (f"{what}: used as given, not checked (bounds_check='auto' checks them with "
            f"{plan.share:.0%} of the budget from {need:,} rows{more} at this budget; "
            f"this release has {rows:,}). bounds_check=<share> checks them at any size; "
            "bounds_check=None turns this off.")


def lists_left_line(rows: int, full: BoundsCheckPlan) -> str:
    """The report's line when ``"auto"`` checked the bounds without the lists."""
    return (f"Category lists of {list(full.lists)}: used as given, not checked "
            f"(bounds_check='auto' checks them with the bounds from "
            f"{rows_to_speak(full):,} rows at this budget; this release has {rows:,}; "
            "bounds_check=<share> checks them at any size).")


@dataclass(frozen=True)
class BoundsCheckPlan:
    """The check step: the checked columns (indices into the request's columns)
    and their public axis bounds, each column's pure ``eps_column`` and noise
    scale, the check's ``cost``, the release's prepaid ``release_part`` and the
    ``total`` charged once."""

    columns: tuple
    indices: tuple
    bounds: tuple
    eps_column: float
    scale: float
    cost: PrivacyCost
    release_part: PrivacyCost
    total: PrivacyCost
    share: float
    kinds: dict = field(default_factory=dict)
    #: L1 sensitivity of one column's histogram: 2 (replacing a row), or ``k``
    #: per unit (adding or removing a unit's at most ``k`` bounded rows).
    sensitivity: int = 2
    #: The categorical columns among ``columns`` (public lists, bounds ``(0, K)``):
    #: each counted in two bins, rows in its list and rows in its "other" code.
    lists: tuple = ()

    def describe(self) -> str:
        said = f"{CHECK_BINS} bins" if len(self.lists) < len(self.columns) else ""
        if self.lists:
            said += ("; " if said else "") + "categorical: rows outside the list"
        return (f"bounds check of {list(self.columns)}: {self.cost.describe()}, epsilon "
                f"{self.eps_column:.4g} per column ({said}, noise scale "
                f"{self.scale:.4g} counts)")

    def counted_in(self, column) -> int:
        """How many counts the check releases for ``column``."""
        return 2 if column in self.lists else CHECK_BINS


def plan_bounds_check(request, kinds: dict | None, share: float, costs, *, exclude=(),
                      sensitivity: int = 2) -> BoundsCheckPlan:
    """The check of ``request``'s numeric and time columns (not booleans, whose
    bounds the type gives, nor the ``exclude``d ones whose bounds or categories are
    private) and of its categorical columns with public lists (the rows outside
    the list), paid from ``costs`` (``(check part, release part, total)``).
    Refuses a release with nothing to check, or a scale that cannot be sampled.
    Nothing is read."""
    part, release_part, total = costs
    kinds = kinds or {}
    categorical = {name for name, _ in request.categories}
    chosen = [k for k, name in enumerate(request.columns)
              if name not in exclude and not isinstance(kinds.get(name), BooleanKind)]
    if not chosen:
        raise InvalidParameterError(
            "bounds_check has nothing to check: no numeric or time column with public "
            "bounds, nor a categorical column with a public list")
    eps_column = column_epsilon(part, len(chosen))
    scale = histogram_scale(eps_column, sensitivity)  # refused now if it cannot be sampled
    cost = part.pure_part()
    names = tuple(request.columns[k] for k in chosen)
    return BoundsCheckPlan(names, tuple(chosen), tuple(request.bounds[k] for k in chosen),
                           eps_column, scale, cost, release_part, total, share,
                           {c: kinds[c] for c in names if kinds.get(c) is not None},
                           sensitivity, tuple(c for c in names if c in categorical))


# ------------------------------------------------------------------ counting


def check_partition(frame, *, columns, checked, bounds, fill, lists=()):
    """One partition: the checked columns' exact histograms (``CHECK_BINS`` equal
    bins of their public bounds, values clamped to them as the release clamps;
    for the categorical columns at ``lists``, indices into ``checked``, the rows
    in the list and the rows in "other", the last code, in the first two bins),
    the row count and every column's missing flag. A missing value is replaced by
    the column's public fill value, or (without one) flagged and not counted: the
    release is then refused before the charge. Every column is converted, so a
    cell that is not a number is refused here."""
    hists = np.zeros((len(checked), CHECK_BINS), dtype=np.int64)
    missing = np.zeros(len(columns), dtype=bool)
    where = {k: at for at, k in enumerate(checked)}
    for k, name in enumerate(columns):
        v = column_values(frame, name)
        nan = np.isnan(v)
        if nan.any():
            missing[k] = True
            v = v[~nan] if fill is None else np.where(nan, fill[k], v)
        if k in where:
            at = where[k]
            if at in lists:  # codes are code + 0.5 in (0, K): "other" is K - 0.5
                other = int(np.count_nonzero(v > bounds[at][1] - 1.0))
                hists[at, :2] += (v.size - other, other)
            else:
                hists[at] += np.bincount(bins(v, bounds[at], CHECK_BINS),
                                         minlength=CHECK_BINS)
    return hists, len(frame), missing


def _add(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] | b[2]


class CheckFromCounts:
    """The check's histograms read off the values' own pass, with no pass of its
    own: each checked column's counts on the joint refinement of the values'
    grids (every value in the cell the release bins it to) summed over the
    cells of each of the :data:`CHECK_BINS` equal bins. The same counts as
    :func:`check_partition`'s, bin for bin, when the refinement holds the bins'
    edges (every grid family from ``B = 32`` on, and some smaller ones);
    ``histograms`` stays ``None`` otherwise, and the check makes its own pass."""

    def __init__(self, plan: BoundsCheckPlan):
        self.plan = plan
        self.histograms: np.ndarray | None = None

    def columns_for(self, layout) -> tuple:
        """The checked columns, when ``layout``'s joint refinement holds the
        check's bin edges; none otherwise."""
        return self.plan.columns if self._cuts(layout) is not None else ()

    def counted(self, layout, marginals: dict) -> None:
        """The check's histograms from each checked column's ``marginals``."""
        cuts = self._cuts(layout)
        assert cuts is not None
        rows = []
        for c, cut in zip(self.plan.columns, cuts):
            if c in self.plan.lists:  # rows in the list, rows in "other" (the last code)
                row = np.zeros(CHECK_BINS, dtype=np.int64)
                row[:2] = (marginals[c][:cut[-2]].sum(), marginals[c][cut[-2]:].sum())
                rows.append(row)
            else:
                rows.append(np.add.reduceat(marginals[c], cut[:-1]))
        self.histograms = np.stack(rows)

    def _cuts(self, layout):
        """Each checked column's cuts: the check's bins, or a categorical column's
        ``K`` codes (``None`` when the refinement lacks an edge of either)."""
        boundaries = layout.joint.boundaries
        try:
            return [refinement_cuts(boundaries, int(b[1]) if c in self.plan.lists
                                    else CHECK_BINS)
                    for c, b in zip(self.plan.columns, self.plan.bounds)]
        except ValueError:  # the refinement lacks an edge of the check's bins
            return None


__all__ = ["CHECK_BINS", "COVERAGE", "MIN_TOTAL_SCALES", "NARROW", "OUTSIDE", "PILED",
           "PILED_NOISE", "PILED_OTHER", "BoundsCheck", "BoundsCheckPlan", "CheckFromCounts",
           "ColumnCheck", "ListCheck", "check_bounds_check", "plan_bounds_check", "read_check",
           "read_list", "shortest_run"]
