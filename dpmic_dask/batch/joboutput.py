"""Where a batch run's released rows go: a folder or a SQL table.

Outputs are append-only and atomic. A file output is a folder that gains one
file per job and run (``run-<run id>--<job>.parquet`` or ``.csv``), written
under a hidden temporary name and renamed into place, so readers never see a
partial file and a failed write leaves nothing behind. A SQL output gains one
transaction's worth of rows per run. Every row carries the run id, the release
time, the job, the dataset and the charge.

:func:`check_output` runs before the charge: the folder must take a probe file,
and an existing SQL table must be able to take this job's columns (missing
columns are added, nullable; a column of the wrong kind is refused); a table
that does not exist yet is created and sent a probe row in a transaction that
is rolled back.
:func:`deliver` writes rows from the release journal; it can be repeated (a
file is rewritten with the same rows, a SQL table that holds the run's rows is
left as it is; one that holds only some of them is refused, never added to or
reported as delivered). A failure to write is a :class:`DeliveryError`, one
line naming the destination.
:func:`~dpmic_dask.batch.jobdelivered.delivery_gap` says what of a recorded
delivery is no longer in the output (a deleted file, a dropped table's rows),
so that a rerun never reports a delivery that is not there. The rows
themselves (their columns and kinds) are :mod:`dpmic_dask.batch.outputrows`.
"""

from __future__ import annotations

import glob
import hashlib
import os
import time
import uuid
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
from sqlalchemy import BigInteger, Float, Text, column, func, insert, inspect, select, table, text
from sqlalchemy import table as sql_table
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from dpmic_dask.batch.jobio import JobIOError, _sql_failure, prepare_folder, sql_engine
from dpmic_dask.batch.outputnames import (  # noqa: F401  (re-exported)
    DeliveryError,
    Gap,
    describe_output,
    job_slug,
    run_file,
    shown,
    undeliverable,
)
from dpmic_dask.batch.outputrows import (
    BASE_COLUMNS,  # noqa: F401  (re-exported)
    _arrow_schema,
    _sql_types,
    declared,
    expected_columns,
    missing_columns,
    probe_row,
    result_rows,  # noqa: F401  (re-exported)
)
from dpmic_dask.batch.pageledger import harmless
from dpmic_dask.errors import DPMICError


def destination(job, run_id: str) -> str:
    """Where a run of ``job`` is delivered, as the journal records it: the run's
    file (absolute path), or the SQL table and its server (no password)."""
    if job.output_path:
        return os.path.abspath(run_file(job, run_id))
    try:
        url = make_url(job.output_sql_url)
        # nor one in the query (?password=): the parameters that hold a secret go
        url = url.set(query={k: v for k, v in url.query.items() if harmless(k)})
        server = url.render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is refused when used
        server = "?"
    return f"SQL table {job.output_sql_table!r} at {server}"


# ---------------------------------------------------------------- before the charge


def check_name_free(job, run_id: str) -> None:
    """Before the first charge of a run: its file (or a ``[causal]`` run's folder)
    must not exist yet. One that does was written by another job -- the same job
    name on another dataset, or a name and run id that meet at ``--`` -- and this
    run would overwrite it."""
    if not job.output_path:
        return
    path = run_file(job, run_id)
    if os.path.lexists(path):
        raise JobIOError(
            f"output {shown(os.path.abspath(path))!r} already exists, and this job has "
            f"never delivered run {run_id!r} there: it holds another job's release (the "
            "same job name on another dataset, or another name and run id that read the "
            "same); give each job its own output folder or [job] name, or use a new run "
            "id (nothing was charged)")


def check_output(job, run_id: str | None = None) -> None:
    """Fail before any budget is spent if the output cannot take this job's rows."""
    if job.output_path:
        _probe_folder(job.output_path)
    else:
        _check_table(job, run_id)


def _probe_folder(folder) -> None:
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


