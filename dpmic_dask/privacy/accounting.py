"""Privacy accounting: the one place where budgets are checked and charged.

* What a release spends, :class:`~dpmic_dask.privacy.costs.PrivacyCost`, is typed in
  :mod:`dpmic_dask.privacy.costs` (each mechanism in :mod:`dpmic_dask.privacy.mechanisms`
  answers its own cost); its statement in words is :mod:`dpmic_dask.privacy.statement`.
  The parameter checks and
  zCDP conversions are in :mod:`dpmic_dask.privacy.conversion`.
* Budgets and ledgers: pure ``eps`` composes by addition; approximate DP is
  tracked as zero-concentrated DP (``rho`` adds; an ``eps``-DP release costs
  ``eps**2 / 2``). A ledger checks and records a charge atomically *before* any
  noise is drawn and never refunds.
* The record of a charge, the protocols every ledger implements and the prepaid
  ledger are in :mod:`dpmic_dask.privacy.charges` (imported from here too).
"""

from __future__ import annotations

import contextvars
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal

from dpmic_dask.errors import (
    InvalidParameterError,
)
from dpmic_dask.privacy.budget import (  # noqa: F401  (re-exported)
    Budget,
    _exact,
    _float_up,
    check_charge,
    unknown_dataset,
)
from dpmic_dask.privacy.charges import (  # noqa: F401  (re-exported)
    Charge,
    Ledger,
    PersistentLedger,
    PrepaidLedger,
    charge_possible,
    note_charge_possible,
    note_nothing_charged,
)
from dpmic_dask.privacy.costs import PrivacyCost


@dataclass
class InMemoryLedger:
    """A ledger held in this process: per dataset a cap and the list of charges.

    Thread-safe; every charge is checked and recorded under one lock before the
    caller draws any noise, and is never removed. Like every ledger it refuses a
    dataset it holds no budget for (:meth:`set_budget` first). Only an
    ``uncapped=True`` ledger -- the per-process default behind
    :func:`dpmic_dask.session_ledger` -- accepts every dataset and records charges
    without any cap; it holds no budgets.
    """

    #: Keeps the bad-event deltas of approximate parts.
    tracks_approx_parts = True

    budgets: dict = field(default_factory=dict)
    uncapped: bool = False
    _charges: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self):
        if self.uncapped and self.budgets:
            raise InvalidParameterError("an uncapped ledger holds no budgets")

    def budget_for(self, dataset: str) -> Budget | None:
        with self._lock:
            return self.budgets.get(dataset)

    def set_budget(self, dataset: str, budget: Budget) -> None:
        with self._lock:
            if self.uncapped:
                raise InvalidParameterError(
                    "an uncapped ledger holds no budgets; use InMemoryLedger() for caps")
            if dataset in self.budgets:
                raise InvalidParameterError(f"dataset {dataset!r} already has a budget")
            self.budgets[dataset] = budget

    def spent(self, dataset: str) -> Decimal:
        with self._lock:
            return self._spent_locked(dataset)

    def _spent_locked(self, dataset: str) -> Decimal:
        budget = self.budgets.get(dataset)
        total = Decimal(0)
        for charge in self._charges:
            if charge.dataset == dataset:
                total += budget.amount(charge.cost) if budget else _exact(charge.cost.epsilon)
        return total

    def _approx_locked(self, dataset: str) -> Decimal:
        return sum((_exact(c.cost.approx_delta) for c in self._charges
                    if c.dataset == dataset), Decimal(0))

    def approx_spent(self, dataset: str) -> Decimal:
        """The bad-event deltas of ``dataset``'s approximate parts, added up."""
        with self._lock:
            return self._approx_locked(dataset)

    def _budget_locked(self, dataset: str) -> Budget | None:
        budget = self.budgets.get(dataset)
        if budget is None and not self.uncapped:
            raise unknown_dataset(dataset)
        return budget

    def remaining(self, dataset: str) -> Decimal | None:
        """What is left of ``dataset``'s cap (``None`` on an uncapped ledger)."""
        with self._lock:
            budget = self._budget_locked(dataset)
            if budget is None:
                return None
            return budget.cap_after(self._approx_locked(dataset)) - self._spent_locked(dataset)

    def check(self, dataset: str, cost: PrivacyCost) -> None:
        """Raise now what :meth:`charge` would raise, without recording anything
        (the precheck that runs before any data is read)."""
        with self._lock:
            budget = self._budget_locked(dataset)
            if budget is not None:
                check_charge(dataset, budget, self._spent_locked(dataset), cost,
                             self._approx_locked(dataset))

    def charges(self, dataset: str | None = None) -> list[Charge]:
        """Every recorded charge (of ``dataset``, if given), oldest first."""
        with self._lock:
            return [c for c in self._charges if dataset is None or c.dataset == dataset]

    def history(self, dataset: str) -> list[Charge]:
        """``dataset``'s charges, oldest first (refuses an unknown dataset when capped)."""
        with self._lock:
            self._budget_locked(dataset)
        return self.charges(dataset)

    def charge(self, dataset: str, cost: PrivacyCost, *, description: str = "",
               mechanism: str = "", columns=()) -> Charge:
        """Record ``cost`` against ``dataset`` or raise :class:`BudgetExceededError`."""
        with self._lock:
            budget = self._budget_locked(dataset)
            if budget is not None:
                check_charge(dataset, budget, self._spent_locked(dataset), cost,
                             self._approx_locked(dataset))
            record = Charge(uuid.uuid4().hex, dataset, cost, description, time.time(),
                            mechanism, tuple(columns))
            self._charges.append(record)
            return record


