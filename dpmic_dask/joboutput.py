"""Where a batch run's released rows go: a folder or a SQL table.

Outputs are append-only and atomic. A file output is a folder that gains one
file per job and run (``run-<run id>--<job>.parquet`` or ``.csv``), written
under a hidden temporary name and renamed into place, so readers never see a
partial file and a failed write leaves nothing behind. A SQL output gains one
transaction's worth of rows per run. Every row carries the run id, the release
time, the job, the dataset and the charge.

:func:`check_output` runs before the charge: the folder must take a probe file,
and an existing SQL table must be able to take this job's columns (missing
columns are added, nullable; a column of the wrong kind is refused).
:func:`deliver` writes rows from the release journal; it can be repeated (a
file is rewritten with the same rows, a SQL table that holds the run's rows is
left as it is). A failure to write is a :class:`DeliveryError`, one line naming
the destination.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import DPMICError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Columns of every released row, in order, with their kind.
BASE_COLUMNS = {
    "run_id": str, "released_at": str, "job": str, "dataset": str, "x": str, "y": str,
    "mic": float, "ci95": float, "noise_scale": float, "mechanism": str, "statistic": str,
    "release_epsilon": float, "release_delta": float, "value_cost": float, "cost_unit": str,
    "n": int, "B": int, "c": int,
}


class DeliveryError(DPMICError):
    """Released rows could not be written to the output. They are kept in the
    ledger's release journal; the message names the destination, never a value."""


def expected_columns(job) -> dict:
    """The columns (name -> kind) a run of ``job`` writes."""
    columns = dict(BASE_COLUMNS)
    for name in job.statistics[1:]:
        columns.update({name: float, f"{name}_ci95": float, f"{name}_noise_scale": float})
    if "tau" in job.statistics:
        columns["nonlinearity"] = float
    columns["charge_id"] = str
    return columns


