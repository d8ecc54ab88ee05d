"""Pearson's chi-square on noisy tables (post-processing of released counts): the
statistic with the noise's variance in each cell's weight, on the rows, columns
and strata the noise lets a test see (:func:`noisy_chisq`), whether a test can
see a small dependence at all (:func:`can_see`), the smallest one a level-0 test
sees (:func:`smallest_visible_effect`), and a level's decisions
(:class:`NoisyChisqMargins`). Nothing here reads data or draws noise."""

from __future__ import annotations

import functools
import math

import numpy as np

from dpmic_dask.causal.citests import chi2_sf, g_threshold
from dpmic_dask.causal.tables import LevelTables, TableKey

#: A noisy row, column or stratum takes part in a test when its count exceeds this
#: many standard deviations of its noise (:func:`noisy_chisq`).
VISIBLE = 3.0
#: Cohen's ``w`` of a small dependence: a test that would miss it more often than
#: not cannot separate a pair (:func:`can_see`).
SMALL_EFFECT = 0.1


def noisy_chisq(table: np.ndarray, variance: float) -> tuple[float, int, float]:
    """``(statistic, degrees of freedom, reach)`` of Pearson's chi-square on a noisy
    ``(strata, kx, ky)`` table, with the noise's variance in each cell's weight.

    As causal-learn leaves out the empty rows, columns and strata of an exact
    table, a noisy row or column takes part only where its noisy sum exceeds
    :data:`VISIBLE` standard deviations of its noise, and a stratum only with two
    such rows and two such columns (an empty "other" bin, or a combination of
    categories that does not occur, would otherwise add degrees of freedom and
    only noise). The degrees of freedom are ``sum (rows - 1)(columns - 1)`` over
    the strata kept. All of it reads the released table only.

    Within a kept stratum, with the margins' shares ``p_x``, ``p_y``, a cell's
    residual carries the noise ``Z_xy - p_y Z_x. - p_x Z_.y + p_x p_y Z_..`` of
    variance ``sigma^2 a_x a_y`` (``a_x = (1 - p_x)^2 + sum_{x' != x} p_x'^2``),
    and its sampling part has variance ``E (1 - p_x)(1 - p_y)`` under
    independence; each squared residual is divided by ``E + sigma^2 a_x a_y /
    ((1 - p_x)(1 - p_y))``, so that each term has the weight Pearson's terms have
    without noise. ``reach`` is ``sum E^2 / weight`` over the cells kept: the rows
    an exact test would need for the power this one has (``sum E``, the rows seen,
    without noise); a dependence of Cohen's ``w`` moves the statistic's mean by
    about ``reach w^2``."""
    stat, df, reach = noisy_chisq_many(np.asarray(table)[None], variance)
    return float(stat[0]), int(df[0]), float(reach[0])


def noisy_chisq_many(tables: np.ndarray, variance: float):
    """:func:`noisy_chisq` of every table of ``tables`` (``[T, strata, kx, ky]``, one
    shape), vectorised: arrays of the statistics, degrees of freedom and reaches."""
    a = np.asarray(tables, dtype=np.float64)
    sd = math.sqrt(max(variance, 0.0))
    kx, ky = a.shape[-2:]
    rows = a.sum(axis=3) > VISIBLE * sd * math.sqrt(ky)  # [T, S, kx]
    cols = a.sum(axis=2) > VISIBLE * sd * math.sqrt(kx)  # [T, S, ky]
    nrows, ncols = rows.sum(axis=2), cols.sum(axis=2)
    seen = rows[..., :, None] & cols[..., None, :]
    # a stratum with two rows and two columns seen, whose seen block holds rows
    used = (nrows >= 2) & (ncols >= 2) & (np.where(seen, a, 0.0).sum(axis=(2, 3)) > 0)
    cells = seen & used[..., None, None]
    kept = np.where(cells, a, 0.0)
    r, c = kept.sum(axis=3), kept.sum(axis=2)
    total = np.where(used, r.sum(axis=2), 1.0)
    px, py = r / total[..., None], c / total[..., None]
    ax = (1.0 - px) ** 2 + (px ** 2).sum(axis=2, keepdims=True) - px ** 2
    ay = (1.0 - py) ** 2 + (py ** 2).sum(axis=2, keepdims=True) - py ** 2
    expected = r[..., :, None] * c[..., None, :] / total[..., None, None]
    spread = np.maximum((1.0 - px)[..., :, None] * (1.0 - py)[..., None, :], 1e-6)
    weight = np.maximum(np.maximum(expected, 0.0)
                        + variance * ax[..., :, None] * ay[..., None, :] / spread, 1e-12)
    stat = np.where(cells, (kept - expected) ** 2 / weight, 0.0).sum(axis=(1, 2, 3))
    reach = np.where(cells, np.maximum(expected, 0.0) ** 2 / weight, 0.0).sum(axis=(1, 2, 3))
    df = np.where(used, (nrows - 1) * (ncols - 1), 0).sum(axis=1)
    return stat, df, reach


@functools.lru_cache(maxsize=4096)
def _threshold(alpha: float, df: int) -> float:
    return g_threshold(alpha, df)


