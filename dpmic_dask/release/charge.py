"""The one charge of a release, and what runs around it.

Every release path (the values of every pair, a private selection, private
bounds and categories, per-unit releases, causal discovery, batch runs) checks
its ledger and budget here before any data is read (:func:`precheck_budget`),
says what its one charge is once every check passed (a :class:`Bill`), and is
charged once by the executor (:func:`~dpmic_dask.release.executor.run_charged`
calls :func:`charge_budget`, before any noise is drawn), which runs what follows
the charge inside :func:`after_charge`. Without ``ledger=`` the charge goes to
:func:`session_ledger`.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

from dpmic_dask.errors import (
    BudgetExceededError,
    DPMICError,
    InvalidParameterError,
    LargeEpsilonWarning,
    LedgerError,
    PrivacyLeakWarning,
    ReleaseIncompleteError,
    UnitMismatchError,
    user_stacklevel,
)
from dpmic_dask.privacy.accounting import default_ledger, ledger_from_url, note_charge_possible
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.release.bounding import unit_label

log = logging.getLogger("dpmic_dask")
DEFAULT_DATASET = "default"



def session_ledger():
    """The in-process default ledger used when no ``ledger=`` is given.

    It is *uncapped*: it accepts every dataset and records every charge without
    limiting anything. Pass a capped :class:`~dpmic_dask.InMemoryLedger` or a
    persistent :class:`~dpmic_dask.SQLLedger` to enforce a budget, or make one the
    default for a block with :func:`dpmic_dask.privacy.accounting.using_ledger`.
    """
    return default_ledger()



def check_ledger(ledger) -> None:
    """``None``, a ledger URL or a ledger (an object with ``check`` and ``charge``);
    anything else is refused with its type only, before any data is read."""
    if isinstance(ledger, str):
        ledger_from_url(ledger)
        return
    if ledger is None or all(callable(getattr(ledger, m, None)) for m in ("check", "charge")):
        return
    raise InvalidParameterError(
        "ledger must be a ledger (dpmic_dask.SQLLedger, dpmic_dask.InMemoryLedger, ...), a "
        f"ledger URL or None, not a {type(ledger).__name__}")



def _ledger(ledger):
    """``ledger``, or the default (the precheck comes through here before any read)."""
    check_ledger(ledger)
    if isinstance(ledger, str):
        return ledger_from_url(ledger)
    return default_ledger() if ledger is None else ledger



def check_ledger_unit(ledger, dataset, unit: tuple[str, ...] | None) -> None:
    """Refuse, before anything is read, a release whose privacy unit is not the one
    the dataset's budget is for (a ledger without budgets accepts any unit)."""
    ledger = _ledger(ledger)
    budget_for = getattr(ledger, "budget_for", None)
    if not callable(budget_for):
        return
    budget = budget_for(dataset or DEFAULT_DATASET)
    if budget is None:
        return
    stored = getattr(budget, "privacy_unit", None)
    asked = None if unit is None else unit_label(unit)
    if stored != asked:
        have = "one row" if stored is None else repr(stored)
        want = "one row" if asked is None else repr(asked)
        raise UnitMismatchError(
            f"dataset {dataset or DEFAULT_DATASET!r} has a budget per {have}; this release "
            f"asks for privacy per {want}. One dataset's budget is for one privacy unit; "
            "nothing was charged and no data was read")


def precheck_budget(ledger, dataset, cost: PrivacyCost, privacy_unit=None) -> None:
    """Before any data is read: refuse what the charge would refuse (an unknown
    dataset, a ledger that cannot be reached, a budget of the wrong kind or one too
    small, a budget for another privacy unit: ``privacy_unit`` is the release's,
    ``None`` for one row). Not binding: the atomic charge after counting is what
    counts."""
    check_ledger_unit(ledger, dataset, privacy_unit)
    if cost.approx_delta and not getattr(_ledger(ledger), "tracks_approx_parts", False):
        raise LedgerError(
            "this ledger does not keep the bad-event deltas of approximate parts (categories "
            "chosen from the values that occur), so it cannot pay for one; use an "
            "in-memory, SQLite or PostgreSQL ledger (nothing was read or charged)")
    try:
        _ledger(ledger).check(dataset or DEFAULT_DATASET, cost)
    except BudgetExceededError as exc:
        message = str(exc)
    else:
        return
    raise BudgetExceededError(f"{message}; no data was read")



@dataclass(frozen=True)
class Bill:
    """What a release's one charge records, said by the release once every check
    before the charge passed: the cost and the ledger's description, mechanism and
    columns."""

    cost: PrivacyCost
    description: str
    mechanism: str
    columns: tuple = ()


#: An ``eps`` above this, for one release, is said (:class:`LargeEpsilonWarning`):
#: ``e^10`` is a factor of about 22,000 on the odds of any outcome.
LARGE_EPSILON = 10.0


def warn_large_epsilon(cost: PrivacyCost) -> None:
    """Say, before the charge, that a release's ``eps`` is too large to protect much
    (a public number; the release goes on)."""
    eps = float(cost.epsilon)
    if eps > LARGE_EPSILON:
        warnings.warn(
            f"this release is charged eps = {eps:.4g}, above {LARGE_EPSILON:g}: the "
            f"guarantee lets any one person's data change the odds of any outcome by a "
            f"factor up to e^{eps:.4g}, which protects little; the accounting is right, "
            f"but choose eps <= {LARGE_EPSILON:g} to protect the people in the table",
            LargeEpsilonWarning, stacklevel=user_stacklevel())


def charge_budget(cost: PrivacyCost, ledger, dataset, *, description: str, mechanism: str,
                  columns=()):
    """The one budget charge of a release; raises before any noise if over budget."""
    note_charge_possible()  # an interruption from here on may follow the charge
    target = _ledger(ledger)
    charge = target.charge(dataset or DEFAULT_DATASET, cost, description=description,
                           mechanism=mechanism, columns=tuple(columns))
    if not getattr(target, "commits_later", False):  # else logged by its commit
        log_charged(mechanism, dataset or DEFAULT_DATASET, charge.charge_id)
    return charge


def log_charged(mechanism: str, dataset: str, charge_id: str) -> None:
    """Log a charge once it is committed (a ledger whose charge commits later, a
    batch run's :class:`~dpmic_dask.batch.journal.JournaledRun`, calls this from
    its commit: an uncommitted charge may still be rolled back)."""
    log.info("charged %s to dataset %r (charge %s)", mechanism, dataset, charge_id)



def warn_if_delta_large(delta: float, n: int) -> None:
    """``delta`` at or above ``1 / N`` allows releasing a random row in the clear."""
    if delta * n >= 1:
        warnings.warn(
            f"delta = {delta:g} is at least 1/N for N = {n} rows: an (eps, delta) guarantee "
            "this weak allows publishing a random row in the clear; use delta well below 1/N",
            PrivacyLeakWarning, stacklevel=4)



@contextmanager
def after_charge(charge):
    """Around what runs after the charge of a release of several passes: a failure
    no check could foresee (the data changed or became unreadable between the
    passes) says that the budget was charged, and which charge."""
    try:
        yield
    except DPMICError as exc:
        reason = str(exc).replace(" (nothing was charged)", "").replace(
            "; nothing was charged", "")
        raise ReleaseIncompleteError(
            f"the budget was charged (charge {charge.charge_id}) but the release could not be "
            f"completed: {reason}. A step after the charge failed (the data changed or became "
            "unreadable between the passes of this release, or the cluster failed); nothing "
            "was released, and a new attempt is a new release that is charged again") from None

