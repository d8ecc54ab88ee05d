"""The release journal of batch runs: released values kept with their charge.

A batch run's charge and its released rows (the noisy values and the public
columns around them -- never an exact count or a data value) are written to the
ledger in one transaction (:class:`JournaledRun`). Where the rows then go (a
folder, a SQL table) is a *delivery*, recorded separately and repeatable: a
retry of a charged run, or ``dpmic deliver``, writes the journaled rows again,
never recomputes them, and never charges again. The key of a run is
``(dataset, job, run id)``; the journal also keeps a fingerprint of what the
job releases, so that two different jobs sharing a key (two files with one
name) are refused rather than settled with each other's rows, and the
destinations a release was delivered to, so that "delivered" means delivered
to this job's output.
"""

from __future__ import annotations

import functools
import json
import logging
import time
import warnings
from dataclasses import dataclass, field

import pandas as pd

from dpmic_dask.batch.interrupts import deferred
from dpmic_dask.errors import DPMICError, LedgerError
from dpmic_dask.privacy.charges import Charge
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.privacy.ledgerrows import _now
from dpmic_dask.privacy.ledgerrun import OpenCharge
from dpmic_dask.release.charge import log_charged


def encode_rows(rows: pd.DataFrame, report: str | None = None) -> str:
    """The released rows as JSON text (column names, dtypes, values; exact floats),
    with the release's report text when given (its notes, for a page built later)."""
    columns = [{"name": str(name), "dtype": str(rows[name].dtype),
                "values": rows[name].tolist()} for name in rows.columns]
    return json.dumps({"columns": columns, **({"report": report} if report else {})})


def decode_rows(found) -> pd.DataFrame:
    """The rows :func:`encode_rows` stored (its JSON, parsed), with their dtypes."""
    try:
        columns = found["columns"]
        return pd.DataFrame({c["name"]: pd.Series(c["values"], dtype=c["dtype"])
                             for c in columns})
    except Exception:  # noqa: BLE001 - any unparsable journal entry
        raise LedgerError("the ledger is corrupt: a journaled release does not parse "
                          "(restore the ledger from a backup)") from None


@dataclass(frozen=True)
class JournalEntry:
    """A charged run as the journal knows it.

    ``payload`` is ``None`` when the values were not kept: the release failed
    after its charge, or the run was charged before the ledger had a journal.
    """

    charge_id: str
    dataset: str
    job: str | None
    run_id: str
    payload: str | None = None
    deliveries: tuple = field(default=())
    fingerprint: str | None = None

    @property
    def kept(self) -> bool:
        return self.payload is not None

    @property
    def delivered(self) -> bool:
        return bool(self.deliveries)

    def delivered_to(self, destination: str) -> bool:
        """Whether the rows were recorded as written to ``destination``."""
        return any(where == destination for _, where in self.deliveries)

    def same_job(self, fingerprint: str | tuple[str, ...]) -> bool:
        """Whether this run was charged by a job releasing the same thing (one of
        ``fingerprint``'s; ``True`` for runs journaled before fingerprints were kept)."""
        accepted = (fingerprint,) if isinstance(fingerprint, str) else fingerprint
        return self.fingerprint is None or self.fingerprint in accepted

    @functools.cached_property
    def _parsed(self):
        """The payload's JSON, parsed once for every read of it (``None``: no
        payload, or not JSON)."""
        try:
            return json.loads(self.payload) if self.payload is not None else None
        except ValueError:
            return None

    def rows(self) -> pd.DataFrame:
        """The journaled rows (only when :attr:`kept`)."""
        if self.payload is None:
            raise LedgerError(f"run {self.run_id!r} has no journaled values")
        return decode_rows(self._parsed)

    def report(self) -> str | None:
        """The release's report text kept with its rows (``None``: a run kept
        before reports were, a causal run's payload, or no payload)."""
        found = self._parsed
        text = found.get("report") if isinstance(found, dict) else None
        return text if isinstance(text, str) else None


def find_run(ledger: SQLLedger, dataset: str, job: str, run_id: str) -> JournalEntry | None:
    """The journal's entry of ``(dataset, job, run_id)``, or ``None`` if it never
    charged (a charge of this run id without a job, from before runs had jobs,
    counts as this run's, without values)."""
    def work(cur):
        cur.execute(ledger._sql(
            "SELECT c.charge_id, c.job, r.payload, r.fingerprint FROM dpmic_charges c LEFT JOIN "
            "dpmic_release_journal r ON r.charge_id = c.charge_id WHERE c.dataset = ? AND "
            "c.run_id = ? AND (c.job = ? OR c.job IS NULL) ORDER BY c.created_at"),
            (dataset, run_id, job))
        row = cur.fetchone()
        if row is None:
            return None
        cur.execute(ledger._sql("SELECT delivered_at, destination FROM dpmic_journal_deliveries "
                                "WHERE charge_id = ? ORDER BY delivered_at"), (row[0],))
        deliveries = tuple((r[0], r[1]) for r in cur.fetchall())
        return JournalEntry(row[0], dataset, row[1], run_id, row[2], deliveries, row[3])
    return ledger._run(work)