def _probe_insert(conn, table: str, job, run_id: str | None) -> None:
    """Insert :func:`probe_row` into the existing ``table`` and roll it back; refuse
    naming the first column that cannot take its value (width, precision, range)."""
    row = probe_row(job, run_id)
    target = sql_table(table, *[column(name) for name in row])

    def fits(values) -> bool:
        savepoint = conn.begin_nested()
        try:
            conn.execute(insert(target).values(values))
        except DBAPIError:
            return False
        finally:
            savepoint.rollback()
        return True

    empty = missing_columns(job)
    if fits(row):
        if not empty or fits({**row, **dict.fromkeys(empty)}):
            return
        for name in empty:  # NOT NULL on a column this job may leave empty
            if not fits({**row, name: None}):
                raise JobIOError(
                    f"SQL table {table!r}: column {name!r} cannot be empty (NOT NULL), and "
                    "this job leaves it empty on some rows (Kendall's tau of a pair with a "
                    "categorical column, ci95 of micr-geom, bounds given as dates); "
                    "nothing was charged")
        raise JobIOError(f"SQL table {table!r} cannot take this job's rows; nothing was charged")
    plain = {name: "a" if isinstance(value, str) else 0 for name, value in row.items()}
    for name in row:
        if not fits({**plain, name: row[name]}):
            raise JobIOError(
                f"SQL table {table!r}: column {name!r} cannot hold this job's values "
                "(its width, precision or range is too small); nothing was charged")
    raise JobIOError(f"SQL table {table!r} cannot take this job's rows; nothing was charged")


def _probe_new_table(conn, job, run_id: str | None) -> bool:
    """A table that does not exist yet: created as the delivery would create it,
    sent :func:`probe_row`, and rolled back, all in one transaction that nobody
    else sees (SQLite and PostgreSQL roll back a CREATE; MySQL would keep it,
    empty). A database that refuses either (read only, no right to create, a
    column too narrow) refuses the run before its charge. ``False``: another
    writer created the table meanwhile (it is then checked as an existing one)."""
    if conn.dialect.name == "sqlite":
        # pysqlite would run the CREATE outside any transaction: begin one first
        conn.exec_driver_sql("BEGIN")
    try:
        row = pd.DataFrame([probe_row(job, run_id)])
        row.to_sql(job.output_sql_table, conn, if_exists="fail", index=False,
                   dtype=_sql_types(row, job))
    except ValueError:  # pandas: "already exists" -- created since has_table
        return False
    except DBAPIError as exc:
        kind = type(getattr(exc, "orig", None) or exc).__name__
        raise JobIOError(f"SQL table {job.output_sql_table!r} does not exist and cannot be "
                         f"created with this job's rows ({kind}); nothing was charged") from None
    finally:
        conn.rollback()
    return True


def _check_table(job, run_id: str | None = None) -> None:
    table, wanted = job.output_sql_table, expected_columns(job)
    failure: DPMICError | None = None
    try:
        with sql_engine(job.output_sql_url, job.output_timeout).connect() as conn:
            if not inspect(conn).has_table(table) and _probe_new_table(conn, job, run_id):
                return
        with sql_engine(job.output_sql_url, job.output_timeout).begin() as conn:
            inspector = inspect(conn)
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
            _probe_insert(conn, table, job, run_id)
    except DPMICError as exc:
        failure = exc
    except SQLAlchemyError as exc:
        failure = _sql_failure(exc, "output")
    if failure is not None:
        raise failure


# ---------------------------------------------------------------- after the charge


def deliver(job, rows: pd.DataFrame, run_id: str) -> str:
    """Write a run's journaled ``rows``; returns where they went."""
    if job.output_path:
        return _write_file(job, rows, run_id)
    return _write_table(job, rows, run_id)


def held_charges(job, path) -> pd.Series:
    """The charge ids of the rows of a run's file: which release it holds (the
    charge column only, no data value). Raises for a file that does not read."""
    if job.output_format == "csv":
        return pd.read_csv(path, usecols=["charge_id"], dtype=str)["charge_id"]
    return pq.read_table(path, columns=["charge_id"]).column(0).to_pandas()


def _holds_another(job, path, rows: pd.DataFrame) -> bool:
    """Whether the file at ``path`` holds rows of another charge than ``rows``'."""
    if not path.is_file() or not len(rows) or "charge_id" not in rows:
        return False
    try:
        charges = held_charges(job, path)
    except Exception:  # noqa: BLE001 - unreadable (truncated, not this format): ours to replace
        return False
    return bool(len(charges)) and not (charges == str(rows["charge_id"].iloc[0])).all()


