"""Private bounds from noisy histograms: the plan of the passes over each column
(:class:`BoundsPlan`: the coverage, the domain, whether to refine), the exact
per-column histograms counted where the partitions are and their noise (drawn
after the charge). :mod:`dpmic_dask.release.boundsread` reads the bounds off
them; :mod:`dpmic_dask.release.private_bounds` runs them alone or before a
release.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from dpmic_dask.checks import MIN_ROWS, check_frame_request, refuse_missing
from dpmic_dask.errors import (
    BoundsWarning,
    InvalidDataError,
    InvalidParameterError,
    shown,
    user_stacklevel,
)
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.bounds import (
    FIRST_PASS_SHARE,
    OUTER_EDGE,
    BoundsGrid,
    check_coverage,
    check_domain,
    noise_threshold,
)
from dpmic_dask.privacy.costs import column_epsilon
from dpmic_dask.privacy.histnoise import histogram_scale, noisy_histograms  # noqa: F401
from dpmic_dask.release.boundsspec import DEFAULT_SETTINGS, check_refine
from dpmic_dask.stats.counting import column_values
from dpmic_dask.stats.sensitivity import safe_down, safe_up


def _bounds_partition(frame, *, columns, grids, fill, finite=False):
    """One partition's exact histograms of the columns with a grid (``grids[k]``
    not ``None``, each on its own grid), its row count, and every column's
    missing-value flag. Every column is converted (a cell that is not a number is
    refused here), so a release that reads more columns later has nothing left
    to find. ``finite``: values in the first pass's outermost bins (``+-inf`` and
    sizes past ``OUTER_EDGE``, about ``3e307``) are counted in no bin (the refining
    pass: no bound is read there, and the first pass counted them)."""
    hists, missing = [], np.zeros(len(columns), dtype=bool)
    for k, name in enumerate(columns):
        v = column_values(frame, name)
        nan = np.isnan(v)
        if nan.any():
            missing[k] = True
            v = np.where(nan, fill[k], v) if fill is not None else v[~nan]
        if finite:  # as the first pass's outermost bins: +-inf and sizes past 3e307
            v = v[np.abs(v) < OUTER_EDGE]
        if grids[k] is not None:
            hists.append(np.bincount(grids[k].index(v), minlength=grids[k].size))
    return tuple(hists), len(frame), missing


def _add_histograms(a, b):
    return tuple(x + y for x, y in zip(a[0], b[0])), a[1] + b[1], a[2] | b[2]


def per_column(value, columns, check, what: str) -> tuple:
    """One checked setting per column: ``value`` for all, or a dict by column name
    (columns it does not name take ``default``, the value of key ``None`` if any)."""
    if isinstance(value, dict):
        unknown = [c for c in value if c is not None and c not in columns]
        if unknown:
            raise InvalidParameterError(f"{what} names column(s) {unknown} that are not "
                                        "estimated privately")
        default = value.get(None, _DEFAULTS[what])
        return tuple(check(value.get(c, default)) for c in columns)
    return tuple(check(value) for _ in columns)


_DEFAULTS = DEFAULT_SETTINGS


#: Warn before the charge when a bin needs more than this share of the rows.
BLIND_SHARE = 8
@dataclass(frozen=True)
class BoundsPlan:
    """The bounds step: its columns, each column's first-pass grid and coverage,
    and the noise. ``eps`` is the sum of the columns' epsilons (its pure-DP cost);
    ``rho`` its zCDP cost when it is part of a zCDP release (the columns'
    ``eps_column**2 / 2`` added up), else ``None``. Each column's ``eps_column``
    is split: ``FIRST_PASS_SHARE`` to the first pass, the rest to the refining one."""

    columns: tuple
    eps: float
    eps_column: float
    coverages: tuple
    grids: tuple
    fill: tuple | None
    rho: float | None = None
    refines: tuple = ()
    #: L1 sensitivity of one column's histogram: 2 (replace one row), or ``k`` per
    #: unit (add/remove one unit's at most ``k`` rows of the bounded frame).
    sensitivity: float = 2.0
    #: ``(unit label, k)`` per unit, else ``None``.
    unit: tuple | None = None

    def scale(self, eps_pass: float) -> float:
        """The histogram noise scale of a pass (checked before anything is read)."""
        return histogram_scale(eps_pass, self.sensitivity)

    def draw(self, rows, eps_pass: float):
        """Noisy histograms of a pass at this plan's sensitivity."""
        if self.sensitivity == 2.0:
            return noisy_histograms(rows, eps_pass)
        return noisy_histograms(rows, eps_pass, sensitivity=self.sensitivity)

    def checked_scales(self) -> None:
        """Refuse now a scale that cannot be sampled (only the passes run)."""
        for eps_pass in ((self.eps_first, self.eps_second) if any(self.refines)
                         else (self.eps_column,)):
            self.scale(eps_pass)

    def per_unit(self, unit_label: str, k: int) -> BoundsPlan:
        """The plan on a frame bounded to ``k`` rows per unit: sensitivity ``k``."""
        plan = dataclasses.replace(self, sensitivity=float(k), unit=(unit_label, int(k)))
        plan.checked_scales()
        return plan

    @property
    def eps_first(self) -> float:
        return safe_down(self.eps_column * FIRST_PASS_SHARE)

    @property
    def eps_second(self) -> float:
        return safe_down(self.eps_column - safe_up(self.eps_column * FIRST_PASS_SHARE))

    def zcdp_rho(self, eps_column: float | None = None) -> float:
        """The zCDP cost of the passes at ``eps_column`` (this plan's by default):
        each pure ``e``-DP histogram is ``e**2 / 2``-zCDP and they add up -- per
        column ``eps_first**2 / 2 + eps_second**2 / 2`` when it is refined (0.58 of
        ``eps_column**2 / 2`` at the 0.3 / 0.7 split), else ``eps_column**2 / 2``."""
        plan = self if eps_column is None else dataclasses.replace(self,
                                                                   eps_column=eps_column)
        refines = self.refines or (False,) * len(self.columns)
        one = plan.eps_column ** 2 / 2.0
        refined = plan.eps_first ** 2 / 2.0 + plan.eps_second ** 2 / 2.0
        return sum(refined if r else one for r in refines)

    def rows_to_be_seen(self) -> float:
        """Rows one bin of the first pass needs before its noisy count passes the
        threshold that places mass (a function of the plan only)."""
        eps_pass = self.eps_first if any(self.refines) else self.eps_column
        return max(noise_threshold(self.scale(eps_pass), grid.size) for grid in self.grids)

    def warn_if_blind(self, rows: int) -> None:
        """Before the charge, at a public row count: say when a bin needs so many
        rows that a column whose values spread over a few bins, or sit beside a
        large mass at zero, may come back unresolved."""
        need = self.rows_to_be_seen()
        if need > rows / BLIND_SHARE:
            show_warning(f"at this budget a bin of the private bounds' first pass needs about "
                  f"{need:,.0f} of the {rows:,} rows to be seen: a column whose values "
                  "spread over several bins, or sit beside a large mass at zero, may be "
                  "unresolved (fallback bounds, a warning and a line in the report); give "
                  "such columns public bounds or a domain, or a larger eps")

    def wide(self, column) -> tuple[float, float]:
        """The range a column is checked against before its bounds are known."""
        grid = self.grids[self.columns.index(column)]
        return grid.domain or (-1e300, 1e300)

    def describe(self) -> str:
        amount = (f"epsilon {self.eps:.4g}" if self.rho is None else
                  f"rho {self.rho:.4g}, epsilon {self.eps_column:.4g} per column")
        return f"private bounds for {list(self.columns)}: {amount}"


