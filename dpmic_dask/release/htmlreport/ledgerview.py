"""A dataset's ledger history on a job's page: its charges over time, the budget
left after each (a step chart, :func:`~dpmic_dask.release.htmlreport.svg.budget_steps`)
and a table of the last charges.

Everything shown is what the ledger holds (the operator's own record): each
charge's time, cost, description, run id and job, the budget's cap, and what is
left. Nothing here reads data. The history is cut at the run's own charge, so a
page rebuilt later shows the same history (later charges are counted, not drawn).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

import dpmic_dask.release.htmlreport.svg as svg
from dpmic_dask.privacy.budget import Budget
from dpmic_dask.privacy.costs import PrivacyCost

#: How many of the last charges the table lists (the chart draws every one).
LAST = 10


@dataclass(frozen=True)
class HistoryEntry:
    """One charge as the page shows it; ``left``: the budget left after it."""

    charge_id: str
    when: datetime | None
    cost: PrivacyCost
    amount: Decimal
    left: Decimal | None
    #: the bad-event deltas of approximate parts so far (they lower a zCDP cap)
    approx: Decimal
    description: str
    run_id: str | None
    job: str | None


def _exact(value: float) -> Decimal:
    return Decimal(repr(float(value)))


def _when(record) -> datetime | None:
    """A charge's time (UTC): the SQL ledger's ISO text or the in-memory stamp."""
    stamp = getattr(record, "timestamp", None)
    if isinstance(stamp, (int, float)):
        return datetime.fromtimestamp(stamp, timezone.utc)
    try:
        when = datetime.fromisoformat(str(getattr(record, "created_at", "")))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def history_entries(records, budget: Budget | None) -> list[HistoryEntry]:
    """The ledger's records (oldest first) with what each took from ``budget``
    (in its unit) and what was left after it (``None`` without a budget)."""
    spent, approx = Decimal(0), Decimal(0)
    out = []
    for record in records:
        cost = record.cost
        amount = getattr(record, "amount", None)
        if amount is None:
            amount = budget.amount(cost) if budget is not None else _exact(cost.epsilon)
        spent += amount
        approx += _exact(cost.approx_delta)
        left = None if budget is None else budget.cap_after(approx) - spent
        out.append(HistoryEntry(str(record.charge_id), _when(record), cost, amount, left, approx,
                                str(record.description or ""), getattr(record, "run_id", None),
                                getattr(record, "job", None)))
    return out


def cost_words(cost: PrivacyCost) -> str:
    """A charge's cost in its own words: ``epsilon 0.5``, or ``rho 0.0125 (zCDP;
    epsilon 1, delta 1e-06)``, and the bad-event delta of an approximate part."""
    if cost.rho is None:
        text = f"epsilon {cost.epsilon:g}"
    else:
        text = f"rho {cost.rho:.4g} (zCDP; epsilon {cost.epsilon:g}, delta {cost.delta:g})"
    if cost.approx_delta:
        text += f" and a bad-event delta {cost.approx_delta:.3g}"
    return text


def _num(amount) -> str:
    """An amount of the budget's unit for people (6 significant digits)."""
    return f"{float(amount):.6g}"


def _time(when: datetime | None) -> str:
    return "-" if when is None else when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _cell(text: str, key=None) -> dict:
    return {"v": text if key is None else key, "text": text}


def _own_index(entries: list[HistoryEntry], charge_id, run_id, job) -> int | None:
    """Where the run's own charge is: by its charge id, else by its run id and job."""
    for k, entry in enumerate(entries):
        if charge_id and entry.charge_id == str(charge_id):
            return k
    for k, entry in enumerate(entries):
        if run_id and entry.run_id == str(run_id) and (job is None or entry.job in (job, None)):
            return k
    return None


def ledger_view(dataset: str, budget: Budget | None, records, *, charge_id=None,
                run_id=None, job=None, source: str | None = None, last: int = LAST) -> dict:
    """The history section of ``dataset``'s page: ``records`` are the ledger's
    charges of ``dataset`` (oldest first), ``budget`` its cap; the history ends at
    the run's own charge (``charge_id``, else ``run_id`` and ``job``) when found."""
    entries = history_entries(records, budget)
    own = _own_index(entries, charge_id, run_id, job)
    later = 0 if own is None else len(entries) - own - 1
    if own is not None:
        entries = entries[: own + 1]
    unit = budget.unit if budget is not None else "epsilon"
    rows = []
    for k in range(len(entries) - 1, max(len(entries) - last, 0) - 1, -1):
        entry = entries[k]
        who = " / ".join(str(v) for v in (entry.run_id, entry.job) if v) or "-"
        rows.append({"cells": [_cell(_time(entry.when), entry.when.isoformat() if entry.when
                                     else ""),
                               _cell(who), _cell(entry.description or "-"),
                               _cell(cost_words(entry.cost)),
                               _cell(f"{_num(entry.amount)} {unit}", float(entry.amount)),
                               _cell("-" if entry.left is None else f"{_num(entry.left)} {unit}",
                                     float(entry.left) if entry.left is not None else "")],
                     "text": f"{who} {entry.description}".lower(), "mine": k == own})
    chart = None
    if budget is not None and entries:
        points = [(e.when.timestamp() if e.when else None, e.left,
                   f"{_time(e.when)}: {cost_words(e.cost)} ({_num(e.amount)} {unit}); "
                   f"{_num(e.left)} {unit} left" + (" (this run)" if k == own else ""), k == own)
                  for k, e in enumerate(entries)]
        chart = svg.budget_steps(points, float(budget.cap))
        chart["times"] = [_time(entries[0].when), _time(entries[-1].when)]
        chart["cap"] = f"{_num(budget.cap)} {unit}"
        chart["left"] = f"{_num(entries[-1].left)} {unit}"
    spent = sum((e.amount for e in entries), Decimal(0))
    return {"available": True, "dataset": dataset, "source": source, "unit": unit,
            "cap": "no cap" if budget is None else budget.measure.cap_words(
                _num(budget.cap), budget.epsilon, budget.delta),
            "spent": f"{_num(spent)} {unit} in {len(entries)} charge(s)",
            "left": _left_words(budget, entries),
            "chart": chart, "rows": rows, "total": len(entries), "later": later,
            "found": own is not None, "reason": "",
            # the run's own charge, for a page to hold its stated guarantee against
            "own_cost": None if own is None else entries[own].cost}


def _left_words(budget: Budget | None, entries: list[HistoryEntry]) -> str:
    """The budget left after the last charge shown, in the budget's words."""
    if budget is None:
        return "no cap"
    if not entries:
        return budget.measure.words(_num(budget.cap), budget.delta)
    last = entries[-1]
    left = budget.cap if last.left is None else last.left
    return budget.measure.words(_num(left), budget.delta - float(last.approx))


def ledger_unavailable(reason: str, dataset: str | None = None,
                       source: str | None = None) -> dict:
    """The history section when the ledger cannot be read: why, in words."""
    return {"available": False, "dataset": dataset, "source": source, "reason": reason,
            "chart": None, "rows": [], "total": 0, "later": 0, "found": False}


__all__ = ["LAST", "HistoryEntry", "cost_words", "history_entries", "ledger_unavailable",
           "ledger_view"]
