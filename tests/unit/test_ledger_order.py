"""A dataset's history lists its charges in the order they were made, even when
several fall within one millisecond (the ledger's time resolution)."""

from datetime import datetime, timezone

import dpmic_dask.privacy.ledgerrows as rows
from dpmic_dask import Budget
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger


class _Frozen(datetime):
    """A clock that stands still: every charge falls in the same millisecond."""

    @classmethod
    def now(cls, tz=None):
        return datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


def test_charges_within_one_millisecond_keep_their_order(tmp_path, monkeypatch):
    ledger = SQLLedger(f"sqlite:///{tmp_path / 'ledger.db'}")
    ledger.init("d", Budget(100.0))
    monkeypatch.setattr(rows, "datetime", _Frozen)
    made = [ledger.charge("d", PrivacyCost(0.01), description=f"c{i}").charge_id
            for i in range(40)]
    history = ledger.history("d")
    assert [r.charge_id for r in history] == made
    times = [r.created_at for r in history]
    assert len(set(times)) == len(times)  # strictly increasing, no ties
