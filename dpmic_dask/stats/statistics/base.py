"""The protocol every pair statistic implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from dpmic_dask.stats.grids import count_layout


class PairStatistic(ABC):
    """A statistic of a pair of columns.

    Attributes
    ----------
    name : str
        Registry name (``"micr"``, ``"mice"``); reports name the estimator with it.
    mergeable : bool
        True when the value is a function of exact counts that partitions add up to
        (any backend can compute it); False for in-memory statistics (ranks).
    value_range : (float, float)
        Where values lie; released values are clamped to it (``(0, 1)`` for MIC,
        ``(-1, 1)`` for a correlation).
    """

    name: str = ""
    mergeable: bool = True
    value_range: tuple[float, float] = (0.0, 1.0)
    #: The one name users read and ask for: the column of every output, and what
    #: ``statistics=(...)`` accepts (with ``aliases``, older spellings).
    label: str = ""
    aliases: tuple[str, ...] = ()
    #: Released beside MIC as a companion (``statistics=("mic", label)``).
    companion: bool = False

    @property
    def signed(self) -> bool:
        """Whether values can be negative (drawn on a diverging scale)."""
        return self.value_range[0] < 0

    def grids(self, B: int, c: int) -> tuple[int, ...]:
        """The square grids this statistic reads beside the master family: sizes
        ``m`` of ``m x m`` range equipartitions (both must be in the family's
        refinements). One step unions what every released statistic declares
        (:func:`~dpmic_dask.stats.statistics.union_layout`) into the one count
        layout counted in one pass. MICr reads the master family alone: ``()``."""
        return ()

    def layout(self, B: int, c: int):
        """The count layout of this statistic alone for ``(B, c)`` (mergeable statistics)."""
        if not self.mergeable:
            raise NotImplementedError(f"{self.name} is not computed from counts")
        return count_layout(B, c, self.grids(B, c))

    def value(self, counts: np.ndarray, layout) -> float:
        """The statistic of one pair from its flat counts in ``layout``."""
        raise NotImplementedError(f"{self.name} is not computed from counts")

    @abstractmethod
    def sensitivity(self, n: int, B: float) -> float:
        """Replace-one sensitivity of one value (rounded up), from public ``n``, ``B``."""
