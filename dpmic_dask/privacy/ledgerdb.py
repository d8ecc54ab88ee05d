"""The two databases a :class:`~dpmic_dask.privacy.ledger.SQLLedger` runs on: SQLite (a
file) and PostgreSQL. Each opens connections, begins the write transaction of a
charge, tells a ledger it may not write to (read-only, no permission, busy)
from one that is corrupt, and probes, before anything else of a run, that a
charge could be recorded.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from dpmic_dask.errors import LedgerError

#: What a failed connection's driver message says, read as a reason (never quoted:
#: the message names hosts, users and databases). The server's own words are
#: English unless its lc_messages says otherwise; anything else gets no reason.
_CONNECT_REASONS = (
    (("database", "does not exist"), "the server answered, but that database does not "
     "exist (check the database name in the URL, or create it)"),
    (("authentication failed",), "the server refused the user or password"),
    (("role", "does not exist"), "the server answered, but that user does not exist"),
    (("connection refused",), "nothing answers at that address and port (server down or "
     "wrong port)"),
    (("timeout expired",), "no answer within the timeout"),
    (("could not translate host name",), "the host name does not resolve"),
    (("name or service not known",), "the host name does not resolve"),
)


def connect_reason(exc: BaseException) -> str | None:
    """Why a SQL connection failed, in the package's words (``None``: unknown):
    a missing database is not a closed port. Reads the driver's message (the
    SQLAlchemy wrapper's ``orig`` where there is one) and never returns it."""
    text = str(getattr(exc, "orig", None) or exc).lower()
    for words, reason in _CONNECT_REASONS:
        if all(w in text for w in words):
            return reason
    return None

#: What a run writes to: a probe checks every one of them.
WRITTEN_TABLES = ("dpmic_charges", "dpmic_release_journal", "dpmic_journal_deliveries")


def read_only(where: str, why: str) -> LedgerError:
    """The error of a ledger that can be read but not written."""
    return LedgerError(
        f"the ledger {where} is read-only ({why}); a release records its charge there, so "
        "nothing was charged and no data was read. The ledger itself is intact: make it "
        "writable for this user (do not restore it)")


