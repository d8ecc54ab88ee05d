"""Persistent privacy ledgers: SQLite (embedded default) and PostgreSQL.

Per dataset, a cap (a :class:`~dpmic_dask.privacy.accounting.Budget`) and an append-
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

A charge may carry a *run id* and a *job* (batch jobs): the run id is claimed
per dataset and job in the same transaction as the charge, and a second charge
for the same key is refused with :class:`RunClaimedError` -- so two overlapping
runs with one id never both charge, and a retry never charges again. A batch
run keeps its released values with its charge, in the same transaction
(:meth:`SQLLedger.open_charge`; the release journal is :mod:`dpmic_dask.batch.journal`).
Older ledgers (version 1: no run ids; 2: no jobs, no journal; 3: no job
fingerprints; 4: no privacy units; 5: no approximate parts) are upgraded in
place on first use. A charge with an approximate part (categories chosen from
the values that occur) keeps its bad-event ``delta`` beside its ``rho``; those
deltas lower the budget's ``rho`` cap
(:meth:`~dpmic_dask.privacy.accounting.Budget.cap_after`). A ledger that can be
read but not written is reported as read-only (:meth:`SQLLedger.check_writable`,
before a run starts anything).

How rows read back (and :func:`describe`) is :mod:`dpmic_dask.privacy.ledgerrows`;
the run-bound view and the open charge of a batch run are
:mod:`dpmic_dask.privacy.ledgerrun`.
"""

from __future__ import annotations

import json
import time
import uuid
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

from dpmic_dask.errors import DPMICError, InvalidParameterError, LedgerError, RunClaimedError
from dpmic_dask.privacy.accounting import (
    Budget,
    check_charge,
    register_ledger_scheme,
    unknown_dataset,
)
from dpmic_dask.privacy.charges import Charge
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.ledgerdb import (
    _META,
    _SCHEMA,
    _UPGRADES,
    SCHEMA_VERSION,
    PostgresDB,
    SQLiteDB,
    _upgrade_statements,
)
from dpmic_dask.privacy.ledgerrows import (
    ChargeRecord,
    _after,
    _amount,
    _budget_from_row,
    _now,
    _record_from_row,
    describe,  # noqa: F401  (re-exported)
)
from dpmic_dask.privacy.ledgerrun import OpenCharge, RunLedger

#: A charge row's fields, in the order :func:`_record_from_row` reads them.
_CHARGE_COLUMNS = ("charge_id, created_at, amount, epsilon, delta, rho, description, "
                   "mechanism, columns, run_id, job, approx_delta")


