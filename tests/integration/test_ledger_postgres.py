"""The persistent ledger on a real PostgreSQL server."""

from decimal import Decimal

import pytest

import dpmic_dask as dm
from dpmic_dask.accounting import Budget, PrivacyCost
from dpmic_dask.errors import LedgerError
from dpmic_dask.ledger import SQLLedger
from tests.integration.test_ledger_sqlite import race_for_budget


def test_postgres_ledger_basics(postgres_url):
    ledger = SQLLedger(postgres_url)
    with pytest.raises(LedgerError, match="not initialised"):
        ledger.remaining("d")
    ledger.init("d", Budget(1.0))
    for _ in range(10):
        ledger.charge("d", PrivacyCost(0.1), description="export")
    assert ledger.remaining("d") == 0 and ledger.spent("d") == Decimal("1.0")
    with pytest.raises(dm.BudgetExceededError):
        ledger.charge("d", PrivacyCost(0.1))
    assert len(ledger.history("d")) == 10


def test_unreachable_postgres_refuses():
    with pytest.raises(LedgerError, match="cannot reach"):
        SQLLedger("postgresql://nobody@127.0.0.1:1/none").charge("d", PrivacyCost(0.1))


def test_eight_processes_race_on_postgres(postgres_url):
    outcomes = race_for_budget(postgres_url)
    assert outcomes.count("ok") == 3 and outcomes.count("refused") == 5
    assert len(SQLLedger(postgres_url).history("d")) == 3