def _is_read_only(exc) -> bool:
    """Whether a SQLite error says the ledger cannot be written (not that it is damaged)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith("SQLITE_READONLY") or name in ("SQLITE_PERM", "SQLITE_CANTOPEN")


def full_or_failing(where: str) -> LedgerError:
    """The error of a ledger whose file system is full or failing (not corrupt)."""
    return LedgerError(
        f"the file system of the ledger {where} is full or failing (no space left, or an "
        "I/O error); the ledger is intact and nothing was charged: free space (or repair the "
        "disk) and retry. Do not restore the ledger from a backup")


class SQLiteDB:
    """A ledger in one SQLite file (WAL mode: to charge, it and its folder must be
    writable; one that cannot be written is still read, :meth:`_reader`)."""

    placeholder = "?"
    errors = (sqlite3.Error,)

    def __init__(self, path: Path):
        self.path = path

    def connect(self, create: bool):
        if not create and not self.path.exists():
            where = ("" if self.path.is_absolute() else
                     f" (a relative path: {str(self.path.absolute())!r} from this folder)")
            raise LedgerError(
                f"ledger file {str(self.path)!r} does not exist{where}; create it with "
                "'dpmic budget init' (if it was created from another folder, run from "
                "there or give its absolute path instead: a new ledger is a new budget)"
            )
        try:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.Error as exc:
            problem = self.classify(exc)
            if not create and self.path.is_file() and _is_read_only(exc):
                reader = self._reader()
                if reader is not None:
                    return reader
            raise problem or LedgerError(f"cannot open ledger {str(self.path)!r}: {exc}") from None
        return conn

    def _reader(self):
        """A read-only connection to a ledger that cannot be opened for writing (a
        backup on read-only media, a file this user may only read): ``budget
        show`` and ``history`` read it; a charge on it fails as read-only before
        any data is read (:meth:`probe_write`). Immutable (no locks, no WAL index)
        only where the folder cannot be written, as on read-only media; ``None``
        where even that cannot read it."""
        where = Path(os.path.abspath(self.path)).as_uri()
        wal = Path(f"{self.path}-wal")
        # immutable reads the file alone: charges still in a write-ahead log beside
        # it would be missed (a budget shown as less spent than it is)
        pending = wal.exists() and wal.stat().st_size > 0
        modes = (("mode=ro",) if pending or os.access(self.path.parent, os.W_OK)
                 else ("mode=ro", "immutable=1"))
        for mode in modes:
            try:
                conn = sqlite3.connect(f"{where}?{mode}", uri=True, timeout=60,
                                       isolation_level=None)
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.Error:
                continue
        return None

    def begin_write(self, cur, dataset: str | None):
        cur.execute("BEGIN IMMEDIATE")

    @staticmethod
    def is_full(exc) -> bool:
        """Whether ``exc`` is a full (``SQLITE_FULL``) or failing (``SQLITE_IOERR``)
        file system, not a damaged ledger."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        return name == "SQLITE_FULL" or name.startswith("SQLITE_IOERR")

    def classify(self, exc) -> LedgerError | None:
        """A ledger error for a failure that is not corruption, else ``None``."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        where = repr(str(self.path))
        if name == "SQLITE_CANTOPEN" and not self.path.parent.is_dir():
            return LedgerError(f"cannot open ledger {where}: its folder does not exist")
        if _is_read_only(exc):
            return read_only(where, "the file, its folder or its file system cannot be "
                                    "written")
        if self.is_full(exc):
            return full_or_failing(where)
        if name.startswith("SQLITE_BUSY"):
            return LedgerError(f"the ledger {where} is busy: another run held its write lock "
                               "for longer than 60 s; nothing was charged (retry later)")
        return None

    def probe_write(self, cur) -> None:
        """Raise the read-only error now if a charge could not be recorded."""
        for target, what in ((self.path, "the file"),
                             (self.path.resolve().parent, "its folder")):
            if not os.access(target, os.W_OK):
                raise read_only(repr(str(self.path)),
                                f"{what} is not writable: permissions, an immutable flag "
                                "or a read-only file system")
        # a write that changes nothing, committed: WAL and lock files included
        cur.execute("BEGIN IMMEDIATE")
        try:
            cur.execute("UPDATE dpmic_meta SET value = value WHERE key = 'schema'")
            cur.execute("COMMIT")
        except BaseException:
            if cur.connection.in_transaction:
                cur.execute("ROLLBACK")
            raise


def _psycopg():
    """psycopg, imported when a PostgreSQL ledger is used (optional: the
    ``postgres`` extra)."""
    import psycopg

    return psycopg


class PostgresDB:
    """A ledger in a PostgreSQL database."""

    placeholder = "%s"

    def __init__(self, url: str):
        self.url = url

    def connect(self, create: bool):
        try:
            psycopg = _psycopg()
        except ImportError:
            raise LedgerError("a PostgreSQL ledger needs psycopg: pip install "
                              "'dpmic_dask[postgres]'") from None
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            reason = connect_reason(exc)
            raise LedgerError(
                f"cannot reach the PostgreSQL ledger: {exc.__class__.__name__}"
                + (f" ({reason})" if reason else "")) from None
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
        return (_psycopg().Error,)

    @staticmethod
    def is_full(exc) -> bool:
        """Whether ``exc`` is the server's disk full (``DiskFull``) or an I/O error."""
        errors = _psycopg().errors
        return isinstance(exc, (errors.DiskFull, errors.IoError))

    def classify(self, exc) -> LedgerError | None:
        errors = _psycopg().errors
        if isinstance(exc, errors.ReadOnlySqlTransaction):
            return read_only("database", "the server or this session is read-only")
        if isinstance(exc, errors.InsufficientPrivilege):
            return read_only("database", "its user may not write the ledger's tables")
        if self.is_full(exc):
            return full_or_failing("database")
        return None

    def probe_write(self, cur) -> None:
        """Raise the read-only error now if a charge could not be recorded (no locks)."""
        cur.execute("SELECT current_setting('transaction_read_only')")
        if cur.fetchone()[0] == "on":
            raise read_only("database", "the server or this session is read-only")
        checks = ", ".join(f"has_table_privilege('{t}', 'INSERT')" for t in WRITTEN_TABLES)
        cur.execute(f"SELECT {checks}, has_table_privilege('dpmic_budgets', 'UPDATE')")
        if not all(cur.fetchone()):
            raise read_only("database", "its user may not write the ledger's tables")


