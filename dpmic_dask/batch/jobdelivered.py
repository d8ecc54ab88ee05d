"""Whether a recorded delivery is still in a job's output: the run's file, a
``[causal]`` run's folder, or the run's rows in a SQL table (:func:`delivery_gap`).
A rerun writes what is missing again from the journal (``batch/runner.py``), or
says in one line that it cannot and how to deliver it. Nothing here reads or
names a data value."""

from __future__ import annotations

import os

from sqlalchemy.exc import SQLAlchemyError

from dpmic_dask.batch.jobcausal import graph_gap
from dpmic_dask.batch.jobio import _sql_failure, sql_engine
from dpmic_dask.batch.joboutput import (  # Gap: re-exported
    Gap,
    count_run_rows,
    describe_output,
    held_charges,
    run_file,
    shown,
)
from dpmic_dask.errors import DPMICError


def delivery_gap(job, entry) -> Gap | None:
    """What of the delivery of journal ``entry`` to this job's output is missing
    now, or ``None`` if it is all there: the run's file (there, readable, with
    as many rows as were released), a ``[causal]`` run's folder and every file
    in it, or the run's rows in a SQL table (counted by run id, job and dataset;
    the values themselves are not compared)."""
    if getattr(job, "causal", None) is not None:
        return graph_gap(job, entry.run_id)
    released = len(entry.rows())
    if job.output_path:
        return _file_gap(job, entry.run_id, released, entry.charge_id)
    return _table_gap(job, entry.run_id, released)


def _file_gap(job, run_id: str, released: int, charge_id: str) -> Gap | None:
    path = run_file(job, run_id)
    name = shown(os.path.abspath(path))
    if not path.is_file():
        return Gap(f"its file {name} is missing")
    try:
        charges = held_charges(job, path)
    except Exception:  # noqa: BLE001 - any unreadable file (truncated, not this format)
        return Gap(f"its file {name} cannot be read")
    if len(charges) and not (charges == charge_id).all():
        # another job's release under this run's name: writing ours would replace it
        return Gap(f"its file {name} holds another release (not charge {charge_id})",
                   rewritable=False, reason="writing this run's values would replace that "
                   "release, so nothing was written",
                   advice=f"move that file aside (it is the other job's), then run "
                   f"'dpmic deliver {job.source} --run-id {run_id}' (nothing more is "
                   "charged); for later runs give each job its own output folder or "
                   "[job] name")
    if len(charges) != released:
        return Gap(f"its file {name} holds {len(charges)} rows, not the {released} released")
    return None


def _table_gap(job, run_id: str, released: int) -> Gap | None:
    failure: DPMICError | None = None
    rows = 0
    try:
        with sql_engine(job.output_sql_url, job.output_timeout).connect() as conn:
            rows = count_run_rows(conn, job, run_id)
    except SQLAlchemyError as exc:
        failure = _sql_failure(exc, "output")
    if failure is not None:
        raise type(failure)(f"run {run_id!r} was delivered to {describe_output(job)}, but "
                            f"whether its rows are still there cannot be checked: {failure}")
    if rows == released:
        return None
    if rows == 0:
        return Gap(f"the table holds none of its {released} rows")
    # some of them: a delivery would refuse to add to them (see joboutput._write_table)
    return Gap(f"the table holds {rows} rows of it, not the {released} released",
               rewritable=False)
