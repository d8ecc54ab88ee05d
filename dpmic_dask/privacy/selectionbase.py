"""What every selection rule is, and the rules that read no data.

:class:`Selection` chooses the pairs a release publishes (and says what choosing
costs); :class:`AllPairs` and :class:`EveryPairRanked` publish every pair, so they
read no data and cost nothing. The rules that read the pairs' scores (noisy
top-k, the sparse vector), the rule registry and the budget split are in
:mod:`dpmic_dask.privacy.selection`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from dpmic_dask.privacy.costs import PrivacyCost


class Selection(ABC):
    """Chooses the pairs a release publishes."""

    #: A short description for reports ("all pairs", "top 10 of 4950 by MICr", ...).
    description: str = ""

    @property
    @abstractmethod
    def cost(self) -> PrivacyCost | None:
        """The privacy cost of choosing (``None`` when the choice reads no data)."""

    def most(self, n_pairs: int) -> int:
        """The largest number of pairs this rule can publish out of ``n_pairs``."""
        return n_pairs

    def prepare(self, sensitivity: float) -> None:
        """Refuse, before the charge, a choice whose noise cannot be sampled
        faithfully at this ``sensitivity`` (nothing for rules without noise)."""
        return None

    def score_noise(self, n_pairs: int, sensitivity: float) -> float:
        """The scale of the noise on each pair's score when choosing, in the
        scores' own units (0 for rules without noise; public quantities only)."""
        return 0.0

    def order(self, released: np.ndarray) -> np.ndarray:
        """The order in which the published pairs are reported, from their released
        (noisy) values only: post-processing. As selected, by default."""
        return np.arange(len(released))

    @abstractmethod
    def select(self, n_pairs: int, scores=None,
               sensitivity: float | None = None) -> tuple[int, ...]:
        """Indices of the pairs to publish, in the order they are reported.

        Rules with a cost read the exact ``scores`` (one per pair) whose L-infinity
        replace-one sensitivity is ``sensitivity``; call them only after the charge."""


@dataclass(frozen=True)
class AllPairs(Selection):
    """Publish every pair: the choice does not depend on the data and costs nothing."""

    description: str = "all pairs"

    @property
    def cost(self) -> PrivacyCost | None:
        return None

    def select(self, n_pairs: int, scores=None,
               sensitivity: float | None = None) -> tuple[int, ...]:
        return tuple(range(n_pairs))


@dataclass(frozen=True)
class EveryPairRanked(Selection):
    """``top_pairs(k)`` with ``k`` at least the number of pairs: every pair is
    published, so choosing reads no data and costs nothing -- the whole budget
    goes to the values. The pairs are reported strongest first, ordered by their
    released values (post-processing)."""

    asked: str
    candidates: int

    @property
    def description(self) -> str:  # type: ignore[override]
        return (f"all {self.candidates} pairs ({self.asked} asked; every pair is published, "
                "so nothing is spent on choosing), ordered by released value")

    @property
    def cost(self) -> PrivacyCost | None:
        return None

    def select(self, n_pairs: int, scores=None,
               sensitivity: float | None = None) -> tuple[int, ...]:
        return tuple(range(n_pairs))

    def order(self, released: np.ndarray) -> np.ndarray:
        return np.argsort(-np.asarray(released, dtype=np.float64), kind="stable")
