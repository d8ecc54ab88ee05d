"""Privacy costs as types: what a release spends, and how parts of a budget add.

A cost is a :class:`PureCost` (pure ``epsilon``-DP: ``epsilon`` adds, Laplace
noise, L1 sensitivity) or a :class:`ZCDPCost` (``rho``-zCDP stated as the
``(eps, delta)``-DP it implies: ``rho`` adds, Gaussian noise, L2 sensitivity).
:class:`PrivacyCost` is their common base and builds the right one from its
amounts (``rho`` given: zCDP), so ``PrivacyCost(eps, delta, rho)`` -- as ledgers
and job files store a cost -- round-trips unchanged.

What differs between the two is a method of the cost (the noise law and scale
of a query, each column's share, the words of the guarantee) or of its
:attr:`~PrivacyCost.measure` (:data:`PURE_DP`, :data:`ZCDP`: how parts of a
budget split, what is left, whether a part fits), so no release decides "pure
or zCDP" by testing ``delta`` or ``rho`` itself: the one place a ``delta``
chooses the measure is :func:`measure_for`.

Every part is rounded down (:func:`~dpmic_dask.stats.sensitivity.safe_down`), so the
parts of a budget never add up to more than it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from dpmic_dask.errors import BudgetMismatchError, InvalidParameterError
from dpmic_dask.privacy.conversion import check_delta, check_epsilon
from dpmic_dask.privacy.measures import Measure, PureDP, ZeroConcentratedDP
from dpmic_dask.privacy.noise import GAUSSIAN, LAPLACE, NoiseLaw
from dpmic_dask.privacy.statement import pure_statement, zcdp_statement
from dpmic_dask.stats.sensitivity import safe_down, safe_up


def _positive(value: Any) -> bool:
    """A finite number > 0 (never NaN)."""
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends: ``epsilon`` (and ``delta``); ``rho`` when the
    release is accounted in zCDP (Gaussian noise), else ``None`` (pure
    ``epsilon``-DP). ``PrivacyCost(...)`` builds a :class:`PureCost` or a
    :class:`ZCDPCost`; :attr:`measure` is the type that composes it."""

    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    #: The chance of the bad event of an *approximate part* (zCDP only): a part
    #: that is ``rho``-zCDP except with this probability, such as categories
    #: chosen from the values that occur, where a value held by one row could be
    #: published. ``delta`` is the whole statement's, this part included
    #: (``docs/privacy.md``, "Approximate parts").
    approx_delta: float = 0.0

    #: Whether the cost is pure ``epsilon``-DP.
    is_pure: ClassVar[bool]
    #: The noise law a query paid by this cost draws from.
    law: ClassVar[NoiseLaw]
    #: The sensitivity norm that law is calibrated to (``"L1"``, ``"L2"``).
    norm: ClassVar[str]

    def __new__(cls, *args: Any, **kwargs: Any) -> PrivacyCost:
        # ``PrivacyCost(...)`` builds the kind its amounts make; each kind builds itself
        return object.__new__(_kind(args[2] if len(args) > 2 else kwargs.get("rho")))

    def __post_init__(self):
        # A cost reaches a ledger: it must be a real, positive amount, never NaN.
        check_epsilon(self.epsilon, "cost epsilon")
        check_delta(self.delta, "cost delta")
        check_delta(self.approx_delta, "cost approx_delta")
        self._check()

    def _check(self) -> None:
        """The invariants of the kind (a rho for zCDP, none for pure DP)."""
        raise NotImplementedError  # pragma: no cover - PrivacyCost builds a subclass

    @classmethod
    def checked(cls, epsilon: float, delta: float = 0.0, rho: float | None = None) -> PrivacyCost:
        """A cost from amounts that are already checked: a part computed from a
        valid cost (the measure's arithmetic), or a built mechanism's own
        parameters. The user's ``eps`` and ``delta`` were checked where the
        request was built, so only the invariants are asserted here, cheaply
        (finite, positive, never NaN), with the messages of the full check."""
        if not _positive(epsilon):
            raise InvalidParameterError("cost epsilon must be a finite number > 0")
        if not (0.0 <= delta < 1.0):
            raise InvalidParameterError("cost delta must be a number in [0, 1)")
        cost = object.__new__(_kind(rho))
        for name, value in (("epsilon", epsilon), ("delta", delta), ("rho", rho),
                            ("approx_delta", 0.0)):
            object.__setattr__(cost, name, value)
        cost._check()
        return cost

    @property
    def measure(self) -> Measure:
        """How this cost composes with others: :data:`PURE_DP` or :data:`ZCDP`."""
        raise NotImplementedError  # pragma: no cover

    def as_rho(self) -> float:
        """ZCDP cost: ``rho`` itself, or ``eps**2 / 2`` for a pure ``eps``-DP release."""
        raise NotImplementedError  # pragma: no cover

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

    def split(self, shares) -> tuple[PrivacyCost, ...]:
        """Parts in proportion to ``shares`` (:meth:`Measure.split`)."""
        return self.measure.split(self, shares)

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` can be paid from this part (:meth:`Measure.fits`)."""
        return self.measure.fits(cost, self)

    def sensitivity(self, l1: float, l2: float) -> float:
        """Of a query's ``l1`` and ``l2`` sensitivities, the one this cost's law
        is calibrated to."""
        raise NotImplementedError  # pragma: no cover

    def noise_scale(self, l1: float, l2: float) -> float:
        """The scale (Laplace) or sigma (Gaussian) of this cost's :attr:`law` for
        a query of L1 sensitivity ``l1`` and L2 sensitivity ``l2`` paid by the
        whole cost, rounded up."""
        raise NotImplementedError  # pragma: no cover

    def per_column(self, columns: int) -> float:
        """The pure ``eps_c`` of each of ``columns`` per-column pure-DP releases
        paid together from this cost, rounded down (:func:`column_epsilon`)."""
        raise NotImplementedError  # pragma: no cover

    def spent_by_columns(self, columns: int) -> float:
        """What ``columns`` releases of :meth:`per_column` each state together:
        pure ``epsilon`` as it is; under zCDP, ``columns * eps_c`` rounded up."""
        raise NotImplementedError  # pragma: no cover

    def pure_epsilon(self) -> float:
        """The ``epsilon`` a pure-DP step may use inside this cost: ``epsilon``, or
        inside zCDP ``sqrt(2 rho)`` (pure ``eps``-DP is ``eps**2 / 2``-zCDP), rounded
        down."""
        raise NotImplementedError  # pragma: no cover

    def pure_part(self) -> PrivacyCost:
        """The cost a pure-DP step paid by this cost states: itself without a
        ``delta`` (pure), or itself (zCDP)."""
        raise NotImplementedError  # pragma: no cover

    def pure_amount(self) -> float:
        """``epsilon`` (pure); a zCDP cost cannot be counted in pure epsilon."""
        raise InvalidParameterError("a zCDP cost cannot be counted in pure epsilon")

    def in_pure_budget(self) -> float:
        """What this cost takes from a pure-DP budget (``epsilon``)."""
        raise BudgetMismatchError(
            "a pure-DP budget (delta = 0) cannot pay for an approximate-DP "
            "(Gaussian) release; use a budget with delta > 0 or a pure mechanism")

    def in_zcdp_budget(self) -> float:
        """What this cost takes from a zCDP budget: the ``rho`` its noise was
        calibrated to, or ``eps**2 / 2`` rounded up against the ledger."""
        raise NotImplementedError  # pragma: no cover

    def total_words(self) -> str:
        """The whole budget in words (``epsilon = 1``, or with ``delta`` and ``rho``)."""
        raise NotImplementedError  # pragma: no cover

    def per_value_words(self, values: int, per: str) -> str:
        """The whole budget and each of ``values`` shares (``per`` names one) in words."""
        raise NotImplementedError  # pragma: no cover

    def statement(self, pairs: int, detail: str | None = None) -> str:
        """One paragraph, in words, of what a release with this cost guarantees
        (:func:`~dpmic_dask.privacy.statement.privacy_statement`)."""
        raise NotImplementedError  # pragma: no cover

    def value_unit(self) -> str:
        """The unit one released value's cost is counted in."""
        return self.measure.unit


def _kind(rho: float | None) -> type[PrivacyCost]:
    """The kind of cost its amounts make: zCDP when a ``rho`` is given."""
    return PureCost if rho is None else ZCDPCost


@dataclass(frozen=True)
class PureCost(PrivacyCost):
    """Pure ``epsilon``-DP: epsilons add; Laplace noise at L1 sensitivity."""

    is_pure = True
    law = LAPLACE
    norm = "L1"

    def __new__(cls, *args: Any, **kwargs: Any) -> PureCost:
        return object.__new__(cls)

    def _check(self) -> None:
        if self.rho is not None:
            raise InvalidParameterError("a pure cost has no rho (give one for a zCDP cost)")
        if self.approx_delta:
            raise InvalidParameterError(
                "an approximate part needs a zCDP cost whose delta exceeds its own")

    @property
    def measure(self) -> Measure:
        return PURE_DP

    def as_rho(self) -> float:
        return self.epsilon * self.epsilon / 2.0

    def sensitivity(self, l1: float, l2: float) -> float:
        return l1

    def noise_scale(self, l1: float, l2: float) -> float:
        return safe_up(l1 / self.epsilon)

    def per_column(self, columns: int) -> float:
        return safe_down(self.epsilon / columns)

    def spent_by_columns(self, columns: int) -> float:
        return self.epsilon

    def pure_epsilon(self) -> float:
        return self.epsilon

    def pure_part(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon)

    def pure_amount(self) -> float:
        return self.epsilon

    def in_pure_budget(self) -> float:
        return self.epsilon

    def in_zcdp_budget(self) -> float:
        return safe_up(self.as_rho())

    def total_words(self) -> str:
        return f"epsilon = {self.epsilon:g}"

    def per_value_words(self, values: int, per: str) -> str:
        return f"epsilon = {self.epsilon:g} in total, {self.epsilon / values:.4g} per {per}"

    def statement(self, pairs: int, detail: str | None = None) -> str:
        return pure_statement(self.epsilon, pairs, detail)


@dataclass(frozen=True)
class ZCDPCost(PrivacyCost):
    """``rho``-zCDP stated as the ``(eps, delta)``-DP it implies: rhos add;
    Gaussian noise at L2 sensitivity."""

    rho: float = math.nan  # always given: PrivacyCost builds a ZCDPCost for a rho
    is_pure = False
    law = GAUSSIAN
    norm = "L2"

    def __new__(cls, *args: Any, **kwargs: Any) -> ZCDPCost:
        return object.__new__(cls)

    def _check(self) -> None:
        if not _positive(self.rho):
            raise InvalidParameterError("cost rho must be a finite number > 0")
        if self.approx_delta and not self.approx_delta < self.delta:
            raise InvalidParameterError(
                "an approximate part needs a zCDP cost whose delta exceeds its own")

    @property
    def measure(self) -> Measure:
        return ZCDP

    def as_rho(self) -> float:
        return self.rho

    def sensitivity(self, l1: float, l2: float) -> float:
        return l2

    def noise_scale(self, l1: float, l2: float) -> float:
        return safe_up(l2 / math.sqrt(2.0 * self.rho))

    def per_column(self, columns: int) -> float:
        eps_c = safe_down(math.sqrt(2.0 * self.rho / columns))
        while columns * eps_c ** 2 / 2.0 > self.rho:
            eps_c = safe_down(eps_c)
        return eps_c

    def spent_by_columns(self, columns: int) -> float:
        return safe_up(columns * self.per_column(columns))

    def pure_epsilon(self) -> float:
        return safe_down(math.sqrt(2.0 * self.rho))

    def pure_part(self) -> PrivacyCost:
        return self

    def in_zcdp_budget(self) -> float:
        return self.rho

    def total_words(self) -> str:
        return (f"epsilon = {self.epsilon:g}, delta = {self.delta:g} (rho = "
                f"{self.rho:.4g} zCDP)")

    def per_value_words(self, values: int, per: str) -> str:
        return (f"epsilon = {self.epsilon:g}, delta = {self.delta:g} in total, "
                f"accounted as rho = {self.rho:.4g} zCDP ({self.rho / values:.4g} per {per})")

    def statement(self, pairs: int, detail: str | None = None) -> str:
        return zcdp_statement(self, pairs, detail)

    def value_unit(self) -> str:
        return f"{self.measure.unit} (zCDP)"


PURE_DP = PureDP(PureCost)
ZCDP = ZeroConcentratedDP(ZCDPCost)


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
    mechanism = measure.release_mechanism(mechanism, what)
    (part,) = measure.split(total, (share,))
    rest = measure.rest(total, part.amount())
    return part, rest, measure.release_eps(rest, total.delta), mechanism


def column_epsilon(part: PrivacyCost, columns: int) -> float:
    """The pure ``eps_c`` of each of ``columns`` per-column pure-DP releases paid
    together from ``part``: ``epsilon / columns`` under pure DP; under zCDP the
    largest ``eps_c`` with ``columns * eps_c**2 / 2 <= rho`` (a pure ``eps``-DP
    release is ``eps**2 / 2``-zCDP). Rounded down, so the parts never add up to
    more than ``part``."""
    return part.per_column(columns)


__all__ = ["PURE_DP", "ZCDP", "Measure", "PrivacyCost", "PureCost", "PureDP", "ZCDPCost",
           "ZeroConcentratedDP", "column_epsilon", "measure_for", "split_front"]
