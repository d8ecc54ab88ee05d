"""MICe: the rank-based statistic, computed in memory only."""

from __future__ import annotations

import numpy as np

from dpmic_dask.stats.mice import mice_on_distinct_ranks
from dpmic_dask.stats.sensitivity import mice_sensitivity
from dpmic_dask.stats.statistics.base import PairStatistic


class MICe(PairStatistic):
    """MICe on distinct values (ties broken by secret keys, one per row and axis);
    sensitivity ``B (2 log2 n + 4.8) / n`` (the paper's Theorem 3.1, which needs
    distinct values).

    Not mergeable: ranks depend on the whole table, so the value comes from the
    rows (:meth:`value_of_rows`), never from partition counts.
    """

    name = "mice"
    label = "mic"
    mergeable = False

    def value_of_rows(self, x: np.ndarray, y: np.ndarray, B: float, c: int,
                      keys: np.ndarray) -> float:
        return mice_on_distinct_ranks(x, y, B, c, keys)

    def sensitivity(self, n: int, B: float) -> float:
        return mice_sensitivity(n, B)
