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
    """

    name: str = ""
    mergeable: bool = True

    def layout(self, B: int, c: int):
        """The count layout for parameters ``(B, c)`` (for mergeable statistics)."""
        raise NotImplementedError(f"{self.name} is not computed from counts")

    def value(self, counts: np.ndarray, layout) -> float:
        """The statistic of one pair from its flat counts in ``layout``."""
        raise NotImplementedError(f"{self.name} is not computed from counts")

    @abstractmethod
    def sensitivity(self, n: int, B: float) -> float:
        """Replace-one sensitivity of one value (rounded up), from public ``n``, ``B``."""
