"""A SQL ledger's charges for batch runs: :class:`RunLedger`, the view of a
:class:`~dpmic_dask.privacy.ledger.SQLLedger` bound to one run id (and job),
and :class:`OpenCharge`, a charge whose write transaction is still open so that
the released values are committed with it
(:meth:`~dpmic_dask.privacy.ledger.SQLLedger.open_charge`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpmic_dask.errors import LedgerError

if TYPE_CHECKING:  # pragma: no cover
    from dpmic_dask.privacy.charges import Charge
    from dpmic_dask.privacy.costs import PrivacyCost
    from dpmic_dask.privacy.ledger import SQLLedger


class OpenCharge:
    """A charge inserted in a write transaction that is still open."""

    def __init__(self, ledger: SQLLedger, conn, cur, record: Charge):
        self.ledger, self._conn, self.cur, self.record = ledger, conn, cur, record

    def sql(self, text: str) -> str:
        """``text`` with this database's placeholders."""
        return self.ledger._sql(text)

    def commit(self) -> None:
        """Commit the charge and what was added to its transaction, then close."""
        try:
            self.cur.execute("COMMIT")
        except self.ledger._db.errors as exc:
            problem = self.ledger._failure(exc)
            raise LedgerError(f"the charge could not be committed, so nothing was charged "
                              f"and nothing is released: {problem}") from None
        finally:
            self._conn.close()

    def rollback(self) -> None:
        """Undo the charge (nothing was released from it), then close."""
        try:
            self.cur.execute("ROLLBACK")
        except self.ledger._db.errors:  # the connection is gone: the server rolls back
            pass
        finally:
            self._conn.close()


class RunLedger:
    """A :class:`SQLLedger` bound to one batch run: :meth:`check` and :meth:`charge`
    also claim the run id, so one run id charges at most once per dataset and job."""

    tracks_approx_parts = True

    def __init__(self, ledger: SQLLedger, run_id: str, job: str | None = None):
        self.ledger = ledger
        self.run_id = run_id
        self.job = job

    def check(self, dataset: str, cost: PrivacyCost) -> None:
        self.ledger.check(dataset, cost, run_id=self.run_id, job=self.job)

    def charge(self, dataset: str, cost: PrivacyCost, **kwargs) -> Charge:
        return self.ledger.charge(dataset, cost, run_id=self.run_id, job=self.job, **kwargs)

