"""MIC with one or two categorical axes, read off MICr's master counts.

A categorical column is counted as its codes ``code + 0.5`` inside the bounds
``(0, K)`` (:mod:`dpmic_dask.stats.categories`), so every range equipartition of
at least ``K`` bins holds each code in a bin of its own, and merging bins by
code gives the column's partition into its categories, exactly. The statistic
is defined on those partitions (``docs/statistics.md``, "A categorical axis"):

* **one categorical axis** (``K`` codes, ``k`` of them counted by the
  normaliser) against an ordered axis: the maximum of
  ``I / log2 min(k, m)`` over

  (a) every master grid whose *fixed* axis is the categorical one with
      ``l >= K`` bins: the ``K`` category columns against the ordered axis's
      ``c * kmax(l)`` master rows, grouped by OptimizeAxis into
      ``m = 2 .. kmax(l)`` contiguous groups;
  (b) every master grid whose fixed axis is the ordered one, with ``l`` bins,
      ``k * l <= B`` and at least ``K`` master rows: the ``K`` categories
      against the ``m = l`` equal-width bins;

* **two categorical axes**: the mutual information of the ``Kx x Ky``
  contingency table over ``log2 min(kx, ky)``.

Every candidate is a fixed partition of the plane (categories by a fixed
grouping of the ordered axis), so MICr's replace-one sensitivity
``2 f((n-1)/2) / n`` holds (``docs/privacy.md``). Values are clamped to
``[0, 1]`` (the "other" bin is a table column the normaliser does not count).
Kendall's tau is undefined for unordered categories: it is ``NaN`` for every
pair with a categorical axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.categories import CategoryAxis, code_bins
from dpmic_dask.stats.grids import GridFamily, master_grid_family
from dpmic_dask.stats.kernels.optimize import optimize_axis
from dpmic_dask.stats.sensitivity import micr_sensitivity
from dpmic_dask.stats.statistics.base import PairStatistic


def mutual_information(table: np.ndarray) -> float:
    """Mutual information (bits) of a count matrix, ``0 log 0 = 0``."""
    a = np.asarray(table, dtype=np.float64)
    n = a.sum()
    if n <= 0:
        return 0.0

    def g(v):
        v = v[v > 0]
        return float((v * np.log2(v)).sum())

    value = (g(a.ravel()) - g(a.sum(axis=1)) - g(a.sum(axis=0)) + g(np.array([n]))) / n
    return max(value, 0.0)


@dataclass(frozen=True)
class _Candidate:
    """One master grid's use: ``grid`` index, ``kind`` ``"a"`` (categories fixed,
    ordered rows optimised into ``2 .. groups``) or ``"b"`` (ordered axis fixed in
    ``groups`` bins), and the bins holding each code (columns for ``"a"``,
    master rows for ``"b"``)."""

    grid: int
    kind: str
    groups: int
    code_index: np.ndarray


@lru_cache(maxsize=256)
def candidates(codes: int, cells: int, side: str, family: GridFamily) -> tuple[_Candidate, ...]:
    """The grids of ``family`` that give the categorical statistic of a column with
    ``codes`` codes (``cells`` normalised) on axis ``side`` (``"x"`` or ``"y"``)
    against an ordered column (data-independent; cached)."""
    out = []
    seen_rows = set()
    for g, grid in enumerate(family.grids):
        if grid.orientation == side:
            # grids of (a) with the same master rows give the same table (every
            # l >= K merges to the same K category columns): one of them suffices
            if grid.fixed_bins >= codes and grid.max_groups >= 2 \
                    and grid.master_rows not in seen_rows:
                seen_rows.add(grid.master_rows)
                out.append(_Candidate(g, "a", grid.max_groups, code_bins(codes, grid.fixed_bins)))
        elif grid.master_rows >= codes and cells * grid.fixed_bins <= family.B:
            out.append(_Candidate(g, "b", grid.fixed_bins, code_bins(codes, grid.master_rows)))
    return tuple(out)


@lru_cache(maxsize=256)
def table_grid(x_codes: int, y_codes: int, family: GridFamily) -> tuple[int, np.ndarray,
                                                                          np.ndarray] | None:
    """A master grid that separates both categorical columns' codes: ``(grid,
    rows, columns)`` with the bins of each code on the grid's row and fixed axes
    (the contingency table is ``block[rows][:, columns]``), or ``None``."""
    for g, grid in enumerate(family.grids):
        fixed, rows = (x_codes, y_codes) if grid.orientation == "x" else (y_codes, x_codes)
        if grid.fixed_bins >= fixed and grid.master_rows >= rows:
            return g, code_bins(rows, grid.master_rows), code_bins(fixed, grid.fixed_bins)
    return None


@lru_cache(maxsize=1024)
def _normalisers(cells: int, groups: int) -> np.ndarray:
    """``log2 min(cells, m)`` for ``m = 2 .. groups``."""
    out = np.log2(np.minimum(cells, np.arange(2, groups + 1)).astype(np.float64))
    out.setflags(write=False)
    return out


def _block(counts: np.ndarray, family: GridFamily, g: int) -> np.ndarray:
    grid = family.grids[g]
    return np.asarray(counts[grid.offset:grid.offset + grid.n_cells], dtype=np.int64).reshape(
        grid.master_rows, grid.fixed_bins)


def check_pair_grid(x: CategoryAxis | None, y: CategoryAxis | None, family: GridFamily) -> None:
    """Refuse (before anything is read) a pair whose categorical statistic has no
    grid in ``family``: too many categories for ``B`` and ``c``."""
    if x is None and y is None:
        return
    if x is not None and y is not None:
        found = table_grid(x.codes, y.codes, family) is not None
    else:
        axis, side = (x, "x") if x is not None else (y, "y")
        found = bool(candidates(axis.codes, axis.cells, side, family))  # type: ignore[union-attr]
    if not found:
        names = [a.name for a in (x, y) if a is not None]
        raise InvalidParameterError(
            f"column(s) {names} have too many categories for B = {family.B}, c = {family.c}: a "
            "categorical axis with K codes (the listed categories, the null category and "
            "'other') needs K <= B / 2, or K <= c * kmax; raise B or c, or list fewer "
            "categories (nothing was read or charged)")


class CategoricalMIC(PairStatistic):
    """MIC of a pair with one or two categorical axes (``x``, ``y``: the axes'
    codings, ``None`` for an ordered axis), from MICr's master counts."""

    name = "micr"
    label = "mic"
    mergeable = True

    def __init__(self, x: CategoryAxis | None, y: CategoryAxis | None):
        if x is None and y is None:
            raise ValueError("a categorical statistic needs a categorical axis")
        self.x, self.y = x, y

    def layout(self, B: int, c: int):  # pragma: no cover - the pair's layout is MICr's
        return master_grid_family(B, c)

    def value(self, counts: np.ndarray, layout: GridFamily) -> float:
        x, y = self.x, self.y
        if x is not None and y is not None:
            found = table_grid(x.codes, y.codes, layout)
            if found is None:
                raise InvalidParameterError("no grid separates both columns' categories")
            g, rows, cols = found
            table = _block(counts, layout, g)[np.ix_(rows, cols)]
            norm = math.log2(min(x.cells, y.cells))
            return float(min(max(mutual_information(table) / norm, 0.0), 1.0))
        axis, side = (x, "x") if x is not None else (y, "y")
        assert axis is not None
        cells = axis.cells
        best = 0.0
        found_any = False
        for cand in candidates(axis.codes, cells, side, layout):
            found_any = True
            block = _block(counts, layout, cand.grid)
            if cand.kind == "a":
                table = np.ascontiguousarray(block[:, cand.code_index])
                info = optimize_axis(table, cand.groups)
                norms = _normalisers(cells, cand.groups)
                best = max(best, float((info[2:cand.groups + 1] / norms).max()))
            else:
                table = block[cand.code_index, :]
                score = mutual_information(table) / math.log2(min(cells, cand.groups))
                best = max(best, score)
        if not found_any:
            raise InvalidParameterError("no grid holds this column's categories")
        return float(min(max(best, 0.0), 1.0))

    def sensitivity(self, n: int, B: float) -> float:
        return micr_sensitivity(n)


