"""Persistent privacy ledgers: SQLite (embedded default) and PostgreSQL.

Per dataset, a cap (a :class:`~dpmic_dask.accounting.Budget`) and an append-
only table of charges. :meth:`SQLLedger.charge` checks and records a charge in
one transaction that holds a write lock (SQLite ``BEGIN IMMEDIATE``; PostgreSQL
``SELECT ... FOR UPDATE`` on the dataset's budget row inside an explicit ``READ
COMMITTED`` transaction), so concurrent jobs cannot overspend, whatever default
isolation level the database server is configured with. Charges are never
updated or deleted: a crash after the commit keeps the charge. Amounts are
exact decimals stored as text.

A ledger that is missing, unreachable or corrupt raises :class:`LedgerError`,
and the release is refused before any data is read. Rows that do not parse
(a tampered amount, columns that are not JSON) are reported as a corrupt ledger.

A charge may carry a *run id* (batch jobs): it is claimed in the same
transaction as the charge, and a second charge for the same dataset and run id
is refused with :class:`RunClaimedError` -- so two overlapping runs with one id
never both charge, and a retry of a run that charged but died never charges
again. Schema version 1 ledgers (no run ids) are upgraded in place on first use.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

from .accounting import Budget, Charge, PrivacyCost, check_charge, unknown_dataset
from .errors import DPMICError, InvalidParameterError, LedgerError, RunClaimedError

SCHEMA_VERSION = "2"
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS dpmic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dpmic_budgets (
        dataset TEXT PRIMARY KEY, epsilon TEXT NOT NULL, delta TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dpmic_charges (
        charge_id TEXT PRIMARY KEY, dataset TEXT NOT NULL REFERENCES dpmic_budgets(dataset),
        created_at TEXT NOT NULL, amount TEXT NOT NULL, epsilon TEXT NOT NULL,
        delta TEXT NOT NULL, rho TEXT, description TEXT NOT NULL, mechanism TEXT NOT NULL,
        columns TEXT NOT NULL, run_id TEXT)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS dpmic_charges_run ON dpmic_charges (dataset, run_id)""",
]
#: Version 1 -> 2: charges gain a run id, unique per dataset (NULLs never clash).
_MIGRATE_1_TO_2 = [
    "ALTER TABLE dpmic_charges ADD COLUMN run_id TEXT",
    "CREATE UNIQUE INDEX IF NOT EXISTS dpmic_charges_run ON dpmic_charges (dataset, run_id)",
    "UPDATE dpmic_meta SET value = '2' WHERE key = 'schema'",
]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


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


def _corrupt(what: str) -> LedgerError:
    return LedgerError(f"the ledger is corrupt: {what} does not parse; nothing was charged "
                       "(restore the ledger from a backup)")


def _budget_from_row(row, dataset: str) -> Budget:
    try:
        return Budget(float(row[0]), float(row[1]))
    except Exception:  # noqa: BLE001 - any unparsable or out-of-range value
        raise _corrupt(f"the budget of dataset {dataset!r}") from None


def _record_from_row(r) -> ChargeRecord:
    try:
        columns = json.loads(r[8])
        if not isinstance(columns, list):
            raise TypeError
        return ChargeRecord(
            r[0], r[1], _amount(r[2], "this"),
            PrivacyCost(float(r[3]), float(r[4]), None if r[5] is None else float(r[5])),
            r[6], r[7], tuple(str(c) for c in columns), r[9])
    except Exception:  # noqa: BLE001 - any unparsable value
        raise _corrupt(f"charge {str(r[0])[:64]!r}") from None


def _amount(text, dataset: str) -> Decimal:
    try:
        value = Decimal(text)
    except Exception:  # noqa: BLE001
        raise _corrupt(f"a charge amount of dataset {dataset!r}") from None
    if not value.is_finite() or value < 0:
        raise _corrupt(f"a charge amount of dataset {dataset!r}")
    return value


class _SQLite:
    placeholder = "?"

    def __init__(self, path: Path):
        self.path = path

    def connect(self, create: bool):
        if not create and not self.path.exists():
            raise LedgerError(
                f"ledger file {str(self.path)!r} does not exist; create it with "
                "'dpmic budget init'"
            )
        try:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {str(self.path)!r}: {exc}") from None
        return conn

    def begin_write(self, cur, dataset: str | None):
        cur.execute("BEGIN IMMEDIATE")

    errors = (sqlite3.Error,)


