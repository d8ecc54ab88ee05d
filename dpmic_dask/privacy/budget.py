"""A dataset's total privacy budget (:class:`Budget`) and the check of one
charge against it (:func:`check_charge`); the ledgers of :mod:`.accounting` and
:mod:`.ledger` keep budgets and charges."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from dpmic_dask.errors import (
    BudgetExceededError,
    BudgetMismatchError,
    InvalidParameterError,
    LedgerError,
)
from dpmic_dask.privacy.conversion import (
    check_delta,
    check_epsilon,
    rho_cap,
)
from dpmic_dask.privacy.costs import PrivacyCost, measure_for

# --------------------------------------------------------------------------- budget


def _exact(x: float) -> Decimal:
    """Decimal of a float's shortest repr, so 0.1 + 0.2 + 0.3 == 0.6 as typed."""
    return Decimal(repr(float(x)))


@dataclass(frozen=True)
class Budget:
    """A total privacy budget for one dataset.

    ``delta == 0``: pure ``epsilon``-DP, releases add their ``epsilon``.
    ``delta > 0``: tracked as zCDP with cap ``rho_from_eps_delta(epsilon, delta)``;
    releases add their ``rho`` (``eps**2 / 2`` for a pure release).
    """

    epsilon: float
    delta: float = 0.0
    #: The privacy unit the budget protects: ``None`` for one row (the default), or
    #: the unit's column(s) as ``"customer_id"`` / ``"a+b"``. Releases asking for
    #: another unit on this dataset are refused before any data is read.
    privacy_unit: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "budget epsilon"))
        object.__setattr__(self, "delta", check_delta(self.delta, "budget delta"))
        if self.privacy_unit is not None and (not isinstance(self.privacy_unit, str)
                                              or not self.privacy_unit):
            raise InvalidParameterError("a budget's privacy_unit is a column name or None")
        self.cap  # noqa: B018  (refuses a budget whose rho underflows, at creation)

    @property
    def measure(self):
        """How releases charged to this budget compose (pure DP or zCDP)."""
        return measure_for(self.delta)

    @property
    def is_pure(self) -> bool:
        return self.measure.kind.is_pure

    @property
    def unit(self) -> str:
        return self.measure.unit

    @property
    def cap(self) -> Decimal:
        """The cap in the budget's own unit (epsilon, or rho)."""
        return _exact(self.measure.total(self.epsilon, self.delta).amount())

    def cap_after(self, approx: Decimal) -> Decimal:
        """The cap once approximate parts with bad-event chances adding up to
        ``approx`` are charged: ``approx`` is taken from the budget's ``delta``
        (and ``ln(1 / (1 - approx))`` from its ``eps``) before ``rho`` is
        converted (:func:`rho_cap`)."""
        if not approx:
            return self.cap
        return _exact(rho_cap(self.epsilon, self.delta, _float_up(approx)))

    def approx(self, cost: PrivacyCost) -> Decimal:
        """The bad-event ``delta`` ``cost`` adds to this budget's approximate parts
        (:class:`BudgetMismatchError` on a pure budget, which cannot hold one)."""
        if not cost.approx_delta:
            return Decimal(0)
        if not self.measure.holds_approx_parts:
            raise BudgetMismatchError(
                "a pure-DP budget (delta = 0) cannot pay for categories chosen from the "
                "values that occur (their guarantee has a delta); use a budget with "
                "delta > 0 or give public candidates")
        return _exact(cost.approx_delta)

    def amount(self, cost: PrivacyCost) -> Decimal:
        """What ``cost`` uses of this budget, in its unit.

        Raises :class:`BudgetMismatchError` for an approximate-DP cost on a pure
        budget: that is a configuration problem, not an exhausted budget.
        """
        return _exact(self.measure.charged(cost))


def check_charge(dataset: str, budget: Budget, spent: Decimal, cost: PrivacyCost,
                 approx_spent: Decimal = Decimal(0)) -> Decimal:
    """The one check-and-record rule every ledger applies, under its own lock or
    transaction: the amount ``cost`` takes from ``budget``, or
    :class:`BudgetExceededError` when ``spent`` plus that amount would pass the cap
    (``approx_spent``: the bad-event deltas of the approximate parts charged
    before, which with ``cost``'s own lower the cap, :meth:`Budget.cap_after`)."""
    approx = approx_spent + budget.approx(cost)
    need = budget.amount(cost)
    cap = budget.cap_after(approx)
    if approx and not cap > 0:
        raise BudgetExceededError(
            f"dataset {dataset!r} has no delta left for a part with a bad-event delta "
            f"(its parts so far: {approx_spent}); nothing was released")
    left = cap - spent
    if need > left:
        raise BudgetExceededError(
            f"release needs {need} but dataset {dataset!r} has {left} of its "
            f"{budget.unit} budget left; nothing was released"
        )
    return need


def _float_up(amount: Decimal) -> float:
    """``amount`` as a float, never below it."""
    value = float(amount)
    if Decimal(repr(value)) < amount:
        value = math.nextafter(value, math.inf)
    return value


def unknown_dataset(dataset: str) -> LedgerError:
    """The error every capped ledger raises for a dataset it holds no budget for."""
    return LedgerError(
        f"dataset {dataset!r} has no budget in this ledger; create one first (in-memory: "
        "ledger.set_budget; persistent: 'dpmic budget init'); nothing was read or charged"
    )