def support_is_exact(variance: float, size: int) -> bool:
    """Whether the noise of ``variance`` per count is too small to hide one row of a
    table whose axes have at most ``size`` categories or bins (every row, column
    or stratum with a row in it passes :data:`VISIBLE` standard deviations of its
    sum's noise): then the rows and columns a test sees are those the exact table
    has, and a test without degrees of freedom is read as the exact one is
    (independent: a column with one category, such as a constant one, separates
    from every other). Public: the variance and the codings' sizes."""
    return VISIBLE * math.sqrt(max(variance, 0.0)) * math.sqrt(max(size, 1)) < 1.0


def can_see(df: int, reach: float, alpha: float) -> bool:
    """Whether a test of ``df`` degrees of freedom and ``reach`` (:func:`noisy_chisq`)
    detects a small dependence (Cohen's ``w =`` :data:`SMALL_EFFECT`) with
    probability at least one half at level ``alpha`` (the non-central chi-square
    by its normal approximation). A test that cannot is no evidence of
    independence: it separates nothing."""
    if df == 0:
        return False
    shift = reach * SMALL_EFFECT ** 2
    z = (_threshold(alpha, df) - df - shift) / math.sqrt(2.0 * (df + 2.0 * shift))
    return z <= 0.0


def smallest_visible_effect(codings, n: int, variance: float, alpha: float) -> float:
    """The smallest dependence (Cohen's ``w``) a level-0 test detects with
    probability one half (:func:`can_see`'s rule) on the largest pair table, its
    ``n`` rows spread evenly over the categories (an "other" bin aside) or bins:
    what the noise of ``variance`` per count hides, from public quantities only.
    ``inf`` when the noise hides every row or column of that table, or every
    dependence (``w`` above ``sqrt(min(kx, ky) - 1)``, the largest there is)."""
    # a list of one category is that category against "other": two columns
    sizes = sorted(max(2, len(c.categories)) if c.categories is not None else c.size
                   for c in codings)
    kx, ky = sizes[-2], sizes[-1]
    table = np.full((1, kx, ky), n / (kx * ky), dtype=np.float64)
    _, df, reach = noisy_chisq(table, variance)
    if df == 0 or not reach > 0:
        return math.inf
    found = math.sqrt(max(_threshold(alpha, df) - df, 0.0) / reach)
    return found if found <= math.sqrt(kx - 1) else math.inf


def flat_columns(joints, variance: float) -> set:
    """The columns (indices) that show at most one category or bin above the noise
    in every one of ``joints`` (``{columns: noisy joint table}``, one axis per
    column in that order) that holds them: a category takes part where its noisy
    margin exceeds :data:`VISIBLE` standard deviations of that margin's noise, the
    rule :func:`noisy_chisq` applies to rows and columns. No test of such a column
    has a degree of freedom, so none can separate it. Post-processing only."""
    sd = math.sqrt(max(variance, 0.0))
    seen: dict[int, bool] = {}
    for columns, table in joints.items():
        table = np.asarray(table, dtype=np.float64)
        for axis, column in enumerate(columns):
            others = tuple(a for a in range(table.ndim) if a != axis)
            margin = table.sum(axis=others)
            cells = table.size // table.shape[axis]
            wide = int((margin > VISIBLE * sd * math.sqrt(cells)).sum()) >= 2
            seen[column] = seen.get(column, False) or wide
    return {column for column, wide in seen.items() if not wide}


class NoisyChisqMargins:
    """Margins ``alpha - p`` (negative: independent) of a level's tests on their
    released tables, and the noise-aware chi-square statistics (post-processing)."""

    offset = 0.0

    def __init__(self, layout: LevelTables, counts: np.ndarray, variance: float,
                 alpha: float):
        self.margin: dict[TableKey, float] = {}
        self.statistic: dict[TableKey, float] = {}
        #: whether any test could see a small dependence through the noise, and how
        #: many could not
        self.saw, self.blind = False, 0
        sizes = max((max(layout.shape(key)[1:]) for key in layout.keys), default=1)
        exact_support = support_is_exact(variance, sizes)
        groups: dict[tuple[int, int, int], list[int]] = {}
        for t, key in enumerate(layout.keys):
            groups.setdefault(layout.shape(key), []).append(t)
        for members in groups.values():
            stacked = np.stack([layout.table(counts, t) for t in members])
            for t, stat, df, reach in zip(members, *noisy_chisq_many(stacked, variance)):
                key = layout.keys[t]
                self.statistic[key] = float(stat)
                # a test the noise leaves blind to a small dependence is no evidence of
                # independence: the edge stays (an exact table without degrees of
                # freedom is read as independent by causal-learn; its emptiness is
                # known, not noise)
                if exact_support and int(df) == 0:  # as the exact test: independent
                    self.margin[key] = alpha - 1.0
                    continue
                seen = can_see(int(df), float(reach), alpha)
                self.saw |= seen
                self.blind += not seen
                self.margin[key] = alpha - (chi2_sf(float(stat), int(df)) if seen else 0.0)


__all__ = ["SMALL_EFFECT", "VISIBLE", "NoisyChisqMargins", "can_see", "flat_columns",
           "noisy_chisq", "noisy_chisq_many", "smallest_visible_effect", "support_is_exact"]
