"""The protocol every pair statistic implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class PairStatistic(ABC):
    """A statistic of a pair of columns.

    Attributes
    ----------
    name : str
        Registry name (``"micr"``, ``"mice"``); results name the statistic with it.
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

    def layout(self, B: int, c: int):
        """The count layout for parameters ``(B, c)`` (for mergeable statistics)."""
        raise NotImplementedError(f"{self.name} is not computed from counts")

    def value(self, counts: np.ndarray, layout) -> float:
        """The statistic of one pair from its flat counts in ``layout``."""
        raise NotImplementedError(f"{self.name} is not computed from counts")

    @abstractmethod
    def sensitivity(self, n: int, B: float) -> float:
        """Replace-one sensitivity of one value (rounded up), from public ``n``, ``B``."""