def record_delivery(ledger: SQLLedger, charge_id: str, destination: str) -> None:
    """Append that the rows of ``charge_id`` were written to ``destination``."""
    def work(cur):
        cur.execute("BEGIN")
        cur.execute(ledger._sql("INSERT INTO dpmic_journal_deliveries (charge_id, delivered_at, "
                                "destination) VALUES (?, ?, ?)"),
                    (charge_id, _now(), destination))
        cur.execute("COMMIT")
    ledger._run(work)


def release_status(ledger: SQLLedger, dataset: str) -> dict[str, str]:
    """Per charge id of ``dataset``'s batch runs: ``"delivered"``, ``"undelivered"``
    (values journaled, not written yet) or ``"lost"`` (charged, values not kept)."""
    def work(cur):
        cur.execute(ledger._sql(
            "SELECT c.charge_id, r.charge_id, r.payload IS NOT NULL, "
            "(SELECT COUNT(*) FROM dpmic_journal_deliveries d WHERE d.charge_id = c.charge_id) "
            "FROM dpmic_charges c LEFT JOIN dpmic_release_journal r ON r.charge_id = c.charge_id "
            "WHERE c.dataset = ? AND c.run_id IS NOT NULL"), (dataset,))
        status = {}
        for charge_id, journaled, kept, deliveries in cur.fetchall():
            if journaled is None or not kept:
                status[charge_id] = "lost"
            else:
                status[charge_id] = "delivered" if deliveries else "undelivered"
        return status
    return ledger._run(work)


class JournaledRun:
    """The ledger as one batch run charges it: the run id is claimed per dataset
    and job, and the charge commits only together with the released rows.

    :meth:`charge` leaves its transaction open; :meth:`keep` adds the rows and
    commits both. :meth:`abandon` (any failure after the charge) commits the
    charge without rows: budget is never refunded. If the process dies before
    either, the transaction is rolled back: nothing was charged, and nothing was
    released, since rows leave the process only from the journal.
    """

    tracks_approx_parts = True
    #: the charge commits in :meth:`keep` / :meth:`abandon`, which log it then
    commits_later = True

    def __init__(self, ledger: SQLLedger, run_id: str, job: str,
                 fingerprint: str | None = None):
        self.ledger, self.run_id, self.job = ledger, run_id, job
        self.fingerprint = fingerprint
        self._open: OpenCharge | None = None
        self._dataset: str | None = None
        self._mechanism = ""
        #: whether the charge committed (with its values or without them)
        self.committed = False
        self._undone = False  # an interruption inside the commit undid the charge

    def check(self, dataset: str, cost: PrivacyCost) -> None:
        self.ledger.check(dataset, cost, run_id=self.run_id, job=self.job)

    def charge(self, dataset: str, cost: PrivacyCost, **details) -> Charge:
        if self._open is not None:
            raise DPMICError("a batch run charges once")  # pragma: no cover
        self._open = self.ledger.open_charge(dataset, cost, run_id=self.run_id, job=self.job,
                                             **details)
        self._dataset = dataset
        self._mechanism = str(details.get("mechanism") or "")
        return self._open.record

    @property
    def charged(self) -> bool:
        return self._open is not None

    def _commit(self, payload: str | None) -> JournalEntry:
        if self._open is None:
            raise DPMICError("nothing was charged")  # pragma: no cover
        opened, self._open = self._open, None
        assert self._dataset is not None
        cur = opened.cur
        try:
            cur.execute("SAVEPOINT dpmic_journal")
            cur.execute(opened.sql(
                "INSERT INTO dpmic_release_journal (charge_id, dataset, job, run_id, created_at, "
                "payload, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?)"),
                (opened.record.charge_id, self._dataset, self.job, self.run_id, _now(),
                 payload, self.fingerprint))
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # SIGINT / SIGTERM (or an exit) before the values were kept: undone,
                # as a killed process's charge would be (nothing left the process)
                opened.rollback()
                self._undone = True
                raise
            # the charge stays even if its values cannot be kept (never refunded)
            try:
                cur.execute("ROLLBACK TO SAVEPOINT dpmic_journal")
            except opened.ledger._db.errors as lost:
                # the connection itself is gone, before any COMMIT: the database rolls
                # the open transaction back, charge and all (here too, where it can)
                opened.rollback()  # closes the connection; a lost one is the server's
                self._undone = True
                raise LedgerError(
                    f"the ledger connection was lost before the charge was committed "
                    f"({type(lost).__name__}): nothing was charged and nothing released; "
                    "run again with the same run id once the ledger is reachable") from None
            self._commit_open(opened)
            if isinstance(exc, opened.ledger._db.errors):
                if opened.ledger._db.is_full(exc):
                    raise LedgerError(
                        "the ledger's file system is full or failing: charge "
                        f"{opened.record.charge_id} was recorded, but its released values "
                        "could not be kept, so nothing was released; the ledger is intact "
                        "(do not restore it): free space, then release again with a new "
                        "run id") from None
                raise opened.ledger._failure(exc) from None
            raise
        self._commit_open(opened)
        return JournalEntry(opened.record.charge_id, self._dataset, self.job, self.run_id,
                            payload, fingerprint=self.fingerprint)

    def _log_charged(self, opened: OpenCharge) -> None:
        assert self._dataset is not None
        log_charged(self._mechanism, self._dataset, opened.record.charge_id)

    def _commit_open(self, opened: OpenCharge) -> None:
        """Commit ``opened`` and note it, a signal held until both are done (one
        arriving in the COMMIT would else leave a committed charge unnoted)."""
        with deferred():
            opened.commit()
            self.committed = True
        self._log_charged(opened)

    def keep(self, rows: pd.DataFrame, report: str | None = None) -> JournalEntry:
        """Commit the charge together with the released ``rows`` (and the release's
        ``report`` text)."""
        return self._commit(encode_rows(rows, report))

    def keep_payload(self, payload: str) -> JournalEntry:
        """Commit the charge together with a payload of another kind: JSON text with
        a ``"kind"`` (a causal graph, :func:`dpmic_dask.batch.jobcausal.encode_graph`)."""
        return self._commit(payload)

    def abandon(self) -> None:
        """After a failure following the charge: commit the charge, without values."""
        if self._open is not None:
            self._commit(None)

    def rollback(self) -> bool:
        """After an interruption (SIGINT, SIGTERM) before the values were kept: undo
        the open charge, as a killed process's would be undone -- nothing left the
        process, so nothing was released. ``True`` if a charge was undone."""
        if self._open is None:  # or undone already, by an interruption inside the commit
            undone, self._undone = self._undone, False
            return undone
        opened, self._open = self._open, None
        opened.rollback()
        return True

