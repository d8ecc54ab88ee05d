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
import math
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal

from dpmic_dask.errors import (
    BudgetExceededError,
    BudgetMismatchError,
    InvalidParameterError,
    LedgerError,
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
from dpmic_dask.privacy.conversion import (
    check_delta,
    check_epsilon,
    rho_cap,
    rho_from_eps_delta,
)
from dpmic_dask.privacy.costs import PURE_DP, PrivacyCost, measure_for
from dpmic_dask.stats.sensitivity import safe_up

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
        return self.measure is PURE_DP

    @property
    def unit(self) -> str:
        return self.measure.unit

    @property
    def cap(self) -> Decimal:
        """The cap in the budget's own unit (epsilon, or rho)."""
        if self.is_pure:
            return _exact(self.epsilon)
        return _exact(rho_from_eps_delta(self.epsilon, self.delta))

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
        if self.is_pure:
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
        if self.is_pure:
            if not cost.is_pure:
                raise BudgetMismatchError(
                    "a pure-DP budget (delta = 0) cannot pay for an approximate-DP "
                    "(Gaussian) release; use a budget with delta > 0 or a pure mechanism"
                )
            return _exact(cost.epsilon)
        if cost.rho is not None:
            return _exact(cost.rho)  # the rho the release's noise was calibrated to
        return _exact(safe_up(cost.as_rho()))  # eps**2 / 2, rounded against the ledger


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
