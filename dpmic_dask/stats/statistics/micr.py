"""MICr: range-equipartition MIC from mergeable master-grid counts."""

from __future__ import annotations

import numpy as np

from dpmic_dask.stats.characteristic import micr_from_counts
from dpmic_dask.stats.grids import GridFamily
from dpmic_dask.stats.sensitivity import micr_sensitivity
from dpmic_dask.stats.statistics.base import PairStatistic


class MICr(PairStatistic):
    """MICr (SPEC section 3): the maximum normalised mutual information over the
    fixed clumped master-grid family of ``(B, c)``; sensitivity ``2 f((n-1)/2) / n``."""

    name = "micr"
    label = "mic"
    mergeable = True

    def value(self, counts: np.ndarray, layout: GridFamily) -> float:
        return micr_from_counts(counts, layout)

    def sensitivity(self, n: int, B: float) -> float:
        return micr_sensitivity(n)