class PairValues:
    """Every released statistic of each pair, with a categorical axis where a
    column is categorical: MIC becomes :class:`CategoricalMIC` and Kendall's tau
    ``NaN`` (undefined for unordered categories). Backends call
    :meth:`for_pairs` with a block's pairs (column names) and apply one function
    per pair; ``tuple_values`` returns a tuple per pair (several statistics)."""

    def __init__(self, statistics, layout, axes: dict, tuple_values: bool):
        self.statistics = tuple(statistics)
        self.layout = layout
        self.axes = dict(axes)
        self.tuple_values = tuple_values

    def _one(self, x_name, y_name):
        x, y = self.axes.get(x_name), self.axes.get(y_name)
        if x is None and y is None:
            funcs = [s.value for s in self.statistics]
        else:
            cat = CategoricalMIC(x, y)
            funcs = [_as_released(s, cat.value) if s.name == "micr" else _undefined
                     for s in self.statistics]
        layout = self.layout
        if self.tuple_values:
            return lambda counts: tuple(f(counts, layout) for f in funcs)
        (only,) = funcs
        return lambda counts: only(counts, layout)

    def for_pairs(self, names) -> list:
        """One function of a pair's counts per ``(x, y)`` column-name pair."""
        return [self._one(x, y) for x, y in names]

    def __call__(self, counts):  # pragma: no cover - backends use for_pairs
        raise TypeError("PairValues needs the pair's columns: use for_pairs")


def _as_released(statistic, value):
    """``value`` as ``statistic`` releases its own: tapered below ``n0`` when the
    statistic is released per privacy unit (its noise is calibrated to the
    tapered value, :class:`~dpmic_dask.stats.group_sensitivity.UnitStatistic`)."""
    taper = getattr(type(statistic), "tapered", None)
    return value if taper is None else statistic.tapered(value)


def _undefined(counts, layout) -> float:
    return float("nan")


__all__ = ["CategoricalMIC", "PairValues", "check_pair_grid", "mutual_information"]
