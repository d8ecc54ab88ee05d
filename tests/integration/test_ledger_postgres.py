"""The persistent ledger on a real PostgreSQL server."""

from decimal import Decimal

import pytest

import dpmic_dask as dm
from dpmic_dask.errors import LedgerError
from dpmic_dask.privacy.accounting import Budget, PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger
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
    with pytest.raises(LedgerError, match="cannot reach") as err:
        SQLLedger("postgresql://nobody@127.0.0.1:1/none").charge("d", PrivacyCost(0.1))
    assert "nothing answers at that address and port" in str(err.value)


def test_a_missing_database_is_not_a_closed_port(postgres_server):
    """The server answers but the database is not there: said as such, naming
    neither the database nor the host (the SQL input of a job says the same)."""
    missing = postgres_server.rsplit("/", 1)[0] + "/no_such_ledger_db"
    with pytest.raises(LedgerError, match="that database does not exist") as err:
        SQLLedger(missing).charge("d", PrivacyCost(0.1))
    assert "no_such_ledger_db" not in str(err.value) and "127.0.0.1" not in str(err.value)


def test_eight_processes_race_on_postgres(postgres_url):
    outcomes = race_for_budget(postgres_url)
    assert outcomes.count("ok") == 3 and outcomes.count("refused") == 5
    assert len(SQLLedger(postgres_url).history("d")) == 3


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_race_is_exact_whatever_the_server_default_isolation(postgres_url, isolation):
    import psycopg

    server, name = postgres_url.rsplit("/", 1)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET default_transaction_isolation = '{isolation}'")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        shown = conn.execute("SHOW default_transaction_isolation").fetchone()[0]
    assert shown == isolation
    # 8 processes x 5 charges of 0.1 against a cap of 1.0: exactly 10 may pass
    outcomes = race_for_budget(postgres_url, releases_allowed=10, amount=0.1, attempts=5)
    assert outcomes.count("ok") == 10 and outcomes.count("refused") == 30
    ledger = SQLLedger(postgres_url)
    assert len(ledger.history("d")) == 10 and ledger.spent("d") == Decimal("1.0")


def test_a_read_only_postgres_ledger_is_reported_as_read_only(postgres_url):
    import uuid

    import psycopg

    SQLLedger(postgres_url).init("d", Budget(1.0))
    ledger = SQLLedger(postgres_url)
    ledger.check_writable()  # the owner may write
    reader = "reader_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    reading = SQLLedger(postgres_url.replace("//dpmic@", f"//{reader}@"))
    assert reading.remaining("d") == Decimal("1.0")  # reading is allowed
    with pytest.raises(LedgerError, match="read-only .*may not write") as caught:
        reading.check_writable()
    assert "corrupt" not in str(caught.value)
    with pytest.raises(LedgerError, match="read-only") as caught:
        reading.charge("d", PrivacyCost(0.1))
    assert "corrupt" not in str(caught.value)
    # a server (or session) in read-only mode, whatever the user may do
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        database = postgres_url.rsplit("/", 1)[1]
        conn.execute(f"ALTER DATABASE {database} SET default_transaction_read_only = on")
    with pytest.raises(LedgerError, match="read-only .*server or this session"):
        SQLLedger(postgres_url).check_writable()
