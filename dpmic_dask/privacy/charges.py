"""What a ledger records and what every ledger offers.

* :class:`Charge`, the record of one charge, and the :class:`Ledger` and
  :class:`PersistentLedger` protocols that every ledger implements (the
  in-memory ledger, the budget check and the scheme registry are in
  :mod:`dpmic_dask.privacy.accounting`; the SQL ledger in
  :mod:`dpmic_dask.privacy.ledger`);
* :class:`PrepaidLedger`, one part of a recorded charge spent by the one inner
  release it was paid for;
* whether this process may have charged (:func:`note_charge_possible`,
  :func:`note_nothing_charged`, :func:`charge_possible`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dpmic_dask.errors import InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover
    from dpmic_dask.privacy.budget import Budget
    from dpmic_dask.privacy.costs import PrivacyCost


@dataclass(frozen=True)
class Charge:
    """A recorded, non-refundable charge."""

    charge_id: str
    dataset: str
    cost: PrivacyCost
    description: str
    timestamp: float
    mechanism: str = ""
    columns: tuple = ()


@runtime_checkable
class Ledger(Protocol):
    """What every ledger offers. :meth:`check` refuses now what :meth:`charge` would
    refuse, without recording; :meth:`charge` checks and records atomically (the
    one rule: :func:`check_charge`; unknown datasets refused on a capped ledger)."""

    def check(self, dataset: str, cost: PrivacyCost) -> None: ...

    def charge(self, dataset: str, cost: PrivacyCost, *, description: str = "",
               mechanism: str = "", columns=()) -> Charge: ...

    def remaining(self, dataset: str) -> Decimal | None: ...

    def history(self, dataset: str) -> list: ...


@runtime_checkable
class PersistentLedger(Ledger, Protocol):
    """A ledger kept outside the process, built from a URL
    (:func:`register_ledger_scheme`): the budget commands also set caps and read
    what was spent, and a run first checks that a charge could be recorded."""

    def init(self, dataset: str, budget: Budget) -> None: ...

    def budget_for(self, dataset: str) -> Budget | None: ...

    def spent(self, dataset: str) -> Decimal: ...

    def remaining(self, dataset: str) -> Decimal: ...

    def check_writable(self) -> None: ...



class PrepaidLedger:
    """One part of a charge already recorded in a real ledger, for the one inner
    release that spends it (a release composed of steps charges once, up front).

    :meth:`charge` accepts exactly one cost that fits in ``part`` (same kind:
    an epsilon within a pure part, a rho within a zCDP part) and returns the
    parent charge; anything else is refused. Nothing here writes to a ledger.
    """

    def __init__(self, charge: Charge, part: PrivacyCost):
        self._charge = charge
        self._part = part
        self._used = False
        self._lock = threading.Lock()

    def _fits(self, cost: PrivacyCost) -> bool:
        return self._part.measure.fits(cost, self._part)

    def check(self, dataset: str, cost: PrivacyCost) -> None:
        if not self._fits(cost) or self._used:
            raise InvalidParameterError("the inner release does not fit the part prepaid "
                                        "for it (nothing more was charged)")

    def charge(self, dataset: str, cost: PrivacyCost, *, description: str = "",
               mechanism: str = "", columns=()) -> Charge:
        with self._lock:
            self.check(dataset, cost)
            self._used = True
        return self._charge

    def remaining(self, dataset: str) -> Decimal | None:
        return None

    def history(self, dataset: str) -> list:
        return [self._charge]


class _ChargeState:
    possible = False


_CHARGE_STATE = _ChargeState()


def note_charge_possible() -> None:
    """Record that this process reached a point from which a release may charge
    (called just before a release asks its ledger to charge)."""
    _CHARGE_STATE.possible = True


def note_nothing_charged() -> None:
    """Record that no charge stands: a new command starts, or a charge this
    command opened was undone (an interrupted batch run rolls back its open charge)."""
    _CHARGE_STATE.possible = False


def charge_possible() -> bool:
    """Whether the budget may have been charged by this process's command; an
    interruption before :func:`note_charge_possible` certainly charged nothing."""
    return _CHARGE_STATE.possible