class HeldWarnings:
    """The warnings and log lines of one run's release, said in step with its
    charge: those raised before the charge (public facts: sizes, budgets) are
    shown as they come; those raised after it (they read released noise: the
    noisy row count of a release per unit, how many pairs a selection kept) are
    held until the charge commits, with the released rows or without them
    (:meth:`flush`), and dropped when an interruption rolls the charge back
    (:meth:`drop`): nothing about noise that was never charged leaves the
    process. Log lines are those of the package's loggers (``dpmic_dask``, which
    ``-v`` shows, and its children), held by a filter on each while the charge
    is open."""

    def __init__(self, run: JournaledRun):
        self.run = run
        self.held: list[tuple] = []
        self.held_logs: list[logging.LogRecord] = []
        self._saved = warnings.catch_warnings()
        self._logger = logging.getLogger("dpmic_dask")
        self._held_loggers: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether a log line of the package goes out now (else it is held)."""
        if self.run.charged:  # charged and not committed yet
            self.held_logs.append(record)
            return False
        return True

    def __enter__(self) -> HeldWarnings:
        self._saved.__enter__()
        show = warnings.showwarning  # the one in force (the CLI's one-line format)

        def hold_after_the_charge(message, category, filename, lineno, file=None, line=None):
            if self.run.charged:  # charged and not committed yet
                self.held.append((message, category, filename, lineno, file, line))
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = hold_after_the_charge
        # a logger's filter sees only the records made on it, not its children's
        names = [name for name in list(logging.root.manager.loggerDict)
                 if name.startswith("dpmic_dask.")]
        self._held_loggers = [self._logger, *(logging.getLogger(n) for n in names)]
        for logger in self._held_loggers:
            logger.addFilter(self)
        return self

    def __exit__(self, *exc) -> None:
        for logger in self._held_loggers:
            logger.removeFilter(self)
        self._saved.__exit__(*exc)

    def flush(self) -> None:
        """Show the held warnings and log lines if the charge committed; forget
        them if it did not (a commit that failed charged nothing: what read its
        noise stays here)."""
        held, self.held = self.held, []
        logs, self.held_logs = self.held_logs, []
        if not self.run.committed:
            return
        for args in held:
            warnings.showwarning(*args)
        now = time.time()
        for record in logs:
            # said now, after the commit's own lines: stamped now, so that a log's
            # times run in the order its lines do
            record.relativeCreated += (now - record.created) * 1000.0
            record.created, record.msecs = now, (now % 1) * 1000.0
            logging.getLogger(record.name).handle(record)

    def drop(self) -> None:
        """Forget the held warnings and log lines (the charge was rolled back)."""
        self.held = []
        self.held_logs = []