def plan_bounds(schema, columns, coverage, domain, nulls, fill,
                part: PrivacyCost, refine=True) -> BoundsPlan:
    """The bounds step paid by ``part``: pure DP, ``eps / C`` per column; or, in
    zCDP, the largest ``eps_column`` with ``C eps_column**2 / 2 <= rho`` (each
    column's histogram is ``eps_column``-DP, hence ``eps_column**2 / 2``-zCDP)."""
    if isinstance(columns, str) or not columns:
        raise InvalidParameterError("columns must name the columns to estimate bounds for")
    names = list(columns)
    grids = tuple(BoundsGrid(d) for d in per_column(domain, names, check_domain, "domain"))
    coverages = per_column(coverage, names, check_coverage, "coverage")
    refines = per_column(refine, names, check_refine, "refine")
    # the request checks (names, numeric types, nulls/fill) against the grids' ranges
    wide = {c: g.domain or (-1e300, 1e300) for c, g in zip(names, grids)}
    checked_columns, _, fills = check_frame_request(schema, bounds=wide,
                                                    columns=names, nulls=nulls, fill=fill,
                                                    min_columns=1)
    k = len(checked_columns)
    eps_column = column_epsilon(part, k)
    total, rho_spent = part.spent_by_columns(k), part.rho
    plan = BoundsPlan(tuple(checked_columns), total, eps_column, coverages, grids, fills,
                       rho_spent, refines)
    if rho_spent is not None and any(refines):
        plan = _spend_rho(plan, rho_spent)
    plan.checked_scales()  # a scale that cannot be sampled is refused now
    return plan