@register_ledger_scheme("sqlite", "postgresql", "postgres")
class SQLLedger:
    """A persistent ledger at ``url``: ``sqlite:///path/to/file.db`` or
    ``postgresql://user:password@host:port/dbname``."""

    #: Keeps the bad-event deltas of approximate parts (schema 6).
    tracks_approx_parts = True

    def __init__(self, url: str):
        self.url = url
        parsed = urlparse(url)
        self._db: SQLiteDB | PostgresDB
        if parsed.scheme == "sqlite":
            path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else ""
            if not path:
                raise InvalidParameterError("a SQLite ledger URL looks like sqlite:///path/ledger.db")
            self._db = SQLiteDB(Path(path))
        elif parsed.scheme in ("postgresql", "postgres"):
            self._db = PostgresDB(url)
        else:
            raise InvalidParameterError("ledger URL must start with sqlite:/// or postgresql://")

    # -- plumbing ---------------------------------------------------------------
    def _sql(self, text: str) -> str:
        return text.replace("?", self._db.placeholder)

    def _failure(self, exc) -> LedgerError:
        """A database error as a ledger error: read-only or busy, else corrupt."""
        return self._db.classify(exc) or LedgerError(
            f"ledger error ({exc.__class__.__name__}): the ledger is unreadable or corrupt; "
            "nothing was charged")

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
            raise self._failure(exc) from None
        finally:
            conn.close()

    def _check_schema(self, cur) -> None:
        try:
            cur.execute(self._sql("SELECT value FROM dpmic_meta WHERE key = ?"), ("schema",))
            row = cur.fetchone()
        except self._db.errors as exc:
            if self._db.is_full(exc):  # a failing disk is not an uninitialised ledger
                raise self._failure(exc) from None
            raise LedgerError("the ledger is not initialised or is corrupt; run "
                              "'dpmic budget init'") from None
        if row is not None and row[0] in _UPGRADES:
            self._migrate(cur)
        elif row is None or row[0] != SCHEMA_VERSION:
            raise LedgerError("the ledger has no or an unknown schema version")

    def _migrate(self, cur) -> None:
        """Upgrade an older ledger in place (once, under the write lock)."""
        self._db.begin_write(cur, None)
        try:
            if self._db.placeholder == "%s":  # PostgreSQL: one migration at a time
                cur.execute("LOCK TABLE dpmic_meta IN ACCESS EXCLUSIVE MODE")
            cur.execute(self._sql("SELECT value FROM dpmic_meta WHERE key = ?"), ("schema",))
            version = cur.fetchone()[0]
            if version in _UPGRADES:
                for statement in _upgrade_statements(version):
                    cur.execute(statement)
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    def check_writable(self) -> None:
        """Refuse a ledger that could be read but not written (permissions, a
        read-only directory, file system or server): a run checks this first,
        before any cluster starts or data is read."""
        self._run(self._db.probe_write)

    # -- administration ---------------------------------------------------------
    def init(self, dataset: str, budget: Budget) -> None:
        """Create the tables if needed and set ``dataset``'s cap (once)."""
        def work(cur):
            cur.execute("BEGIN")
            cur.execute(_META)
            cur.execute(self._sql("SELECT value FROM dpmic_meta WHERE key = ?"), ("schema",))
            found = cur.fetchone()
            if found is None:
                for statement in _SCHEMA:
                    cur.execute(statement)
                cur.execute(self._sql("INSERT INTO dpmic_meta (key, value) VALUES (?, ?)"),
                            ("schema", SCHEMA_VERSION))
            elif found[0] in _UPGRADES:
                for statement in _upgrade_statements(found[0]):
                    cur.execute(statement)
            elif found[0] != SCHEMA_VERSION:
                cur.execute("ROLLBACK")
                raise LedgerError("the ledger has an unknown schema version")
            cur.execute(self._sql("SELECT 1 FROM dpmic_budgets WHERE dataset = ?"), (dataset,))
            if cur.fetchone() is not None:
                cur.execute("ROLLBACK")
                raise InvalidParameterError(
                    f"dataset {dataset!r} already has a budget; budgets are never changed")
            cur.execute(self._sql(
                "INSERT INTO dpmic_budgets (dataset, epsilon, delta, created_at, privacy_unit) "
                "VALUES (?, ?, ?, ?, ?)"),
                (dataset, repr(budget.epsilon), repr(budget.delta), _now(),
                 budget.privacy_unit))
            cur.execute("COMMIT")
        self._run(work, create=True)

    def budget_for(self, dataset: str) -> Budget | None:
        def work(cur):
            cur.execute(self._sql("SELECT epsilon, delta, privacy_unit FROM dpmic_budgets "
                              "WHERE dataset = ?"),
                        (dataset,))
            row = cur.fetchone()
            return None if row is None else _budget_from_row(row, dataset)
        return self._run(work)

    def _require_budget(self, cur, dataset: str) -> Budget:
        cur.execute(self._sql("SELECT epsilon, delta, privacy_unit FROM dpmic_budgets "
                              "WHERE dataset = ?"),
                    (dataset,))
        row = cur.fetchone()
        if row is None:
            raise unknown_dataset(dataset)
        return _budget_from_row(row, dataset)

    def _spent(self, cur, dataset: str) -> Decimal:
        return self._spent_parts(cur, dataset)[0]

    def _spent_parts(self, cur, dataset: str) -> tuple[Decimal, Decimal]:
        """What ``dataset`` spent (in its budget's unit) and the bad-event deltas of
        its approximate parts, each added up exactly."""
        cur.execute(self._sql(f"SELECT {_CHARGE_COLUMNS} FROM dpmic_charges "
                              "WHERE dataset = ?"), (dataset,))
        spent, approx = Decimal(0), Decimal(0)
        for row in cur.fetchall():
            # every field parsed, as for the history: a row that does not is a
            # corrupt ledger here too, refused before the run reads any data
            spent += _record_from_row(row).amount
            if row[11] is not None:
                approx += _amount(row[11], dataset)
        return spent, approx

    def approx_spent(self, dataset: str) -> Decimal:
        """The bad-event deltas of ``dataset``'s approximate parts, added up."""
        def work(cur):
            self._require_budget(cur, dataset)
            return self._spent_parts(cur, dataset)[1]
        return self._run(work)

    def _require_unclaimed(self, cur, dataset: str, run_id: str | None,
                           job: str | None = None) -> None:
        """Refuse a run id already charged for ``dataset`` and ``job`` (a charge of
        the same run id without a job, from before runs had jobs, counts too)."""
        if run_id is None:
            return
        same_job = "job IS NULL" if job is None else "(job = ? OR job IS NULL)"
        cur.execute(self._sql("SELECT charge_id FROM dpmic_charges WHERE dataset = ? AND "
                              f"run_id = ? AND {same_job}"),
                    (dataset, run_id) if job is None else (dataset, run_id, job))
        row = cur.fetchone()
        if row is not None:
            of_job = "" if job is None else f" of job {job!r}"
            raise RunClaimedError(
                f"run {run_id!r}{of_job} on dataset {dataset!r} was charged (charge "
                f"{row[0]}) by another run with this id, while this one ran; nothing was "
                "charged again ('dpmic budget history' shows whether that release was "
                "delivered)")

    def spent(self, dataset: str) -> Decimal:
        def work(cur):
            self._require_budget(cur, dataset)
            return self._spent(cur, dataset)
        return self._run(work)

    def remaining(self, dataset: str) -> Decimal:
        def work(cur):
            budget = self._require_budget(cur, dataset)
            spent, approx = self._spent_parts(cur, dataset)
            return budget.cap_after(approx) - spent
        return self._run(work)

    def check(self, dataset: str, cost: PrivacyCost, *, run_id: str | None = None,
              job: str | None = None) -> None:
        """Raise now what :meth:`charge` would raise, without recording anything
        (the precheck that runs before any data is read)."""
        def work(cur):
            budget = self._require_budget(cur, dataset)
            self._require_unclaimed(cur, dataset, run_id, job)
            spent, approx = self._spent_parts(cur, dataset)
            check_charge(dataset, budget, spent, cost, approx)
        self._run(work)

    def for_run(self, run_id: str, job: str | None = None) -> RunLedger:
        """The view of this ledger for one batch run: its charges carry ``run_id``
        (and ``job``), each committed at once. ``dpmic run`` charges through
        :class:`dpmic_dask.batch.journal.JournaledRun` instead, which commits the charge
        with the released values."""
        return RunLedger(self, run_id, job)

    def history(self, dataset: str) -> list[ChargeRecord]:
        def work(cur):
            self._require_budget(cur, dataset)
            cur.execute(self._sql(f"SELECT {_CHARGE_COLUMNS} FROM dpmic_charges "
                                  "WHERE dataset = ? ORDER BY created_at, charge_id"),
                        (dataset,))
            return [_record_from_row(r) for r in cur.fetchall()]
        return self._run(work)

    # -- the one write that matters -----------------------------------------------
    def _insert_charge(self, cur, dataset: str, cost: PrivacyCost, *, description: str = "",
                       mechanism: str = "", columns=(), run_id: str | None = None,
                       job: str | None = None) -> Charge:
        """Check and append a charge inside the caller's write transaction."""
        budget = self._require_budget(cur, dataset)
        self._require_unclaimed(cur, dataset, run_id, job)
        spent, approx = self._spent_parts(cur, dataset)
        need = check_charge(dataset, budget, spent, cost, approx)
        record = Charge(uuid.uuid4().hex, dataset, cost, description, time.time(),
                        mechanism, tuple(columns))
        cur.execute(self._sql("SELECT MAX(created_at) FROM dpmic_charges WHERE dataset = ?"),
                    (dataset,))
        (last,) = cur.fetchone()
        cur.execute(self._sql(
            "INSERT INTO dpmic_charges (charge_id, dataset, created_at, amount, epsilon, "
            "delta, rho, description, mechanism, columns, run_id, job, approx_delta) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
            (record.charge_id, dataset, _after(last), str(need), repr(cost.epsilon),
             repr(cost.delta), _repr_or_none(cost.rho), description,
             mechanism, json.dumps([str(c) for c in columns]), run_id, job,
             repr(cost.approx_delta) if cost.approx_delta else None))
        return record

    def charge(self, dataset: str, cost: PrivacyCost, *, description: str = "",
               mechanism: str = "", columns=(), run_id: str | None = None,
               job: str | None = None) -> Charge:
        """Atomically check the cap (and that ``run_id`` has not charged) and append a
        charge, or raise :class:`BudgetExceededError` / :class:`RunClaimedError`."""
        def work(cur):
            self._db.begin_write(cur, dataset)
            try:
                record = self._insert_charge(cur, dataset, cost, description=description,
                                             mechanism=mechanism, columns=columns,
                                             run_id=run_id, job=job)
                cur.execute("COMMIT")
                return record
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return self._run(work)

    def open_charge(self, dataset: str, cost: PrivacyCost, **details) -> OpenCharge:
        """Check and append a charge like :meth:`charge`, but leave its transaction
        open (holding the write lock): the caller adds to it and commits with
        :meth:`OpenCharge.commit`. If the process dies first, nothing was charged."""
        conn = self._db.connect(False)
        try:
            cur = conn.cursor()
            self._check_schema(cur)
            self._db.begin_write(cur, dataset)
            try:
                record = self._insert_charge(cur, dataset, cost, **details)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        except BaseException as exc:
            conn.close()
            if isinstance(exc, self._db.errors):
                raise self._failure(exc) from None
            raise
        return OpenCharge(self, conn, cur, record)


def _repr_or_none(value: float | None) -> str | None:
    """An optional float as a ledger stores it: its repr, or NULL."""
    return None if value is None else repr(value)