# ---------------------------------------------------------------- the schema

SCHEMA_VERSION = "6"
_META = "CREATE TABLE IF NOT EXISTS dpmic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
#: Version 3 adds the release journal: the released (noisy) rows of a batch run,
#: written in the transaction of its charge, and the deliveries of those rows.
_JOURNAL = [
    """CREATE TABLE IF NOT EXISTS dpmic_release_journal (
        charge_id TEXT PRIMARY KEY REFERENCES dpmic_charges(charge_id),
        dataset TEXT NOT NULL, job TEXT NOT NULL, run_id TEXT NOT NULL,
        created_at TEXT NOT NULL, payload TEXT)""",
    """CREATE TABLE IF NOT EXISTS dpmic_journal_deliveries (
        charge_id TEXT NOT NULL REFERENCES dpmic_charges(charge_id),
        delivered_at TEXT NOT NULL, destination TEXT NOT NULL)""",
]
#: Version 4: a journaled run keeps the fingerprint of what its job releases
#: (:func:`dpmic_dask.batch.jobplan.job_fingerprint`), so two different jobs that share
#: a run key are told apart (NULL for runs journaled before).
_FINGERPRINT = ["ALTER TABLE dpmic_release_journal ADD COLUMN fingerprint TEXT"]
#: Version 5: a budget names the privacy unit it protects (NULL: one row, which is
#: what every budget created before means).
_UNIT = ["ALTER TABLE dpmic_budgets ADD COLUMN privacy_unit TEXT"]
#: Version 6: a charge with an approximate part keeps its bad-event delta (NULL:
#: none, which is what every charge recorded before means).
_APPROX = ["ALTER TABLE dpmic_charges ADD COLUMN approx_delta TEXT"]
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS dpmic_budgets (
        dataset TEXT PRIMARY KEY, epsilon TEXT NOT NULL, delta TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dpmic_charges (
        charge_id TEXT PRIMARY KEY, dataset TEXT NOT NULL REFERENCES dpmic_budgets(dataset),
        created_at TEXT NOT NULL, amount TEXT NOT NULL, epsilon TEXT NOT NULL,
        delta TEXT NOT NULL, rho TEXT, description TEXT NOT NULL, mechanism TEXT NOT NULL,
        columns TEXT NOT NULL, run_id TEXT, job TEXT)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS dpmic_charges_job_run
        ON dpmic_charges (dataset, job, run_id)""",
    *_JOURNAL,
    *_FINGERPRINT,
    *_UNIT,
    *_APPROX,
]
#: Upgrades, by the version they start from. 1 -> 2: charges gain a run id.
#: 2 -> 3: a run id is claimed per (dataset, job) instead of per dataset (NULLs
#: never clash: charges without a job keep their own check), and the journal.
#: 3 -> 4: the journal's fingerprint column. 4 -> 5: the budgets' privacy unit.
#: 5 -> 6: the charges' approximate part.
_UPGRADES = {
    "1": ["ALTER TABLE dpmic_charges ADD COLUMN run_id TEXT"],
    "2": ["DROP INDEX IF EXISTS dpmic_charges_run",
          "ALTER TABLE dpmic_charges ADD COLUMN job TEXT",
          """CREATE UNIQUE INDEX IF NOT EXISTS dpmic_charges_job_run
              ON dpmic_charges (dataset, job, run_id)""",
          *_JOURNAL],
    "3": _FINGERPRINT,
    "4": _UNIT,
    "5": _APPROX,
}


def _upgrade_statements(version: str) -> list[str]:
    """Statements that bring a ledger of ``version`` to :data:`SCHEMA_VERSION`."""
    steps = []
    while version != SCHEMA_VERSION:
        steps += _UPGRADES[version]
        version = str(int(version) + 1)
    return [*steps, f"UPDATE dpmic_meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema'"]
