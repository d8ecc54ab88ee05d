"""Privacy accounting: the one place where budgets are checked, split and charged.

* Validation of ``eps`` / ``delta`` / mechanism names.
* :func:`plan_release` turns a total budget into per-pair noise (SPEC section 4):
  every noise scale here depends only on ``n``, ``eps``, ``delta``, the number
  of pairs ``P``, ``B`` and ``c`` -- never on data values.
* Budgets and ledgers: pure ``eps`` composes by addition; approximate DP is
  tracked as zero-concentrated DP (``rho`` adds; an ``eps``-DP release costs
  ``eps**2 / 2``). A ledger checks and records a charge atomically *before* any
  noise is drawn and never refunds.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal

from .errors import (
    BudgetExceededError,
    BudgetMismatchError,
    InvalidParameterError,
    LedgerError,
)
from .sensitivity import mice_sensitivity, micr_sensitivity, safe_down, safe_up

MECHANISMS = ("auto", "micr-lap", "micr-gauss", "mice-lap", "micr-geom")
#: Real outputs are rounded to multiples of this before integer noise is added.
LATTICE = 2.0 ** -40
#: Largest noise scale, in integer units (lattice steps or counts), that is sampled.
#: Beyond it a release is noise only, and the exact integer samplers underneath
#: saturate at +-(2**63 - 1); such plans are refused before anything is charged.
MAX_NOISE_UNITS = 2.0 ** 52
#: Half-width multipliers of the central 95% interval of the noise alone.
LAPLACE_CI95 = math.log(20.0)
GAUSS_CI95 = 1.959963984540054


def check_epsilon(eps, name: str = "eps") -> float:
    """``eps`` must be a finite real number > 0."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) and not hasattr(eps, "__float__"):
        raise InvalidParameterError(f"{name} must be a finite number > 0")
    value = float(eps)
    if not math.isfinite(value) or value <= 0:
        raise InvalidParameterError(f"{name} must be a finite number > 0")
    return value


def check_delta(delta, name: str = "delta") -> float:
    """``delta`` must be 0 or a normal double in ``(0, 1)``.

    Subnormal values (below about ``2.2e-308``) are refused: ``1 / delta``
    overflows there, and no release needs a ``delta`` that small.
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) and not hasattr(delta, "__float__"):
        raise InvalidParameterError(f"{name} must be a number in [0, 1)")
    value = float(delta)
    if not (0.0 <= value < 1.0):
        raise InvalidParameterError(f"{name} must be a number in [0, 1)")
    if 0.0 < value < sys.float_info.min:
        raise InvalidParameterError(
            f"{name} must be 0 or at least {sys.float_info.min:.3g} (a normal double)")
    return value


def check_mechanism(mechanism) -> str:
    if mechanism not in MECHANISMS:
        raise InvalidParameterError(
            "mechanism must be one of " + ", ".join(repr(m) for m in MECHANISMS)
        )
    return mechanism


def rho_from_eps_delta(eps: float, delta: float) -> float:
    """Largest ``rho`` with ``rho``-zCDP implying ``(eps, delta)``-DP (Bun & Steinke 2016):
    ``(sqrt(L + eps) - sqrt(L))**2`` with ``L = ln(1/delta)``, rounded down.

    Evaluated as ``(eps / (sqrt(L + eps) + sqrt(L)))**2``, which neither cancels
    (small ``eps``) nor overflows (huge ``eps``); ``L`` is ``-log(delta)`` so that
    no ``1 / delta`` can overflow. Raises :class:`InvalidParameterError` when the
    result is not a positive finite number (``eps`` too small for ``delta``).
    """
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    if delta == 0.0:
        raise InvalidParameterError("a zCDP rho needs delta > 0")
    log_term = -math.log(delta)
    rho = safe_down((eps / (math.sqrt(log_term + eps) + math.sqrt(log_term))) ** 2)
    if not (math.isfinite(rho) and rho > 0.0):
        raise InvalidParameterError(
            "eps is too small for this delta: the zCDP budget rho underflows to 0")
    return rho


def eps_from_rho(rho: float, delta: float) -> float:
    """``eps`` of the ``(eps, delta)``-DP guarantee implied by ``rho``-zCDP, rounded up."""
    return safe_up(rho + 2.0 * math.sqrt(rho * -math.log(delta)))


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends: ``epsilon`` (and ``delta``); ``rho`` when the
    release is a zCDP mechanism (Gaussian), else ``None`` (pure ``epsilon``-DP)."""

    epsilon: float
    delta: float = 0.0
    rho: float | None = None

    def __post_init__(self):
        # A cost reaches a ledger: it must be a real, positive amount, never NaN.
        check_epsilon(self.epsilon, "cost epsilon")
        check_delta(self.delta, "cost delta")
        if self.rho is not None and not (math.isfinite(self.rho) and self.rho > 0):
            raise InvalidParameterError("cost rho must be a finite number > 0")

    @property
    def is_pure(self) -> bool:
        return self.rho is None

    def as_rho(self) -> float:
        """zCDP cost: ``rho`` itself, or ``eps**2 / 2`` for a pure ``eps``-DP release."""
        return self.rho if self.rho is not None else self.epsilon * self.epsilon / 2.0


