"""Kendall's tau-a of the binned pair: a signed rank statistic from mergeable counts.

Both columns are binned into the same ``m x m`` range equipartition the master
grids are read from (it declares one ``m x m`` grid, :meth:`KendallTau.grids`), so tau comes from
the same pass as MICr. Two rows are concordant when their bins differ in the
same direction on both axes, discordant when in opposite directions, and tied
(counted as 0) when they share a bin on either axis:

    tau_a = (concordant - discordant) / (n (n - 1) / 2).

With ``n`` public, replacing one row changes the sign of at most the ``n - 1``
pairs it belongs to, each by at most 2, so the sensitivity is ``4 / n``
(``docs/privacy.md``). Ties make ``|tau_a|`` of binned data smaller than the
continuous tau by about the share of tied pairs (``~2 / m``).
"""

from __future__ import annotations

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.grids import CountLayout, master_grid_family, tau_bins
from dpmic_dask.stats.sensitivity import safe_up
from dpmic_dask.stats.statistics.base import PairStatistic


def concordance(grid: np.ndarray) -> int:
    """``concordant - discordant`` pairs of rows in an ``m x m`` count grid (rows: y
    bins, columns: x bins), exactly (Python integer).

    Each unordered pair is counted once, from its row in the lower y bin: a cell
    ``(i, j)`` pairs with every row strictly above and to the right (concordant)
    or strictly above and to the left (discordant).
    """
    h = np.asarray(grid, dtype=np.int64)
    # above[i, j] = rows in y bins > i and x bin j
    above = np.zeros_like(h)
    above[:-1] = np.cumsum(h[::-1], axis=0)[::-1][1:]
    left = np.cumsum(above, axis=1)  # x bins <= j
    right = above.sum(axis=1, keepdims=True) - left  # x bins > j
    strictly_left = left - above  # x bins < j
    diff = right - strictly_left
    if int(h.sum()) < 3 * 10**9:  # |sum| <= n**2 / 2 fits int64
        return int((h * diff).sum(dtype=np.int64))
    return int((h.astype(object) * diff.astype(object)).sum())  # exact for any n


def tau_a(grid: np.ndarray) -> float:
    """Kendall's tau-a of the rows counted in ``grid`` (0 for fewer than two rows)."""
    n = int(np.asarray(grid, dtype=np.int64).sum())
    if n < 2:
        return 0.0
    return concordance(grid) / (n * (n - 1) / 2)


def tau_sensitivity(n: int) -> float:
    """``4 / n`` rounded up: the replace-one sensitivity of tau-a with public ``n``."""
    return safe_up(4.0 / n)


class KendallTau(PairStatistic):
    """Kendall's tau-a of the pair binned into the family's ``m x m`` equipartition."""

    name = "tau"
    label = "tau_a"  # a binned tau-a: it differs from scipy's tau-b on tied columns
    aliases = ("tau",)
    companion = True
    mergeable = True
    value_range = (-1.0, 1.0)

    def grids(self, B: int, c: int) -> tuple[int, ...]:
        """One ``m x m`` grid, ``m = tau_bins``: the finest equipartition both of the
        master family's refinements contain."""
        m = tau_bins(master_grid_family(B, c))
        if m < 2:
            raise InvalidParameterError(
                f"B = {B}, c = {c} has no common equipartition for Kendall's tau grid; "
                "choose another B or c (nothing was charged)")
        return (m,)

    def value(self, counts: np.ndarray, layout: CountLayout) -> float:
        m = tau_bins(layout)
        return tau_a(layout.square_block(counts, m))

    def sensitivity(self, n: int, B: float) -> float:
        return tau_sensitivity(n)