# ------------------------------------------------------------------ the default ledger

_PROCESS_LEDGER = InMemoryLedger(uncapped=True)
_DEFAULT_LEDGER: contextvars.ContextVar = contextvars.ContextVar("dpmic_default_ledger",
                                                                 default=None)

#: URL scheme -> how a ledger at such a URL is built (:func:`register_ledger_scheme`).
_LEDGER_SCHEMES: dict[str, Callable[[str], PersistentLedger]] = {}


def register_ledger_scheme(*schemes: str):
    """Class decorator (or plain call) registering a ledger for URL schemes: the
    command line and the API's ``ledger="scheme://..."`` build it with
    :func:`ledger_from_url`, so a new ledger is one module that registers itself::

        @register_ledger_scheme("sqlite", "postgresql", "postgres")
        class SQLLedger: ...

    The class (or factory) is called with the whole URL and must refuse a
    malformed one with :class:`InvalidParameterError` without connecting.
    """
    def register(factory):
        for scheme in schemes:
            _LEDGER_SCHEMES[scheme.lower()] = factory
        return factory
    return register


def ledger_schemes() -> tuple[str, ...]:
    """The registered URL schemes, sorted (the SQL ledger's are registered when
    :mod:`dpmic_dask.privacy` is imported, before this module)."""
    return tuple(sorted(_LEDGER_SCHEMES))


def ledger_from_url(url) -> PersistentLedger:
    """The ledger at ``url``, by its scheme (nothing is opened yet)."""
    if not isinstance(url, str) or "://" not in url:
        raise InvalidParameterError(
            "a ledger URL looks like scheme://... (e.g. sqlite:///path/ledger.db), with a "
            f"scheme among {', '.join(sorted(_LEDGER_SCHEMES))}")
    scheme = url.split("://", 1)[0].lower()
    factory = _LEDGER_SCHEMES.get(scheme)
    if factory is None:
        raise InvalidParameterError(
            f"no ledger is registered for URL scheme {scheme[:40]!r}; known: "
            f"{', '.join(sorted(_LEDGER_SCHEMES))} (e.g. sqlite:///path/ledger.db)")
    return factory(url)


def default_ledger():
    """The ledger a release uses when it is given none.

    Normally the per-process *uncapped* session ledger: it records every charge
    and limits nothing. Inside :func:`using_ledger`, the ledger given there.
    """
    ledger = _DEFAULT_LEDGER.get()
    return _PROCESS_LEDGER if ledger is None else ledger


@contextmanager
def using_ledger(ledger):
    """Make ``ledger`` (a ledger, or a ledger URL) the default for releases in this
    block (and this context)::

        with using_ledger("sqlite:///ledger.db"):
            ddf.dpmic.pairwise(1.0, bounds=..., dataset="sales")
    """
    if isinstance(ledger, str):
        ledger = ledger_from_url(ledger)
    token = _DEFAULT_LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _DEFAULT_LEDGER.reset(token)
