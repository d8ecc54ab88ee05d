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

from dpmic_dask.errors import (
    BoundsWarning,
    InvalidParameterError,
    shown,
    user_stacklevel,
)
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.costs import column_epsilon
from dpmic_dask.privacy.histnoise import histogram_scale
from dpmic_dask.privacy.selection import check_share
from dpmic_dask.release.bounds_reading import (
    CHECK_BINS,
    COVERAGE,
    MIN_TOTAL_SCALES,
    NARROW,
    PILED,
    PILED_NOISE,
    PILED_OTHER,
    ColumnCheck,
    read_check,
    shortest_run,
)
from dpmic_dask.stats.counting import bins, column_values
from dpmic_dask.stats.grids import refinement_cuts
from dpmic_dask.stats.kinds import BooleanKind, format_value

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


def auto_lines(rows: int, plan: BoundsCheckPlan) -> str:
    """The report's line when ``"auto"`` left the check off at ``rows`` rows."""
    need = rows_to_speak(plan)
    return (f"Public bounds: used as given, not checked (bounds_check='auto' checks them with "
            f"{plan.share:.0%} of the budget from {need:,} rows at this budget; "
            f"this release has {rows:,}). bounds_check=<share> checks them at any size; "
            "bounds_check=None turns this off.")


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

    def describe(self) -> str:
        return (f"bounds check of {list(self.columns)}: {self.cost.describe()}, epsilon "
                f"{self.eps_column:.4g} per column ({CHECK_BINS} bins, noise scale "
                f"{self.scale:.4g} counts)")


def plan_bounds_check(request, kinds: dict | None, share: float, costs, *, exclude=(),
                      sensitivity: int = 2) -> BoundsCheckPlan:
    """The check of ``request``'s numeric and time columns (not booleans, whose
    bounds the type gives, nor categorical columns, nor the ``exclude``d ones whose
    bounds are private), paid from ``costs`` (``(check part, release part,
    total)``). Refuses a release with nothing to check, or a scale that cannot be
    sampled. Nothing is read."""
    part, release_part, total = costs
    kinds = kinds or {}
    categorical = {name for name, _ in request.categories}
    chosen = [k for k, name in enumerate(request.columns)
              if name not in categorical and name not in exclude
              and not isinstance(kinds.get(name), BooleanKind)]
    if not chosen:
        raise InvalidParameterError(
            "bounds_check has nothing to check: no numeric or time column with public bounds")
    eps_column = column_epsilon(part, len(chosen))
    scale = histogram_scale(eps_column, sensitivity)  # refused now if it cannot be sampled
    cost = part.pure_part()
    names = tuple(request.columns[k] for k in chosen)
    return BoundsCheckPlan(names, tuple(chosen), tuple(request.bounds[k] for k in chosen),
                           eps_column, scale, cost, release_part, total, share,
                           {c: kinds[c] for c in names if kinds.get(c) is not None},
                           sensitivity)


# ------------------------------------------------------------------ counting