@dataclass(frozen=True)
class NoisePlan:
    """Noise for one release of ``pairs`` MIC values, from public quantities only.

    ``noise_scale`` is per pair: the Laplace scale ``b`` or Gaussian ``sigma`` on
    the MIC scale, or for ``micr-geom`` the per-cell two-sided geometric scale in
    counts. ``ci95`` is the half-width of the central 95% interval of the noise
    alone (NaN for ``micr-geom``, whose noise is on counts).
    """

    mechanism: str
    distribution: str
    n: int
    pairs: int
    B: float
    c: int
    epsilon: float
    delta: float
    sensitivity: float
    noise_scale: float
    ci95: float
    lattice: float
    cost: PrivacyCost

    @property
    def epsilon_per_pair(self) -> float:
        return self.epsilon / self.pairs


def resolve_mechanism(mechanism: str, eps: float, delta: float, pairs: int) -> str:
    """``auto``: ``micr-lap`` when ``delta == 0``; otherwise whichever of ``micr-lap``
    and ``micr-gauss`` has the smaller per-pair noise standard deviation."""
    mechanism = check_mechanism(mechanism)
    if mechanism == "micr-gauss" and delta == 0:
        raise InvalidParameterError("mechanism 'micr-gauss' needs delta > 0")
    if mechanism != "auto":
        return mechanism
    if delta == 0:
        return "micr-lap"
    return "micr-gauss" if gaussian_beats_laplace(eps, delta, pairs) else "micr-lap"


def gaussian_beats_laplace(eps: float, delta: float, pairs: int) -> bool:
    """True when Gaussian noise (zCDP, L2 sensitivity ``sqrt(P) Delta``) has a smaller
    standard deviation than Laplace (L1 sensitivity ``P Delta``) for the same budget.

    The ratio sigma / (sqrt(2) b) = eps / (2 sqrt(rho P)) does not depend on ``Delta``
    and hence not on ``n``: Gaussian wins once ``P > eps**2 / (4 rho)`` (13 pairs at
    ``eps = 1, delta = 1e-5``; 15 at ``delta = 1e-6``).
    """
    rho = rho_from_eps_delta(eps, delta)
    return eps / (2.0 * math.sqrt(rho * pairs)) < 1.0


def release_cost(mechanism: str, eps: float, delta: float) -> PrivacyCost:
    """What a release with a resolved ``mechanism`` and total ``(eps, delta)`` is charged.

    The one rule for both the budget precheck (before any data is read) and the
    charge itself: Gaussian releases cost ``rho_from_eps_delta(eps, delta)`` zCDP,
    every other mechanism is pure ``eps``-DP.
    """
    if mechanism == "micr-gauss":
        return PrivacyCost(eps, delta, rho_from_eps_delta(eps, delta))
    return PrivacyCost(eps, 0.0, None)


def _check_noise_units(units: float, what: str) -> None:
    """Refuse a plan whose noise scale, in integer units, cannot be sampled faithfully."""
    if not units <= MAX_NOISE_UNITS:  # also NaN
        raise InvalidParameterError(
            f"the {what} noise would have scale {units:.3g} units, above the sampling limit "
            f"of {MAX_NOISE_UNITS:.3g}; such a release would be noise only: raise eps, "
            "release fewer pairs or use more rows (nothing was charged)"
        )


