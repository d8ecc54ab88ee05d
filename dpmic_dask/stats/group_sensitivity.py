"""Sensitivities when one privacy unit (up to ``k`` rows) is added or removed.

With ``privacy_unit`` and ``max_rows_per_unit = k`` the number of rows is not
public. A released pair statistic is then not ``M(D)`` but the *tapered*

    h(D) = min(1, |D| / n0) * M(D),

where ``n0`` is public (a private lower confidence bound on the row count, see
:mod:`dpmic_dask.release.rowcount`). ``h`` equals ``M`` whenever ``|D| >= n0``;
below ``n0`` it shrinks towards 0. Its sensitivity under adding or removing one
row is bounded at **every** size by :func:`tapered_step` (the proof is in
``docs/privacy.md``, "Privacy per unit"), so adding or removing one unit's ``k``
rows moves it by at most ``k`` times that: the guarantee stays pure ``eps``-DP
whatever the true row count is (the lower bound only sets *where* the taper
starts, never *whether* the bound holds).

Add/remove sensitivities of one row, ``m`` the larger of the two sizes:

* MICr: ``f(m - 1) / m`` (``f(x) = (x+1) log2(x+1) - x log2 x``), about half the
  replace-one bound ``2 f((m-1)/2) / m``;
* Kendall's tau-a: ``4 / m``.

Both have ``m * Delta(m)`` non-decreasing, which is what makes the taper work:
for ``m + 1 <= n0`` a step changes ``h`` by at most
``((m + 1) Delta(m + 1) + max|M|) / n0 <= (n0 Delta(n0) + max|M|) / n0``.
Pure functions of public quantities; no privacy or Dask code here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpmic_dask.stats.sensitivity import f_gain, safe_up


def micr_add_remove(m: int) -> float:
    """Add/remove-one-row sensitivity of MICr between ``m - 1`` and ``m`` rows,
    ``f(m - 1) / m`` (0 for ``m <= 1``: no grid holds information about fewer than
    two points), rounded up."""
    if m <= 1:
        return 0.0
    return safe_up(f_gain(m - 1.0) / m)


def tau_add_remove(m: int) -> float:
    """Add/remove-one-row sensitivity of Kendall's tau-a between ``m - 1`` and ``m``
    rows: ``4 / m`` (0 for ``m <= 2``... tau of fewer than two rows is 0), rounded up."""
    if m <= 1:
        return 0.0
    return safe_up(4.0 / m)


#: statistic registry name -> (add/remove sensitivity of one row, max |value|)
_ADD_REMOVE = {"micr": (micr_add_remove, 1.0), "tau": (tau_add_remove, 1.0)}


def check_unit_statistic(name: str) -> None:
    """Refuse a statistic without a written add/remove analysis."""
    if name not in _ADD_REMOVE:
        raise ValueError(f"statistic {name!r} has no sensitivity per privacy unit")


def tapered_step(name: str, n0: int) -> float:
    """Sensitivity of ``h = min(1, |D| / n0) M(D)`` under adding or removing one
    row, at every size: ``(n0 Delta(n0) + max|M|) / n0`` (rounded up)."""
    check_unit_statistic(name)
    if n0 < 1:
        raise ValueError("n0 must be at least 1")
    one_row, top = _ADD_REMOVE[name]
    return safe_up((n0 * one_row(n0) + top) / n0)


def unit_sensitivity(name: str, n0: int, k: int) -> float:
    """Sensitivity of the tapered statistic when one unit (up to ``k`` rows) is
    added or removed: ``k * tapered_step`` (a chain of ``k`` one-row steps, each
    bounded at every size)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    return safe_up(k * tapered_step(name, n0))


def group_bound(name: str, n: int, k: int) -> float:
    """The plain group bound at a *known* size ``n`` (for comparison and tests):
    ``sum`` of the add/remove steps from ``n`` to ``n + k`` rows."""
    check_unit_statistic(name)
    one_row, _ = _ADD_REMOVE[name]
    return safe_up(sum(one_row(m) for m in range(n + 1, n + k + 1)))


def rows_in(counts: np.ndarray, layout) -> int:
    """The number of rows counted in one pair's flat ``counts`` (every point falls
    in exactly one cell of the first grid of the layout)."""
    counts = np.asarray(counts)
    block = getattr(layout, "tau_block", None)
    if block is not None:
        return int(np.asarray(block(counts), dtype=np.int64).sum())
    first = layout.grids[0]
    return int(counts[first.offset:first.offset + first.n_cells].astype(np.int64).sum())


@dataclass(frozen=True)
class UnitStatistic:
    """A pair statistic released per privacy unit: the base statistic tapered
    below the public ``n0``, with sensitivity ``k * tapered_step(n0)``.

    It answers everything else (name, layout, value range, mergeable) as the
    base statistic does, so the mechanisms and the release paths use it as they
    use any statistic.
    """

    base: object
    k: int
    n0: int

    def __post_init__(self):
        check_unit_statistic(self.base.name)  # type: ignore[attr-defined]

    def __getattr__(self, name):
        # everything else (grids, layouts, ...) as the base statistic answers it
        if name.startswith("__") or name in ("base", "k", "n0"):
            raise AttributeError(name)
        return getattr(self.base, name)

    @property
    def name(self) -> str:
        return self.base.name  # type: ignore[attr-defined]

    @property
    def mergeable(self) -> bool:
        return self.base.mergeable  # type: ignore[attr-defined]

    @property
    def value_range(self) -> tuple[float, float]:
        return self.base.value_range  # type: ignore[attr-defined]

    def layout(self, B: int, c: int):
        return self.base.layout(B, c)  # type: ignore[attr-defined]

    def weight(self, rows: int) -> float:
        """``min(1, rows / n0)``."""
        return 1.0 if rows >= self.n0 else rows / self.n0

    def value(self, counts: np.ndarray, layout) -> float:
        return self.tapered(self.base.value)(counts, layout)  # type: ignore[attr-defined]

    def tapered(self, value):
        """``value`` (a function of a pair's counts and layout with this statistic's
        range and one-row steps, e.g. MIC on a categorical axis) tapered below
        ``n0`` as this statistic is: what the sensitivity ``k * tapered_step(n0)``
        is for. Every value released per unit goes through here."""
        def tapered_value(counts: np.ndarray, layout) -> float:
            rows = rows_in(counts, layout)
            if rows < 2:
                return 0.0
            return self.weight(rows) * value(counts, layout)
        return tapered_value

    def sensitivity(self, n: int, B: float) -> float:
        """Ignores ``n`` (the release passes ``n0``): the bound holds at every size."""
        return unit_sensitivity(self.name, self.n0, self.k)


__all__ = ["UnitStatistic", "check_unit_statistic", "group_bound", "micr_add_remove",
           "rows_in", "tapered_step", "tau_add_remove", "unit_sensitivity"]
