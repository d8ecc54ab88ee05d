"""A persistent ledger's rows as read back: the history row of a charge
(:class:`ChargeRecord`, :func:`describe`), the budget and amounts as stored
(exact decimals as text), and the time stamps written with them. A row that
does not parse is reported as a corrupt ledger (:class:`LedgerError`); the
ledger itself is :class:`~dpmic_dask.privacy.ledger.SQLLedger`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from dpmic_dask.errors import LedgerError
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.costs import PrivacyCost


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _after(last) -> str:
    """The time of a new charge: now, or 1 ms after the dataset's last charge when
    that is not earlier (charges within one millisecond would otherwise tie, and
    the history, ordered by time, would list them in an arbitrary order)."""
    now = datetime.now(timezone.utc)
    try:
        prev = datetime.fromisoformat(str(last)) if last else None
    except ValueError:
        prev = None
    if prev is not None and prev.tzinfo is not None and now <= prev:
        now = prev + timedelta(milliseconds=1)
    return now.isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class ChargeRecord:
    """One row of a dataset's history."""

    charge_id: str
    created_at: str
    amount: Decimal
    cost: PrivacyCost
    description: str
    mechanism: str
    columns: tuple
    run_id: str | None = None
    job: str | None = None


def _corrupt(what: str) -> LedgerError:
    return LedgerError(f"the ledger is corrupt: {what} does not parse; nothing was charged "
                       "(restore the ledger from a backup)")


def _budget_from_row(row, dataset: str) -> Budget:
    try:
        return Budget(float(row[0]), float(row[1]), row[2] if len(row) > 2 else None)
    except Exception:  # noqa: BLE001 - any unparsable or out-of-range value
        raise _corrupt(f"the budget of dataset {dataset!r}") from None


def _record_from_row(r) -> ChargeRecord:
    try:
        columns = json.loads(r[8])
        if not isinstance(columns, list):
            raise TypeError
        return ChargeRecord(
            r[0], r[1], _amount(r[2], "this"),
            PrivacyCost(float(r[3]), float(r[4]), None if r[5] is None else float(r[5]),
                        0.0 if r[11] is None else float(r[11])),
            r[6], r[7], tuple(str(c) for c in columns), r[9], r[10])
    except Exception:  # noqa: BLE001 - any unparsable value
        raise _corrupt(f"charge {str(r[0])[:64]!r}") from None


#: How the ledger writes an amount (``str`` of a ``Decimal``, ``repr`` of a
#: float): digits, a point, an exponent. ``Decimal`` alone would also read
#: ``"1_0"`` as 10, ``" 1"`` or ``"-0"``: a hand-edited amount, not the ledger's.
_AMOUNT = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")


def _amount(text, dataset: str) -> Decimal:
    if not isinstance(text, str) or not _AMOUNT.fullmatch(text):
        raise _corrupt(f"a charge amount of dataset {dataset!r}")
    try:
        value = Decimal(text)
    except Exception:  # noqa: BLE001
        raise _corrupt(f"a charge amount of dataset {dataset!r}") from None
    if not value.is_finite() or value < 0:
        raise _corrupt(f"a charge amount of dataset {dataset!r}")
    return value



def describe(record: ChargeRecord) -> dict:
    """A JSON-friendly view of a history row."""
    return {
        "charge_id": record.charge_id,
        "approx_delta": record.cost.approx_delta,
        "time": record.created_at,
        "amount": str(record.amount),
        "epsilon": record.cost.epsilon,
        "delta": record.cost.delta,
        "rho": record.cost.rho,
        "job": record.description,
        "mechanism": record.mechanism,
        "columns": list(record.columns),
        "run_id": record.run_id,
        "job_name": record.job,
    }

