"""The released check of public bounds (:class:`BoundsCheck`): plain numbers and
what they say, post-processing of the noisy counts only
(:mod:`dpmic_dask.release.bounds_check` plans and counts it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dpmic_dask.errors import BoundsWarning, shown, user_stacklevel
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.release.bounds_reading import (
    CHECK_BINS,
    COVERAGE,
    MIN_TOTAL_SCALES,
    NARROW,
    OUTSIDE,
)
from dpmic_dask.stats.kinds import format_value

#: An end bin read as ``at_bound`` is also a warning from this share of the rows
#: (below it, a line in the report: a zero-inflated column at its bound 0 is common).
AT_BOUND_WARNED = 0.75


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
    #: The categorical columns' readings (:class:`ListCheck`; their histograms
    #: hold two counts: rows in the public list, rows outside it).
    lists: dict = field(default_factory=dict)

    @property
    def outside(self) -> tuple:
        """The categorical columns with at least :data:`OUTSIDE` of their rows
        (noisy) outside their public lists."""
        return tuple(c for c, found in self.lists.items() if found.outside)

    def outside_message(self, column) -> str:
        share = min(self.lists[column].share or 0.0, 1.0)
        return (f"column {column}: the private check puts {share:.0%} of its rows outside "
                "its public category list, all in its one 'other' bin, which MIC reads as "
                "one category (a value written otherwise than the list -- another case, "
                "spacing or type -- lands there too, and a list matching none of the "
                "values reads about 0): check the list against the column's values")

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
        alone = ("; nearly all its rows sit in one bin, so if it is about constant its "
                 "pairs' MIC is about 0 whatever its bounds" if found.one_bin else "")
        return (f"column {column}: its public bounds look at least {found.ratio:.3g}x wider "
                f"than its values (the private check puts {COVERAGE:.0%} of rows in "
                f"{a}..{b}{edge}); MIC is lower than tighter bounds would give; consider "
                f"bounds {a}..{b}{advice}{alone}")

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

    def bound_messages(self) -> list[tuple[str, bool]]:
        """One line per column whose end bins hold far more than their neighbours
        (values at a bound, or beyond it and clamped), or whose rows sit in one
        inner bin; each with whether it is also a warning (one end holding at
        least :data:`AT_BOUND_WARNED` of the rows, the other end not a spike)."""
        out = []
        for column, found in self.checks.items():
            lo, hi = self.formatted(column, self.bounds[column])
            if found.at_bound:
                said = " and ".join(
                    f"{min(share, 1.0):.0%}{' of its rows' if k == 0 else ''} in the bin at "
                    f"its {side} bound {lo if side == 'lower' else hi}"
                    for k, (side, share) in enumerate(found.at_bound))
                both = len(found.at_bound) == 2
                out.append((
                    f"column {column}: the private check puts {said} (a {CHECK_BINS}th of "
                    f"its range), far more than in the bin{'s' if both else ''} next to "
                    f"{'them' if both else 'it'}: values beyond a bound are clamped to it "
                    "and look the same as values at it; if the column runs past its "
                    "bounds, its MIC is lower than bounds that hold its values would give"
                    + (" (a column of two values, one at each bound, reads so too)"
                       if both else ""),
                    not both and found.at_bound[0][1] >= AT_BOUND_WARNED
                    and not found.other_end_spike))
            if found.one_bin is not None and not found.wide:  # wide: its message says it
                at, share = found.one_bin
                width = self.bounds[column][1] - self.bounds[column][0]
                a, b = self.formatted(column, (self.bounds[column][0] + width * at / CHECK_BINS,
                                               self.bounds[column][0]
                                               + width * (at + 1) / CHECK_BINS))
                out.append((
                    f"column {column}: the private check puts {min(share, 1.0):.0%} of its "
                    f"rows in one bin, {a}..{b} (a {CHECK_BINS}th of its range): most of "
                    "its values are one value or a narrow range there, which caps what its "
                    "pairs' MIC can show (about 0 for a constant column)", True))
        return out

    def lines(self) -> list[str]:
        """The report's lines: what was checked and what it found."""
        numeric = len(self.checks)
        how = (f"{self.bins} equal bins each" if numeric else "") + (
            ("; " if numeric else "") + "categorical: rows outside the list" if self.lists
            else "")
        lines = [f"Public bounds checked privately ({len(self.bounds)} column(s), "
                 f"{how}, epsilon {self.epsilon_per_column:.4g} per "
                 f"column, noise scale {self.noise_scale:.4g} counts; {self.cost.describe()} "
                 "of the total)."]
        lines += [self.message(c) for c in self.wide]
        lines += self.piled_messages()
        lines += [line for line, _ in self.bound_messages()]
        lines += [self.outside_message(c) for c in self.outside]
        unsure = [c for c, f in (*self.checks.items(), *self.lists.items())
                  if not f.confident]
        if unsure:
            lines.append(f"Bounds check inconclusive for {unsure}: the noisy row count is "
                         f"below {MIN_TOTAL_SCALES} noise scales (more rows or a larger "
                         "bounds_check share make it conclusive).")
        untold = self.untold
        if untold:
            lines.append(f"Bounds check cannot tell for {untold}: the noise of the empty "
                         f"bins could hide values that all lie within {NARROW:.0%} of the "
                         "bounds (more rows or a larger bounds_check share tell).")
        vague = [c for c, f in self.checks.items() if c in unsure or c in untold or f.said]
        if not self.wide and len(vague) < numeric:
            others = "other " if vague else ""
            lines.append(f"No {others}checked column's public bounds look far wider than "
                         "its values.")
        told = [c for c, f in self.lists.items() if f.confident]
        if told and not self.outside:
            others = "other " if len(told) < len(self.lists) else ""
            lines.append(f"No {others}checked categorical column has {OUTSIDE:.0%} or more "
                         "of its rows outside its public list.")
        return lines

    @property
    def untold(self) -> list:
        """Columns read with enough rows whose reading settles nothing (not wide,
        and not shown to spread beyond a quarter of the range)."""
        return [c for c, f in self.checks.items()
                if f.confident and not f.settled and not f.said]


def show_messages(messages) -> None:
    """Each message as a :class:`BoundsWarning` pointing at the caller's line
    (``frame.dpmic.pairwise(...)``), never raised: after the charge nothing may
    refuse, even under a warnings-as-errors filter."""
    level = user_stacklevel()
    for message in messages:
        shown(message, BoundsWarning, stacklevel=level)


__all__ = ["AT_BOUND_WARNED", "BoundsCheck", "show_messages"]
