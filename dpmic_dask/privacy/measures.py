"""How costs of one kind compose: pure DP (epsilons add) or zCDP (rhos add).

A measure splits a budget into parts, says what is left and whether a part
fits, and what a cost takes from a budget of its kind. Each measure is built
with the cost type it makes (:mod:`dpmic_dask.privacy.costs` builds
:data:`~dpmic_dask.privacy.costs.PURE_DP` and :data:`~dpmic_dask.privacy.costs.ZCDP`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from decimal import ROUND_DOWN, Decimal
from typing import TYPE_CHECKING

from opendp import measures

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import eps_from_rho, eps_within_rho, rho_from_eps_delta
from dpmic_dask.stats.sensitivity import safe_down

if TYPE_CHECKING:
    from dpmic_dask.privacy.costs import PrivacyCost


class Measure(ABC):
    """How costs of one kind compose (pure DP or zCDP)."""

    #: The unit an amount is counted in.
    unit: str = ""
    #: Suffix of the value mechanism that spends a part of this kind
    #: (``micr-lap``, ``tau-gauss``).
    noise: str = ""
    #: Whether a budget of this kind can hold approximate parts (a bad-event delta).
    holds_approx_parts: bool = False
    #: The release mechanism a plan of this kind must use (``None``: the caller's).
    forced_mechanism: str | None = None

    def __init__(self, kind: type[PrivacyCost]):
        #: The cost type this measure makes.
        self.kind = kind

    @abstractmethod
    def amount(self, cost: PrivacyCost) -> float:
        """``cost`` in this measure's unit (a cost of the other kind is converted
        where that is sound: a pure part inside zCDP costs ``eps**2 / 2``)."""

    @abstractmethod
    def charged(self, cost: PrivacyCost) -> float:
        """What ``cost`` takes from a budget of this kind (refused when it cannot)."""

    @abstractmethod
    def cost(self, amount: float, delta: float) -> PrivacyCost:
        """The cost of ``amount`` (in this unit) at ``delta``."""

    @abstractmethod
    def total(self, eps: float, delta: float) -> PrivacyCost:
        """A whole ``(eps, delta)`` budget as a cost of this kind."""

    @abstractmethod
    def release_eps(self, rest: PrivacyCost, delta: float) -> float:
        """The ``eps`` a release paid by ``rest`` is planned at."""

    @abstractmethod
    def release_mechanism(self, mechanism: str, what: str = "this step") -> str:
        """The release mechanism a plan of this kind uses for ``mechanism``
        (``auto`` resolved; under zCDP another than ``micr-gauss`` is refused,
        naming ``what``)."""

    @abstractmethod
    def divergence(self):
        """OpenDP's privacy measure of this kind (for its privacy maps)."""

    @abstractmethod
    def top_k_start(self, k: int, sensitivity: float, budget: float) -> float:
        """A closed-form noise scale for noisy top-``k`` of scores with
        L-infinity ``sensitivity`` at ``budget`` (``2 k Delta / eps``; Gumbel:
        ``2 Delta sqrt(k / (8 rho))``), before OpenDP's map checks it."""

    @abstractmethod
    def short_words(self, amount) -> str:
        """An amount of this unit for people, briefly (``"1.0 epsilon"``)."""

    @abstractmethod
    def words(self, amount, delta: float, after: str = "") -> str:
        """An amount of this unit for people, with what it implies at ``delta``;
        ``after`` follows the amount."""

    def cap_words(self, amount, eps: float, delta: float) -> str:
        """A budget's cap for people (:meth:`words`)."""
        return self.words(amount, delta)

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
        return cost.pure_amount()

    def charged(self, cost: PrivacyCost) -> float:
        return cost.in_pure_budget()

    def cost(self, amount: float, delta: float) -> PrivacyCost:
        return self.kind.checked(amount)

    def total(self, eps: float, delta: float) -> PrivacyCost:
        return self.kind(eps)

    def release_eps(self, rest: PrivacyCost, delta: float) -> float:
        return rest.epsilon

    def release_mechanism(self, mechanism: str, what: str = "this step") -> str:
        return mechanism

    def divergence(self):
        return measures.max_divergence()

    def top_k_start(self, k: int, sensitivity: float, budget: float) -> float:
        return 2.0 * k * sensitivity / budget

    def short_words(self, amount) -> str:
        return f"{_digits(amount)} epsilon"

    def words(self, amount, delta: float, after: str = "") -> str:
        return f"{_digits(amount)} epsilon{after}"

    def cap_words(self, amount, eps: float, delta: float) -> str:
        return f"{_digits(amount)} epsilon (epsilon={eps:g}, delta=0)"


def _digits(amount) -> str:
    """An exact amount (a ledger's ``Decimal``) for people: as it is up to 6
    significant digits, else cut (never rounded up) to 6 (5 - 1/3 left reads
    4.66666, not 4.6666666666666667)."""
    exact = Decimal(str(amount))
    if not exact.is_finite():
        return str(amount)
    if len(exact.normalize().as_tuple().digits) > 6:
        step = Decimal(1).scaleb(exact.adjusted() - 5)
        exact = exact.quantize(step, rounding=ROUND_DOWN).normalize()
    return format(exact, "f")


class ZeroConcentratedDP(Measure):
    """``rho``-zCDP, stated as the ``(eps, delta)``-DP it implies: rhos add, and an
    ``eps``-DP part costs ``eps**2 / 2``."""

    unit = "rho"
    noise = "gauss"
    holds_approx_parts = True
    forced_mechanism = "micr-gauss"

    def amount(self, cost: PrivacyCost) -> float:
        return cost.as_rho()

    def charged(self, cost: PrivacyCost) -> float:
        return cost.in_zcdp_budget()

    def cost(self, amount: float, delta: float) -> PrivacyCost:
        return self.kind.checked(eps_from_rho(amount, delta), delta, amount)

    def total(self, eps: float, delta: float) -> PrivacyCost:
        return self.kind(eps, delta, rho_from_eps_delta(eps, delta))

    def within(self, amount: float, delta: float) -> float:
        """The largest ``eps`` whose ``rho(eps, delta)`` fits in ``amount``: what to
        ask of a part that is specified by its ``(eps, delta)``."""
        return eps_within_rho(amount, delta)

    def release_eps(self, rest: PrivacyCost, delta: float) -> float:
        return self.within(rest.amount(), delta)

    def release_mechanism(self, mechanism: str, what: str = "this step") -> str:
        if mechanism not in ("auto", self.forced_mechanism):
            raise InvalidParameterError(f"with {what} and delta > 0 the release is micr-gauss "
                                        "(mechanism='auto' or 'micr-gauss')")
        return "micr-gauss"

    def divergence(self):
        return measures.zero_concentrated_divergence()

    def top_k_start(self, k: int, sensitivity: float, budget: float) -> float:
        return 2.0 * sensitivity * math.sqrt(k / (8.0 * budget))

    def short_words(self, amount) -> str:
        return f"{float(amount):.4g} rho (zCDP)"

    def words(self, amount, delta: float, after: str = "") -> str:
        """``rho`` to 4 significant digits and the ``(eps, delta)``-DP guarantee it
        implies at ``delta`` (eps rounded up, 4 digits)."""
        value = float(amount)
        text = f"{value:.4g} rho (zCDP){after}"
        if delta <= 0:  # the bad-event parts took the whole delta: no guarantee to state
            return text
        eps = eps_from_rho(value, delta) if value > 0 else 0.0
        return f"{text}, implies (eps={eps:.4g}, delta={delta:.4g})"


__all__ = ["Measure", "PureDP", "ZeroConcentratedDP"]