def _spend_rho(plan: BoundsPlan, rho: float) -> BoundsPlan:
    """Under zCDP, the largest ``eps_column`` whose passes cost at most ``rho``
    (:meth:`BoundsPlan.zcdp_rho`): a refined column's two passes cost 0.58 of
    ``eps_column**2 / 2``, so charging ``eps_column**2 / 2`` for it would pay for
    noise that is never drawn. Rounded down until the passes fit ``rho``."""
    factor = plan.zcdp_rho() / (len(plan.columns) * plan.eps_column ** 2 / 2.0)
    eps_column = safe_down(math.sqrt(2.0 * rho / (len(plan.columns) * factor)))
    while plan.zcdp_rho(eps_column) > rho:
        eps_column = safe_down(eps_column)
    return dataclasses.replace(plan, eps_column=eps_column,
                               eps=safe_up(len(plan.columns) * eps_column))


def bounds_counts(frame, backend, plan: BoundsPlan, columns, fill, split_every, progress,
                  min_rows=True):
    """One pass over ``columns`` (the bounds' columns and every other column of the
    release): the bounds' exact histograms and the row count, after refusing
    missing values without a fill, cells that are not numbers, and too few rows --
    everything about the data that a later pass could find, found before the charge.
    ``min_rows=False`` (per unit, where the row count is not public): no row check."""
    columns = tuple(columns)
    grids = tuple(plan.grids[plan.columns.index(name)] if name in plan.columns else None
                  for name in columns)
    counts, rows, missing = backend.reduce(
        frame, columns,
        partial(_bounds_partition, columns=columns, grids=grids, fill=fill),
        _add_histograms, split_every=split_every, progress=progress)
    if fill is None:
        refuse_missing(columns, missing)
    if min_rows and rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    by_name = dict(zip((c for c, g in zip(columns, grids) if g is not None), counts))
    return [by_name[c] for c in plan.columns], int(rows)


def refine_counts(frame, backend, plan: BoundsPlan, split_every, progress, fine: dict):
    """The refining pass (after the charge): exact histograms of the columns in
    ``fine`` (column -> grid chosen from the first pass's released bounds), with
    the same missing-value handling as the first pass. Nothing here refuses."""
    columns = tuple(fine)
    if not columns:
        return {}
    fill = None
    if plan.fill is not None:
        fills = dict(zip(plan.columns, plan.fill))
        fill = tuple(fills[c] for c in columns)
    counts, _, _ = backend.reduce(
        frame, columns,
        partial(_bounds_partition, columns=columns, grids=tuple(fine.values()), fill=fill,
                finite=True),
        _add_histograms, split_every=split_every, progress=progress)
    return dict(zip(columns, counts))


def show_warning(message: str) -> None:
    """A :class:`BoundsWarning` as the caller's filters say, never raised: it comes
    after the charge, where nothing may refuse, even under a warnings-as-errors
    filter (an ignored one stays ignored)."""
    shown(message, BoundsWarning, stacklevel=user_stacklevel())