class _Postgres:
    placeholder = "%s"

    def __init__(self, url: str):
        self.url = url

    def connect(self, create: bool):
        try:
            import psycopg
        except ImportError:
            raise LedgerError("a PostgreSQL ledger needs psycopg: pip install "
                              "'dpmic_dask[postgres]'") from None
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise LedgerError(
                f"cannot reach the PostgreSQL ledger: {exc.__class__.__name__}") from None
        return conn

    def begin_write(self, cur, dataset: str | None):
        # Explicit READ COMMITTED: under a server default of REPEATABLE READ or
        # SERIALIZABLE the snapshot would be taken before the row lock is granted,
        # and the sum of charges read after the wait would miss the charge that the
        # lock holder just committed. READ COMMITTED takes a fresh snapshot for every
        # statement, so the SELECT of charges after FOR UPDATE sees every commit.
        cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        cur.execute("SELECT dataset FROM dpmic_budgets WHERE dataset = %s FOR UPDATE", (dataset,))

    @property
    def errors(self):
        import psycopg

        return (psycopg.Error,)


class SQLLedger:
    """A persistent ledger at ``url``: ``sqlite:///path/to/file.db`` or
    ``postgresql://user:password@host:port/dbname``."""

    def __init__(self, url: str):
        self.url = url
        parsed = urlparse(url)
        self._db: _SQLite | _Postgres
        if parsed.scheme == "sqlite":
            path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else ""
            if not path:
                raise InvalidParameterError("a SQLite ledger URL looks like sqlite:///path/ledger.db")
            self._db = _SQLite(Path(path))
        elif parsed.scheme in ("postgresql", "postgres"):
            self._db = _Postgres(url)
        else:
            raise InvalidParameterError("ledger URL must start with sqlite:/// or postgresql://")

    # -- plumbing ---------------------------------------------------------------
    def _sql(self, text: str) -> str:
        return text.replace("?", self._db.placeholder)

    def _run(self, fn, *, create: bool = False):
        conn = self._db.connect(create)
        try:
            cur = conn.cursor()
            if not create:
                self._check_schema(cur)
            return fn(cur)
        except DPMICError:
            raise
        except self._db.errors as exc:
            raise LedgerError(f"ledger error ({exc.__class__.__name__}): the ledger is "
                              "unreadable or corrupt; nothing was charged") from None
        finally:
            conn.close()

    def _check_schema(self, cur) -> None:
        try:
            cur.execute(self._sql("SELECT value FROM dpmic_meta WHERE key = ?"), ("schema",))
            row = cur.fetchone()
        except self._db.errors:
            raise LedgerError("the ledger is not initialised or is corrupt; run "
                              "'dpmic budget init'") from None
        if row is not None and row[0] == "1":
            self._migrate(cur)
        elif row is None or row[0] != SCHEMA_VERSION:
            raise LedgerError("the ledger has no or an unknown schema version")

    def _migrate(self, cur) -> None:
        """Upgrade a version-1 ledger in place (once, under the write lock)."""
        self._db.begin_write(cur, None)
        try:
            if self._db.placeholder == "%s":  # PostgreSQL: one migration at a time
                cur.execute("LOCK TABLE dpmic_meta IN ACCESS EXCLUSIVE MODE")
            cur.execute(self._sql("SELECT value FROM dpmic_meta WHERE key = ?"), ("schema",))
            if cur.fetchone()[0] == "1":
                for statement in _MIGRATE_1_TO_2:
                    cur.execute(statement)
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    # -- administration ---------------------------------------------------------
    def init(self, dataset: str, budget: Budget) -> None:
        """Create the tables if needed and set ``dataset``'s cap (once)."""
        def work(cur):
            cur.execute("BEGIN")
            for statement in _SCHEMA:
                cur.execute(statement)
            cur.execute(self._sql("SELECT value FROM dpmic_meta WHERE key = ?"), ("schema",))
            found = cur.fetchone()
            if found is None:
                cur.execute(self._sql("INSERT INTO dpmic_meta (key, value) VALUES (?, ?)"),
                            ("schema", SCHEMA_VERSION))
            elif found[0] == "1":
                for statement in _MIGRATE_1_TO_2[:-1]:
                    cur.execute(statement)
                cur.execute("UPDATE dpmic_meta SET value = '2' WHERE key = 'schema'")
            elif found[0] != SCHEMA_VERSION:
                cur.execute("ROLLBACK")
                raise LedgerError("the ledger has an unknown schema version")
            cur.execute(self._sql("SELECT 1 FROM dpmic_budgets WHERE dataset = ?"), (dataset,))
            if cur.fetchone() is not None:
                cur.execute("ROLLBACK")
                raise InvalidParameterError(
                    f"dataset {dataset!r} already has a budget; budgets are never changed")
            cur.execute(self._sql(
                "INSERT INTO dpmic_budgets (dataset, epsilon, delta, created_at) "
                "VALUES (?, ?, ?, ?)"),
                (dataset, repr(budget.epsilon), repr(budget.delta), _now()))
            cur.execute("COMMIT")
        self._run(work, create=True)

    def budget_for(self, dataset: str) -> Budget | None:
        def work(cur):
            cur.execute(self._sql("SELECT epsilon, delta FROM dpmic_budgets WHERE dataset = ?"),
                        (dataset,))
            row = cur.fetchone()
            return None if row is None else _budget_from_row(row, dataset)
        return self._run(work)

    def _require_budget(self, cur, dataset: str) -> Budget:
        cur.execute(self._sql("SELECT epsilon, delta FROM dpmic_budgets WHERE dataset = ?"),
                    (dataset,))
        row = cur.fetchone()
        if row is None:
            raise unknown_dataset(dataset)
        return _budget_from_row(row, dataset)

    def _spent(self, cur, dataset: str) -> Decimal:
        cur.execute(self._sql("SELECT amount FROM dpmic_charges WHERE dataset = ?"), (dataset,))
        return sum((_amount(r[0], dataset) for r in cur.fetchall()), Decimal(0))

    def _require_unclaimed(self, cur, dataset: str, run_id: str | None) -> None:
        if run_id is None:
            return
        cur.execute(self._sql("SELECT charge_id FROM dpmic_charges WHERE dataset = ? AND "
                              "run_id = ?"), (dataset, run_id))
        row = cur.fetchone()
        if row is not None:
            raise RunClaimedError(
                f"run {run_id!r} of dataset {dataset!r} already charged (charge {row[0]}): "
                "it is still running, or it died after charging and its release is lost; "
                "nothing was charged again (use a new run id to release again)")

    def spent(self, dataset: str) -> Decimal:
        def work(cur):
            self._require_budget(cur, dataset)
            return self._spent(cur, dataset)
        return self._run(work)

    def remaining(self, dataset: str) -> Decimal:
        def work(cur):
            budget = self._require_budget(cur, dataset)
            return budget.cap - self._spent(cur, dataset)
        return self._run(work)

    def check(self, dataset: str, cost: PrivacyCost, *, run_id: str | None = None) -> None:
        """Raise now what :meth:`charge` would raise, without recording anything
        (the precheck that runs before any data is read)."""
        def work(cur):
            budget = self._require_budget(cur, dataset)
            self._require_unclaimed(cur, dataset, run_id)
            check_charge(dataset, budget, self._spent(cur, dataset), cost)
        self._run(work)

    def for_run(self, run_id: str) -> RunLedger:
        """The view of this ledger for one batch run: its charges carry ``run_id``."""
        return RunLedger(self, run_id)

    def history(self, dataset: str) -> list[ChargeRecord]:
        def work(cur):
            self._require_budget(cur, dataset)
            cur.execute(self._sql(
                "SELECT charge_id, created_at, amount, epsilon, delta, rho, description, "
                "mechanism, columns, run_id FROM dpmic_charges WHERE dataset = ? "
                "ORDER BY created_at, charge_id"), (dataset,))
            return [_record_from_row(r) for r in cur.fetchall()]
        return self._run(work)

    # -- the one write that matters -----------------------------------------------
    def charge(self, dataset: str, cost: PrivacyCost, *, description: str = "",
               mechanism: str = "", columns=(), run_id: str | None = None) -> Charge:
        """Atomically check the cap (and that ``run_id`` has not charged) and append a
        charge, or raise :class:`BudgetExceededError` / :class:`RunClaimedError`."""
        def work(cur):
            self._db.begin_write(cur, dataset)
            try:
                budget = self._require_budget(cur, dataset)
                self._require_unclaimed(cur, dataset, run_id)
                need = check_charge(dataset, budget, self._spent(cur, dataset), cost)
                record = Charge(uuid.uuid4().hex, dataset, cost, description, time.time(),
                                mechanism, tuple(columns))
                cur.execute(self._sql(
                    "INSERT INTO dpmic_charges (charge_id, dataset, created_at, amount, epsilon, "
                    "delta, rho, description, mechanism, columns, run_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                    (record.charge_id, dataset, _now(), str(need), repr(cost.epsilon),
                     repr(cost.delta), None if cost.rho is None else repr(cost.rho), description,
                     mechanism, json.dumps([str(c) for c in columns]), run_id))
                cur.execute("COMMIT")
                return record
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return self._run(work)


class RunLedger:
    """A :class:`SQLLedger` bound to one batch run: :meth:`check` and :meth:`charge`
    also claim the run id, so one run id charges at most once per dataset."""

    def __init__(self, ledger: SQLLedger, run_id: str):
        self.ledger = ledger
        self.run_id = run_id

    def check(self, dataset: str, cost: PrivacyCost) -> None:
        self.ledger.check(dataset, cost, run_id=self.run_id)

    def charge(self, dataset: str, cost: PrivacyCost, **kwargs) -> Charge:
        return self.ledger.charge(dataset, cost, run_id=self.run_id, **kwargs)


def describe(record: ChargeRecord) -> dict:
    """A JSON-friendly view of a history row."""
    return {
        "charge_id": record.charge_id,
        "time": record.created_at,
        "amount": str(record.amount),
        "epsilon": record.cost.epsilon,
        "delta": record.cost.delta,
        "rho": record.cost.rho,
        "job": record.description,
        "mechanism": record.mechanism,
        "columns": list(record.columns),
        "run_id": record.run_id,
    }

