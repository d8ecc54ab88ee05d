"""Privacy costs as types: what a release spends, and how parts of a budget add.

A :class:`PrivacyCost` is what one release (or one part of it) spends. Its
:attr:`~PrivacyCost.measure` says how costs compose: :data:`PURE_DP`
(``epsilon`` adds) or :data:`ZCDP` (``rho`` adds; an ``eps``-DP part costs
``eps**2 / 2``). Splitting a budget into parts, the rest after a part, whether a
part fits, and how an amount is said in words are the measure's methods, so no
release decides "pure or zCDP" by testing ``delta`` or ``rho`` itself: the one
place a ``delta`` chooses the measure is :func:`measure_for`.

Every part is rounded down (:func:`~dpmic_dask.stats.sensitivity.safe_down`), so the
parts of a budget never add up to more than it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import (
    check_delta,
    check_epsilon,
    eps_from_rho,
    eps_within_rho,
    rho_from_eps_delta,
)
from dpmic_dask.stats.sensitivity import safe_down


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends: ``epsilon`` (and ``delta``); ``rho`` when the
    release is accounted in zCDP (Gaussian noise), else ``None`` (pure
    ``epsilon``-DP). :attr:`measure` is the type that composes it."""

    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    #: The chance of the bad event of an *approximate part* (zCDP only): a part
    #: that is ``rho``-zCDP except with this probability, such as categories
    #: chosen from the values that occur, where a value held by one row could be
    #: published. ``delta`` is the whole statement's, this part included
    #: (``docs/privacy.md``, "Approximate parts").
    approx_delta: float = 0.0

    def __post_init__(self):
        # A cost reaches a ledger: it must be a real, positive amount, never NaN.
        check_epsilon(self.epsilon, "cost epsilon")
        check_delta(self.delta, "cost delta")
        if self.rho is not None and not (math.isfinite(self.rho) and self.rho > 0):
            raise InvalidParameterError("cost rho must be a finite number > 0")
        check_delta(self.approx_delta, "cost approx_delta")
        if self.approx_delta > 0 and (self.rho is None or not self.approx_delta < self.delta):
            raise InvalidParameterError(
                "an approximate part needs a zCDP cost whose delta exceeds its own")

    @classmethod
    def checked(cls, epsilon: float, delta: float = 0.0, rho: float | None = None) -> PrivacyCost:
        """A cost from amounts that are already checked: a part computed from a
        valid cost (the measure's arithmetic), or a built mechanism's own
        parameters. The user's ``eps`` and ``delta`` were checked where the
        request was built, so only the invariants are asserted here, cheaply
        (finite, positive, never NaN), with the messages of the full check."""
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise InvalidParameterError("cost epsilon must be a finite number > 0")
        if not (0.0 <= delta < 1.0):
            raise InvalidParameterError("cost delta must be a number in [0, 1)")
        if rho is not None and not (math.isfinite(rho) and rho > 0):
            raise InvalidParameterError("cost rho must be a finite number > 0")
        cost = object.__new__(cls)
        for name, value in (("epsilon", epsilon), ("delta", delta), ("rho", rho)):
            object.__setattr__(cost, name, value)
        return cost

    @property
    def measure(self) -> Measure:
        """How this cost composes with others: :data:`PURE_DP` or :data:`ZCDP`."""
        return PURE_DP if self.rho is None else ZCDP

    @property
    def is_pure(self) -> bool:
        return self.rho is None

    def as_rho(self) -> float:
        """ZCDP cost: ``rho`` itself, or ``eps**2 / 2`` for a pure ``eps``-DP release."""
        return self.rho if self.rho is not None else self.epsilon * self.epsilon / 2.0

    def amount(self) -> float:
        """The cost in its measure's unit (``epsilon``, or ``rho``)."""
        return self.measure.amount(self)

    def describe(self) -> str:
        """``"epsilon 0.5"`` or ``"rho 0.01"``: the amount in words (and the
        bad-event ``delta`` of an approximate part)."""
        text = f"{self.measure.unit} {self.amount():.4g}"
        if self.approx_delta:
            text += f" and a bad-event delta {self.approx_delta:.3g}"
        return text