def result_rows(result, *, run_id: str, job) -> pd.DataFrame:
    """The rows a run writes: the tidy table plus run id, time, job, dataset, charge."""
    table = result.to_pandas()
    table.insert(0, "run_id", run_id)
    table.insert(1, "released_at", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    table.insert(2, "job", job.name)
    table.insert(3, "dataset", job.dataset)
    table["charge_id"] = result.charge_id
    return table


def job_slug(name: str) -> str:
    """A file-name part for a job name: the name itself when it is made of
    letters, digits and ``._-``, else a cleaned name and a hash of the real one."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:64]
    if clean == name:
        return name
    return f"{clean or 'job'}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def run_file(job, run_id: str) -> Path:
    """The file a run of ``job`` writes in its output folder."""
    from .jobio import JobIOError

    folder = Path(job.output_path)
    path = folder / f"run-{run_id}--{job_slug(job.name)}.{job.output_format}"
    if path.parent != folder:  # run ids are validated; this is a second line of defence
        raise JobIOError("the run id would write outside the output folder")
    return path


def describe_output(job) -> str:
    """The destination, as messages name it."""
    if job.output_path:
        return f"output folder {job.output_path!r}"
    return f"SQL table {job.output_sql_table!r}"


# ---------------------------------------------------------------- before the charge


def check_output(job) -> None:
    """Fail before any budget is spent if the output cannot take this job's rows."""
    if job.output_path:
        _probe_folder(job.output_path)
    else:
        _check_table(job)


def _probe_folder(folder) -> None:
    from .jobio import JobIOError, prepare_folder

    path = prepare_folder(folder, "output folder")
    probe = path / f".dpmic-probe-{uuid.uuid4().hex}"
    try:
        with open(probe, "x") as handle:
            handle.write("probe")
        probe.unlink()
    except OSError as exc:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass
        raise JobIOError(f"output folder {str(folder)!r} cannot take a file: "
                         f"{exc.strerror or type(exc).__name__}") from None


def _kind_of(sql_type):
    try:
        python = sql_type.python_type
    except (NotImplementedError, AttributeError):
        return None
    return float if python.__name__ == "Decimal" else python


def _fits(kind, declared) -> bool:
    """Whether a column declared as ``declared`` takes values of ``kind``."""
    if declared is None:
        return True  # a type SQLAlchemy cannot map: left to the database
    if kind is str:
        return declared is str
    return declared is float or (kind is int and declared is int)


def _check_table(job) -> None:
    from sqlalchemy import BigInteger, Float, Text, inspect, text
    from sqlalchemy.exc import SQLAlchemyError

    from .jobio import JobIOError, _sql_failure, sql_engine

    table, wanted = job.output_sql_table, expected_columns(job)
    failure: DPMICError | None = None
    try:
        with sql_engine(job.output_sql_url, job.output_timeout).begin() as conn:
            inspector = inspect(conn)
            if not inspector.has_table(table):
                return
            found = {c["name"]: c for c in inspector.get_columns(table)}
            for name, kind in wanted.items():
                if name in found and not _fits(kind, _kind_of(found[name]["type"])):
                    raise JobIOError(
                        f"SQL table {table!r}: column {name!r} is {found[name]['type']}, "
                        f"which cannot hold this job's {kind.__name__} values")
            for name, column in found.items():
                if name not in wanted and not column.get("nullable", True) \
                        and column.get("default") is None:
                    raise JobIOError(f"SQL table {table!r}: column {name!r} is NOT NULL "
                                     "without a default, and this job does not write it")
            quote = conn.dialect.identifier_preparer.quote
            types: dict[type, Any] = {str: Text(), int: BigInteger(),
                                      float: Float(precision=53)}
            for name, kind in wanted.items():
                if name not in found:  # a newer job's column: added, nullable
                    sql_type = types[kind].compile(dialect=conn.dialect)
                    conn.execute(text(f"ALTER TABLE {quote(table)} ADD COLUMN "
                                      f"{quote(name)} {sql_type}"))
    except SQLAlchemyError as exc:
        failure = _sql_failure(exc, "output")
    if failure is not None:
        raise failure


# ---------------------------------------------------------------- after the charge


def undeliverable(job, run_id: str, reason: str) -> DeliveryError:
    """The error of a kept release that could not be written (one line)."""
    return DeliveryError(
        f"cannot write run {run_id!r} to {describe_output(job)}: {reason}. The released "
        f"values are kept in the ledger's journal; once the output can be written, run "
        f"the same 'dpmic run' again or 'dpmic deliver {job.source} --run-id {run_id}' "
        "(nothing more is charged)")


def deliver(job, rows: pd.DataFrame, run_id: str) -> str:
    """Write a run's journaled ``rows``; returns where they went."""
    if job.output_path:
        return _write_file(job, rows, run_id)
    return _write_table(job, rows, run_id)


def _write_file(job, rows: pd.DataFrame, run_id: str) -> str:
    final = run_file(job, run_id)
    tmp = final.with_name(f".{final.name}.tmp")
    try:
        if job.output_format == "csv":
            rows.to_csv(tmp, index=False)
        else:
            rows.to_parquet(tmp, index=False)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise undeliverable(job, run_id, exc.strerror or type(exc).__name__) from None
    return str(final)


def _write_table(job, rows: pd.DataFrame, run_id: str) -> str:
    from sqlalchemy import column, inspect, literal, select, table
    from sqlalchemy.exc import SQLAlchemyError

    from .jobio import sql_engine

    name = job.output_sql_table
    reason = None
    try:
        with sql_engine(job.output_sql_url, job.output_timeout).begin() as conn:
            if inspect(conn).has_table(name):
                # The table name is quoted by SQLAlchemy, never interpolated.
                present = (select(literal(1)).select_from(table(name))
                           .where(column("run_id") == run_id, column("job") == job.name,
                                  column("dataset") == job.dataset).limit(1))
                if conn.execute(present).first() is not None:
                    return f"{name} (SQL; its rows were there already)"
            rows.to_sql(name, conn, if_exists="append", index=False)
    except SQLAlchemyError as exc:
        reason = type(getattr(exc, "orig", None) or exc).__name__
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    if reason is not None:
        raise undeliverable(job, run_id, reason)
    return f"{name} (SQL)"
