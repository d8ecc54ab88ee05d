"""Which pairs a release publishes: the selection step of a release plan.

A release may publish every pair, or first select pairs and then publish only
those with fresh noise. A :class:`Selection` says which pairs it keeps and what
choosing costs; the pipeline calibrates the release's noise to the number of
values actually published -- never to "one value per pair" by assumption.
Today's only rule, :class:`AllPairs`, reads no data and costs nothing; the
pipeline refuses a selection with a cost until private selection composes that
cost with the release's into the one charge.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from .accounting import PrivacyCost


class Selection(ABC):
    """Chooses the pairs a release publishes."""

    #: A short description for reports ("all pairs", "top 10 of 4950 by MICr", ...).
    description: str = ""

    @property
    @abstractmethod
    def cost(self) -> PrivacyCost | None:
        """The privacy cost of choosing (``None`` when the choice reads no data)."""

    @abstractmethod
    def select(self, n_pairs: int, scores=None) -> tuple[int, ...]:
        """Indices of the pairs to publish, in the order they are reported."""


@dataclass(frozen=True)
class AllPairs(Selection):
    """Publish every pair: the choice does not depend on the data and costs nothing."""

    description: str = "all pairs"

    @property
    def cost(self) -> PrivacyCost | None:
        return None

    def select(self, n_pairs: int, scores=None) -> tuple[int, ...]:
        return tuple(range(n_pairs))