class Measure(ABC):
    """How costs of one kind compose (pure DP or zCDP)."""

    #: The unit an amount is counted in.
    unit: str = ""
    #: Suffix of the value mechanism that spends a part of this kind
    #: (``micr-lap``, ``tau-gauss``).
    noise: str = ""

    @abstractmethod
    def amount(self, cost: PrivacyCost) -> float:
        """``cost`` in this measure's unit (a cost of the other kind is converted
        where that is sound: a pure part inside zCDP costs ``eps**2 / 2``)."""

    @abstractmethod
    def cost(self, amount: float, delta: float) -> PrivacyCost:
        """The cost of ``amount`` (in this unit) at ``delta``."""

    @abstractmethod
    def total(self, eps: float, delta: float) -> PrivacyCost:
        """A whole ``(eps, delta)`` budget as a cost of this kind."""

    def split(self, total: PrivacyCost, shares) -> tuple[PrivacyCost, ...]:
        """Parts of ``total`` in proportion to ``shares`` (fractions adding up to
        at most 1), each rounded down: together never more than ``total``."""
        whole = self.amount(total)
        parts = tuple(safe_down(float(share) * whole) for share in shares)
        if sum(parts) > whole:  # pragma: no cover - rounded down by construction
            raise InvalidParameterError("the shares add up to more than the budget")
        return tuple(self.cost(part, total.delta) for part in parts)

    def rest(self, total: PrivacyCost, spent: float) -> PrivacyCost:
        """What is left of ``total`` after ``spent`` (in this unit), rounded down."""
        left = safe_down(self.amount(total) - spent)
        if not left > 0:
            raise InvalidParameterError("the shares leave no budget for the release")
        return self.cost(left, total.delta)

    def fits(self, cost: PrivacyCost, part: PrivacyCost) -> bool:
        """Whether ``cost`` can be paid from ``part`` (same kind, not more)."""
        return cost.measure is self and self.amount(cost) <= self.amount(part)

    def __repr__(self) -> str:
        return type(self).__name__


class PureDP(Measure):
    """Pure ``epsilon``-DP: epsilons add."""

    unit = "epsilon"
    noise = "lap"

    def amount(self, cost: PrivacyCost) -> float:
        if cost.rho is not None:
            raise InvalidParameterError("a zCDP cost cannot be counted in pure epsilon")
        return cost.epsilon

    def cost(self, amount: float, delta: float) -> PrivacyCost:
        return PrivacyCost.checked(amount)

    def total(self, eps: float, delta: float) -> PrivacyCost:
        return PrivacyCost(eps)


class ZeroConcentratedDP(Measure):
    """``rho``-zCDP, stated as the ``(eps, delta)``-DP it implies: rhos add, and an
    ``eps``-DP part costs ``eps**2 / 2``."""

    unit = "rho"
    noise = "gauss"

    def amount(self, cost: PrivacyCost) -> float:
        return cost.as_rho()

    def cost(self, amount: float, delta: float) -> PrivacyCost:
        return PrivacyCost.checked(eps_from_rho(amount, delta), delta, amount)

    def total(self, eps: float, delta: float) -> PrivacyCost:
        return PrivacyCost(eps, delta, rho_from_eps_delta(eps, delta))

    def within(self, amount: float, delta: float) -> float:
        """The largest ``eps`` whose ``rho(eps, delta)`` fits in ``amount``: what to
        ask of a part that is specified by its ``(eps, delta)``."""
        return eps_within_rho(amount, delta)


PURE_DP = PureDP()
ZCDP = ZeroConcentratedDP()


def measure_for(delta: float) -> Measure:
    """The measure a release with this ``delta`` is accounted in: pure DP for
    ``delta == 0``, zCDP otherwise. The one place ``delta`` decides it."""
    return PURE_DP if check_delta(delta) == 0.0 else ZCDP


def split_front(total: PrivacyCost, share: float, mechanism: str = "auto",
                what: str = "this step") -> tuple[PrivacyCost, PrivacyCost, float, str]:
    """The budget split of a step in front of a release (private bounds, private
    categories, the bounds check, a private row count): ``share`` of ``total``
    (of ``eps``, or of ``rho`` under zCDP) to the step, the rest to the release.

    Returns ``(step part, release part, release eps, release mechanism)``: the
    release is planned at ``release eps`` (its part's ``epsilon``; under zCDP the
    largest ``eps`` whose ``rho`` fits its part) with ``mechanism`` (pure) or
    ``micr-gauss`` (zCDP; another mechanism is refused, naming ``what``)."""
    measure = total.measure
    if measure is ZCDP and mechanism not in ("auto", "micr-gauss"):
        raise InvalidParameterError(f"with {what} and delta > 0 the release is micr-gauss "
                                    "(mechanism='auto' or 'micr-gauss')")
    (part,) = measure.split(total, (share,))
    rest = measure.rest(total, part.amount())
    if measure is PURE_DP:
        return part, rest, rest.epsilon, mechanism
    return part, rest, ZCDP.within(rest.amount(), total.delta), "micr-gauss"


__all__ = ["PURE_DP", "ZCDP", "Measure", "PrivacyCost", "PureDP", "ZeroConcentratedDP",
           "measure_for", "split_front"]


def column_epsilon(part: PrivacyCost, columns: int) -> float:
    """The pure ``eps_c`` of each of ``columns`` per-column pure-DP releases paid
    together from ``part``: ``epsilon / columns`` under pure DP; under zCDP the
    largest ``eps_c`` with ``columns * eps_c**2 / 2 <= rho`` (a pure ``eps``-DP
    release is ``eps**2 / 2``-zCDP). Rounded down, so the parts never add up to
    more than ``part``."""
    if part.measure is PURE_DP:
        return safe_down(part.epsilon / columns)
    rho = part.amount()
    eps_c = safe_down(math.sqrt(2.0 * rho / columns))
    while columns * eps_c ** 2 / 2.0 > rho:
        eps_c = safe_down(eps_c)
    return eps_c
