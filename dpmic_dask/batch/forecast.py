"""How many more runs of a given cost a dataset's budget can pay
(``dpmic budget forecast``)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dpmic_dask.errors import LedgerError
from dpmic_dask.privacy.accounting import PersistentLedger, unknown_dataset


@dataclass(frozen=True)
class Forecast:
    """How many more runs of one cost a dataset's remaining budget pays for."""

    remaining: Decimal
    per_run: Decimal
    unit: str
    runs: int

    def sentence(self, what: str = "") -> str:
        """One line for a report."""
        runs = f"{self.runs} more run{'s' if self.runs != 1 else ''}"
        return (f"the remaining budget pays for {runs}{' ' + what if what else ''} "
                f"({float(self.per_run):.4g} {self.unit} each)")


def remaining_words(ledger, dataset: str) -> str:
    """A dataset's remaining budget for people: its amount to 4 digits in its unit
    and what it implies (``budget show``'s words; the bad-event deltas of
    approximate parts, where kept, lower the delta it is stated at)."""
    cap = ledger.budget_for(dataset)
    if cap is None:
        raise unknown_dataset(dataset)
    left = ledger.remaining(dataset)
    tracks = getattr(ledger, "tracks_approx_parts", False) and cap.measure.holds_approx_parts
    parts = ledger.approx_spent(dataset) if tracks else 0
    return cap.measure.words(left, cap.delta - float(parts))


def forecast(ledger: PersistentLedger, dataset: str, cost) -> Forecast:
    """The number of further releases costing ``cost`` that ``dataset`` can pay."""
    budget = ledger.budget_for(dataset)
    if budget is None:
        raise unknown_dataset(dataset)
    per_run = budget.amount(cost)
    remaining = ledger.remaining(dataset)
    runs = int(remaining // per_run) if remaining > 0 else 0
    if cost.approx_delta:  # each run's bad-event delta also lowers the cap
        runs = _runs_with_parts(budget, ledger, dataset, cost, per_run, runs)
    return Forecast(remaining=remaining, per_run=per_run, unit=budget.unit, runs=runs)


def _runs_with_parts(budget, ledger, dataset: str, cost, per_run: Decimal, most: int) -> int:
    """The most runs (at most ``most``) that fit when each also adds its bad-event
    delta: the largest ``r`` with ``r`` runs' rho within the cap lowered by
    the deltas of the parts so far and of the ``r`` runs (the ledger's own rule)."""
    if not getattr(ledger, "tracks_approx_parts", False):
        raise LedgerError("this ledger does not keep the bad-event deltas of approximate "
                          "parts, so it cannot pay for one")
    spent, before = ledger.spent(dataset), ledger.approx_spent(dataset)
    part = budget.approx(cost)

    def fits(runs: int) -> bool:
        cap = budget.cap_after(before + runs * part)
        return cap > 0 and spent + runs * per_run <= cap

    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low