def _write_file(job, rows: pd.DataFrame, run_id: str) -> str:
    final = run_file(job, run_id)
    if _holds_another(job, final, rows):
        raise undeliverable(job, run_id, f"its file {shown(os.path.abspath(final))} holds "
                            "another release, which writing this run's values would replace, "
                            "so nothing was written", advice=(
                                "move that file aside (it is another job's), then run 'dpmic "
                                f"deliver {job.source} --run-id {run_id}' (nothing more is "
                                "charged), or deliver with --to another folder"))
    # one temporary name per writer: concurrent deliveries never share a file
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:12]}.tmp")
    rows = declared(rows, job)
    try:
        if job.output_format == "csv":
            rows.to_csv(tmp, index=False)
        else:
            rows.to_parquet(tmp, index=False, schema=_arrow_schema(rows, job))
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except BaseException as exc:  # an interruption too: no half-written copy stays
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise undeliverable(job, run_id, exc.strerror or type(exc).__name__) from None
        raise
    _remove_stale_copies(final)
    return str(final)


#: A temporary copy of an output untouched for this long is a killed writer's
#: (a delivery writes and renames it within seconds).
STALE_COPY_SECONDS = 15 * 60


def _remove_stale_copies(final) -> None:
    """Remove temporary copies of ``final`` left by writers that were killed while
    writing (SIGKILL leaves no chance to clean up): those untouched for
    :data:`STALE_COPY_SECONDS`. A copy being written is younger (a writer's
    process id says nothing across hosts or containers sharing the folder)."""
    now = time.time()
    for path in final.parent.glob(f".{glob.escape(final.name)}.*.tmp"):
        tag = path.name[len(final.name) + 2:-len(".tmp")]
        if len(tag) != 12 or any(ch not in "0123456789abcdef" for ch in tag):
            continue  # not a copy this module writes
        try:
            if now - path.stat().st_mtime > STALE_COPY_SECONDS:
                path.unlink(missing_ok=True)
        except OSError:
            pass


def _lock_table(conn, name: str) -> None:
    """Serialise deliveries to table ``name`` until the transaction ends, so that
    the check for a run's rows and their insertion are one step (PostgreSQL: a
    transaction advisory lock keyed by the table name; SQLite: the write lock)."""
    backend = conn.dialect.name
    if backend == "postgresql":
        key = int.from_bytes(hashlib.sha256(f"dpmic-output:{name}".encode()).digest()[:8],
                             "big", signed=True)
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
    elif backend == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def count_run_rows(conn, job, run_id: str) -> int:
    """How many rows of ``run_id`` (this job and dataset) the output table holds
    (0 if there is no table)."""
    name = job.output_sql_table
    if not inspect(conn).has_table(name):
        return 0
    # The table name is quoted by SQLAlchemy, never interpolated.
    count = (select(func.count()).select_from(table(name))
             .where(column("run_id") == run_id, column("job") == job.name,
                    column("dataset") == job.dataset))
    return int(conn.execute(count).scalar() or 0)


def _write_table(job, rows: pd.DataFrame, run_id: str) -> str:
    name = job.output_sql_table
    rows = declared(rows, job)
    reason = None
    try:
        with sql_engine(job.output_sql_url, job.output_timeout).begin() as conn:
            _lock_table(conn, name)
            present = count_run_rows(conn, job, run_id)
            if present and present == len(rows):
                return f"{name} (SQL; its rows were there already)"
            if present:  # some of them: never added to, never reported as delivered
                raise undeliverable(job, run_id, f"the table holds {present} rows of it, "
                                    f"not the {len(rows)} released",
                                    advice=partial_rows_advice(job, run_id))
            rows.to_sql(name, conn, if_exists="append", index=False,
                        dtype=_sql_types(rows, job))
    except SQLAlchemyError as exc:
        reason = type(getattr(exc, "orig", None) or exc).__name__
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    if reason is not None:
        raise undeliverable(job, run_id, reason)
    return f"{name} (SQL)"


def partial_rows_advice(job, run_id: str) -> str:
    """What to do about a table holding some of a run's rows."""
    return (f"delete the table's rows of run {run_id!r} and job {job.name!r}, then run "
            f"'dpmic deliver {job.source} --run-id {run_id}' (nothing more is charged)")
