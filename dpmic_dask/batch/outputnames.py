"""How a batch run's output is named in files and messages: the run's file in
an output folder, the destination as people read it, and the error of a kept
release that could not be written. No data value is named."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from dpmic_dask.batch.jobio import JobIOError
from dpmic_dask.errors import DPMICError, InvalidParameterError


class DeliveryError(DPMICError):
    """Released rows could not be written to the output. They are kept in the
    ledger's release journal; the message names the destination, never a value.
    ``reason`` is the cause alone (an OS or driver error's name, a refusal)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason if reason is not None else message


@dataclass(frozen=True)
class Gap:
    """What of a recorded delivery is not in the output now (no data value):
    ``what`` completes "delivered to ..., but"; ``rewritable`` is false when a
    delivery from the journal would not restore it (a SQL table holding some of
    the run's rows: a delivery never adds to them, ``joboutput._write_table``)."""

    what: str
    rewritable: bool = True
    #: why it cannot be written again, and what to do (when not rewritable;
    #: empty: a SQL table's rows, which a delivery never adds to)
    reason: str = ""
    advice: str = ""


def job_slug(name: str) -> str:
    """A file-name part for a job name: the name itself when it is made of
    letters, digits and ``._-``, else a cleaned name and a hash of the real one."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:64]
    if clean == name:
        return name
    return f"{clean or 'job'}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def run_file(job, run_id: str) -> Path:
    """The file a run of ``job`` writes in its output folder."""
    folder = Path(job.output_path)
    # a [causal] run writes a folder of files (dpmic_dask.batch.jobcausal)
    suffix = "" if getattr(job, "causal", None) is not None else f".{job.output_format}"
    path = folder / f"run-{run_id}--{job_slug(job.name)}{suffix}"
    if path.parent != folder:  # run ids are validated; this is a second line of defence
        raise JobIOError("the run id would write outside the output folder")
    return path


def shown(where: str) -> str:
    """A destination as a person reads it: a file below the working folder
    relative to it, anything else as recorded."""
    if os.path.isabs(where):
        relative = os.path.relpath(where)
        if not relative.startswith(os.pardir):
            return relative
    return where


def describe_output(job) -> str:
    """The destination, as messages name it."""
    if job.output_path:
        return f"output folder {job.output_path!r}"
    return f"SQL table {job.output_sql_table!r}"


def undeliverable(job, run_id: str, reason: str, *, missing: str | None = None,
                  advice: str | None = None) -> DeliveryError:
    """The error of a kept release that could not be written (one line); with
    ``missing`` (what of an earlier delivery is gone), of one that could not be
    written again. ``advice`` replaces the default "retry, or ``dpmic deliver``"."""
    if missing is None:
        failed = f"cannot write run {run_id!r} to {describe_output(job)}: {reason}"
    else:
        failed = (f"run {run_id!r} was released and delivered to {describe_output(job)}, "
                  f"but {missing}, and it cannot be written again: {reason}")
    if advice is None:
        # the run id named: a run without --run-id had a fresh one, and the same
        # command again would be a new release, charged again
        advice = (f"once the output can be written, run 'dpmic run {job.source} --run-id "
                  f"{run_id}' or 'dpmic deliver {job.source} --run-id {run_id}' (with this "
                  "run id nothing more is charged)")
    return DeliveryError(f"{failed}. The released values are kept in the ledger's journal; "
                         f"{advice}", reason)


def retarget(job, *, folder=None, sql_url=None, sql_table=None):
    """``job`` with another output (``dpmic deliver --to``/``--to-sql``): a folder
    (in the job's file format), or a SQL URL and table; ``job`` itself when none
    is given (a run is identified by what it releases, never by its output)."""
    if folder is None and sql_url is None:
        if sql_table is not None:
            raise InvalidParameterError("--table goes with --to-sql")
        return job
    if folder is not None and sql_url is not None:
        raise InvalidParameterError("give --to (a folder) or --to-sql (a table), not both")
    if folder is not None:
        if sql_table is not None:
            raise InvalidParameterError("--table goes with --to-sql, not with --to")
        fmt = job.output_format if job.output_path else "parquet"
        return dataclasses.replace(job, output_path=str(folder), output_format=fmt,
                                   output_sql_url=None, output_sql_table=None)
    if job.causal is not None:
        raise InvalidParameterError("a [causal] run writes files: deliver it with --to "
                                    "(a folder), not to a SQL table")
    if not sql_table or not sql_table.strip():
        raise InvalidParameterError("--to-sql needs --table (the table to write)")
    return dataclasses.replace(job, output_path=None, output_sql_url=sql_url,
                               output_sql_table=sql_table)