def plan_release(*, mechanism: str, n: int, eps: float, delta: float, pairs: int,
                 B: float, c: int) -> NoisePlan:
    """Split a total ``(eps, delta)`` over ``pairs`` MIC values and calibrate the noise.

    * ``micr-lap``: Laplace with scale ``P * (Delta + gamma) / eps`` (L1 sensitivity of
      ``P`` values, each widened by the lattice step ``gamma``).
    * ``micr-gauss``: discrete Gaussian with ``sigma = sqrt(P) (Delta + gamma) / sqrt(2 rho)``,
      ``rho = rho_from_eps_delta(eps, delta)``.
    * ``mice-lap``: Laplace with the MICe sensitivity ``B (2 log2 n + 4.8) / n``.
    * ``micr-geom``: each cell of each of the ``G`` master grids of each pair gets
      two-sided geometric noise of scale ``2 G P / eps`` (honest accounting).
    """
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    resolved = resolve_mechanism(mechanism, eps, delta, pairs)
    cost = release_cost(resolved, eps, delta)
    if resolved == "micr-geom":
        grids = 2 * (int(B) // 2 - 1)
        scale = safe_up(2.0 * grids * pairs / eps)
        _check_noise_units(scale, "count")
        return NoisePlan(resolved, "geometric-counts", n, pairs, B, c, eps, 0.0, 2.0,
                         scale, math.nan, 1.0, cost)
    if resolved == "mice-lap":
        sens = mice_sensitivity(n, B)
    else:
        sens = micr_sensitivity(n)
    widened = safe_up(sens + LATTICE)
    if resolved == "micr-gauss":
        sigma = safe_up(math.sqrt(pairs) * widened / math.sqrt(2.0 * cost.rho))
        _check_noise_units(sigma / LATTICE, "Gaussian")
        return NoisePlan(resolved, "gaussian", n, pairs, B, c, eps, delta, sens, sigma,
                         GAUSS_CI95 * sigma, LATTICE, cost)
    scale = safe_up(pairs * widened / eps)
    _check_noise_units(scale / LATTICE, "Laplace")
    return NoisePlan(resolved, "laplace", n, pairs, B, c, eps, 0.0, sens, scale,
                     LAPLACE_CI95 * scale, LATTICE, cost)


def mutual_information_bound_nats(eps: float) -> float:
    """An ``eps``-DP release leaks at most ``min(eps, eps**2)`` nats of conditional
    mutual information about any one row (Cuff & Yu 2016, Lemma 1)."""
    return min(eps, eps * eps)


def privacy_statement(cost: PrivacyCost, pairs: int) -> str:
    """One paragraph, in words, of what a release with ``cost`` guarantees."""
    plural = "s" if pairs != 1 else ""
    if cost.is_pure:
        bound = mutual_information_bound_nats(cost.epsilon)
        return (
            f"This release is {cost.epsilon:g}-differentially private with respect to "
            f"replacing any one row ({cost.epsilon / pairs:g} per pair over {pairs} "
            f"pair{plural}). This implies that it reveals at most {bound:.4g} nats of "
            "mutual information about any one row beyond what the other rows already reveal."
        )
    return (
        f"This release is ({cost.epsilon:g}, {cost.delta:g})-differentially private "
        f"with respect to replacing any one row. It is accounted as {cost.rho:.6g}-zCDP "
        f"in total ({cost.rho / pairs:.4g} per pair over {pairs} pair{plural}); zCDP "
        "costs add up across releases, epsilons of Gaussian releases do not."
    )


def value_cost(cost: PrivacyCost, pairs: int) -> tuple[float, str]:
    """What each of ``pairs`` released values cost, and the unit it is counted in."""
    if cost.is_pure:
        return cost.epsilon / pairs, "epsilon"
    return cost.rho / pairs, "rho (zCDP)"


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

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "budget epsilon"))
        object.__setattr__(self, "delta", check_delta(self.delta, "budget delta"))
        self.cap  # noqa: B018  (refuses a budget whose rho underflows, at creation)

    @property
    def is_pure(self) -> bool:
        return self.delta == 0.0

    @property
    def unit(self) -> str:
        return "epsilon" if self.is_pure else "rho"

    @property
    def cap(self) -> Decimal:
        """The cap in the budget's own unit (epsilon, or rho)."""
        if self.is_pure:
            return _exact(self.epsilon)
        return _exact(rho_from_eps_delta(self.epsilon, self.delta))

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


def check_charge(dataset: str, budget: Budget, spent: Decimal, cost: PrivacyCost) -> Decimal:
    """The one check-and-record rule every ledger applies, under its own lock or
    transaction: the amount ``cost`` takes from ``budget``, or
    :class:`BudgetExceededError` when ``spent`` plus that amount would pass the cap."""
    need = budget.amount(cost)
    left = budget.cap - spent
    if need > left:
        raise BudgetExceededError(
            f"release needs {need} but dataset {dataset!r} has {left} of its "
            f"{budget.unit} budget left; nothing was released"
        )
    return need


def unknown_dataset(dataset: str) -> LedgerError:
    """The error every capped ledger raises for a dataset it holds no budget for."""
    return LedgerError(
        f"dataset {dataset!r} has no budget in this ledger; create one first (in-memory: "
        "ledger.set_budget; persistent: 'dpmic budget init'); nothing was read or charged"
    )


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
            return budget.cap - self._spent_locked(dataset)

    def check(self, dataset: str, cost: PrivacyCost) -> None:
        """Raise now what :meth:`charge` would raise, without recording anything
        (the precheck that runs before any data is read)."""
        with self._lock:
            budget = self._budget_locked(dataset)
            if budget is not None:
                check_charge(dataset, budget, self._spent_locked(dataset), cost)

    def charges(self, dataset: str | None = None) -> list[Charge]:
        with self._lock:
            return [c for c in self._charges if dataset is None or c.dataset == dataset]

    def charge(self, dataset: str, cost: PrivacyCost, *, description: str = "",
               mechanism: str = "", columns=()) -> Charge:
        """Record ``cost`` against ``dataset`` or raise :class:`BudgetExceededError`."""
        with self._lock:
            budget = self._budget_locked(dataset)
            if budget is not None:
                check_charge(dataset, budget, self._spent_locked(dataset), cost)
            record = Charge(uuid.uuid4().hex, dataset, cost, description, time.time(),
                            mechanism, tuple(columns))
            self._charges.append(record)
            return record