def check_partition(frame, *, columns, checked, bounds, fill):
    """One partition: the checked columns' exact histograms (``CHECK_BINS`` equal
    bins of their public bounds, values clamped to them as the release clamps),
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
            hists[at] += np.bincount(bins(v, bounds[at], CHECK_BINS), minlength=CHECK_BINS)
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
        self.histograms = np.stack([np.add.reduceat(marginals[c], cuts[:-1])
                                    for c in self.plan.columns])

    @staticmethod
    def _cuts(layout):
        try:
            return refinement_cuts(layout.joint.boundaries, CHECK_BINS)
        except ValueError:  # the refinement lacks an edge of the check's bins
            return None


@dataclass(frozen=True)
class BoundsCheck:
    """The released check of public bounds (plain numbers; ``docs/privacy.md``,
    "The check of public bounds").

    ``histograms[column]`` is the column's noisy histogram (``bins`` equal bins
    of ``bounds[column]``, discrete Laplace of scale ``noise_scale`` counts on each
    count; ``epsilon_per_column`` each, ``cost`` in all); ``checks[column]`` what
    it says (:class:`ColumnCheck`); ``wide`` the columns whose public bounds look
    far wider than their values. Bounds are axis numbers (times: seconds since the
    epoch, UTC); :meth:`formatted` prints them in the column's kind.
    """

    bounds: dict
    histograms: dict
    checks: dict
    noise_scale: float
    epsilon_per_column: float
    cost: PrivacyCost
    bins: int = CHECK_BINS
    kinds: dict = field(default_factory=dict)
    seeded: bool = False

    @property
    def wide(self) -> tuple:
        return tuple(c for c, found in self.checks.items() if found.wide)

    def formatted(self, column, numbers) -> tuple[str, str]:

        kind = self.kinds.get(column)
        return tuple(format_value(kind, x) for x in numbers)  # type: ignore[return-value]

    def suggested(self, column) -> tuple | None:
        """The run's edges as bounds in the column's own kind (``None``: no run)."""
        edges = self.checks[column].edges
        if edges is None:
            return None
        kind = self.kinds.get(column)
        if kind is None:
            return tuple(float(x) for x in edges)
        return tuple(kind.format(x) for x in edges)

    def message(self, column) -> str:
        found = self.checks[column]
        a, b = self.formatted(column, found.edges)
        first, last = found.run
        edge = advice = ""
        if first == 0 or last == self.bins - 1:  # the mass is at a bound
            lo, hi = self.formatted(column, self.bounds[column])
            bound = lo if first == 0 else hi
            edge = (f", at its {'lower' if first == 0 else 'upper'} bound: values beyond "
                    f"{bound} would be clamped there and look the same")
            # the mass may be values clamped from beyond the bound (a wrong unit, a
            # shifted column): then tighter bounds inside would clamp them all again
            advice = (f" if the column does not run past {bound}; if it does, bounds that "
                      "hold its values")
        return (f"column {column}: its public bounds look at least {found.ratio:.3g}x wider "
                f"than its values (the private check puts {COVERAGE:.0%} of rows in "
                f"{a}..{b}{edge}); MIC is lower than tighter bounds would give; consider "
                f"bounds {a}..{b}{advice}")

    def piled_messages(self) -> list[str]:
        """One line per column (not read as wide) whose rows pile up in an end bin."""
        out = []
        for column, found in self.checks.items():
            if found.piled is None or found.wide:
                continue
            lo, hi = self.formatted(column, self.bounds[column])
            bound = lo if found.piled == "lower" else hi
            share = min(found.piled_share or 0.0, 1.0)  # the noise can take it past 1
            out.append(f"column {column}: the private check puts {share:.0%} of "
                       f"its rows in the bin at its {found.piled} bound {bound} (the "
                       f"{'first' if found.piled == 'lower' else 'last'} {CHECK_BINS}th of "
                       "its range), and the other end bin next to none: either the bounds "
                       "are far wider than its values, or values beyond "
                       f"{bound} are clamped to it and look the same; either way MIC is "
                       "lower than bounds that fit the values would give")
        return out

    def lines(self) -> list[str]:
        """The report's lines: what was checked and what it found."""
        lines = [f"Public bounds checked privately ({len(self.bounds)} column(s), "
                 f"{self.bins} equal bins each, epsilon {self.epsilon_per_column:.4g} per "
                 f"column, noise scale {self.noise_scale:.4g} counts; {self.cost.describe()} "
                 "of the total)."]
        lines += [self.message(c) for c in self.wide]
        lines += self.piled_messages()
        unsure = [c for c, f in self.checks.items() if not f.confident]
        if unsure:
            lines.append(f"Bounds check inconclusive for {unsure}: the noisy row count is "
                         f"below {MIN_TOTAL_SCALES} noise scales (more rows or a larger "
                         "bounds_check share make it conclusive).")
        untold = self.untold
        if untold:
            lines.append(f"Bounds check cannot tell for {untold}: the noise of the empty "
                         f"bins could hide values that all lie within {NARROW:.0%} of the "
                         "bounds (more rows or a larger bounds_check share tell).")
        if not self.wide and len(unsure) + len(untold) < len(self.checks):
            others = "other " if unsure or untold else ""
            lines.append(f"No {others}checked column's public bounds look far wider than "
                         "its values.")
        return lines

    @property
    def untold(self) -> list:
        """Columns read with enough rows whose reading settles nothing (not wide,
        and not shown to spread beyond a quarter of the range)."""
        return [c for c, f in self.checks.items() if f.confident and not f.settled]


def _show(messages) -> None:
    """Each message as a :class:`BoundsWarning` pointing at the caller's line
    (``frame.dpmic.pairwise(...)``), never raised: after the charge nothing may
    refuse, even under a warnings-as-errors filter."""
    level = user_stacklevel()
    for message in messages:
        shown(message, BoundsWarning, stacklevel=level)


__all__ = ["CHECK_BINS", "COVERAGE", "MIN_TOTAL_SCALES", "NARROW", "PILED", "PILED_NOISE",
           "PILED_OTHER", "BoundsCheck",
           "BoundsCheckPlan", "CheckFromCounts", "ColumnCheck", "check_bounds_check",
           "plan_bounds_check", "read_check", "shortest_run"]
