"""Inputs and outputs of batch jobs.

Inputs: Parquet or CSV files (paths, globs, fsspec URLs) read by Dask, or a
SQL table/query read through SQLAlchemy on the driver.

Outputs are append-only and atomic. A file output is a folder that gains one
file per run (``run-<run id>.parquet`` or ``.csv``), written under a hidden
temporary name and renamed into place, so readers never see a partial file. A
SQL output gains one transaction's worth of rows per run. Every row carries the
run id, the release time, the job, the dataset and the budget spent; a run id
already present is never written twice.
"""

from __future__ import annotations

import glob
import os
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .errors import DPMICError


class JobIOError(DPMICError):
    """An input or output of a job cannot be read or written (one line, no values)."""


def sql_engine(url: str):
    """SQLAlchemy engine; plain ``postgresql://`` URLs use the psycopg 3 driver."""
    from sqlalchemy import create_engine

    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix):]
    return create_engine(url)


def load_input(job):
    """The job's table as a Dask DataFrame (schema only until computed)."""
    import dask.dataframe as dd

    columns = list(job.bounds)
    if job.input_paths:
        for pattern in job.input_paths:
            if "://" not in pattern and not glob.glob(pattern):
                raise JobIOError(f"cannot open input {pattern!r}: no such file")
        try:
            if job.input_format == "csv":
                frame = dd.read_csv(list(job.input_paths), usecols=columns, blocksize="64MB")
            else:
                frame = dd.read_parquet(list(job.input_paths), columns=columns)
        except Exception as exc:  # readers raise many types; report the kind only
            raise JobIOError(f"cannot open input {list(job.input_paths)}: "
                             f"{exc.__class__.__name__} (check paths and column names)") from None
        return frame
    import dask
    from sqlalchemy.exc import SQLAlchemyError

    try:
        meta = _sql_meta(job.sql_url, job.sql_table, job.sql_query, columns)
    except (SQLAlchemyError, ValueError, OSError) as exc:
        raise JobIOError(f"cannot read the SQL input: {exc.__class__.__name__}") from None
    # Rows are read lazily, inside the graph, after every check has passed.
    part = dask.delayed(_read_sql, pure=False)(job.sql_url, job.sql_table, job.sql_query, columns)
    return dd.from_delayed([part], meta=meta, verify_meta=False)


def _sql_meta(url, table, query, columns) -> pd.DataFrame:
    """An empty frame with the input's columns and dtypes, from the schema only.

    Table columns take their declared type (numeric -> float64, else object, which
    the schema check refuses). A query's columns are assumed numeric; a value that
    is not is reported by column name when the data is counted.
    """
    if table:
        from sqlalchemy import inspect

        with sql_engine(url).connect() as conn:
            declared = {c["name"]: c["type"] for c in inspect(conn).get_columns(table)}
        dtypes = {}
        for name in columns:
            try:
                numeric = declared[name].python_type in (int, float) or \
                    declared[name].python_type.__name__ == "Decimal"
            except (KeyError, NotImplementedError):
                numeric = False
            dtypes[name] = "float64" if numeric else "object"
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in dtypes.items()})
    empty = _read_sql(url, None, query, columns, limit=0)
    return empty.astype("float64")


def _read_sql(url, table, query, columns, limit=None) -> pd.DataFrame:
    """Rows of a SQL table (selected columns) or query; ``limit`` caps the rows."""
    from sqlalchemy import column, select, table as sql_table, text

    if table:
        statement = select(*[column(c) for c in columns]).select_from(sql_table(table))
        if limit is not None:
            statement = statement.limit(limit)
    else:
        statement = text(f"SELECT * FROM ({query}) AS dpmic_input"
                         + ("" if limit is None else f" LIMIT {int(limit)}"))
    with sql_engine(url).connect() as conn:
        return pd.read_sql_query(statement, conn)


def result_rows(result, *, run_id: str, job) -> pd.DataFrame:
    table = result.to_pandas()
    table.insert(0, "run_id", run_id)
    table.insert(1, "released_at", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    table.insert(2, "job", job.name)
    table.insert(3, "dataset", job.dataset)
    table["charge_id"] = result.charge_id
    return table


def _run_file(job, run_id: str) -> Path:
    return Path(job.output_path) / f"run-{run_id}.{job.output_format}"


def output_has_run(job, run_id: str) -> bool:
    """Whether a previous run with this id already wrote its rows."""
    if job.output_path:
        return _run_file(job, run_id).exists()
    from sqlalchemy import inspect, text
    from sqlalchemy.exc import SQLAlchemyError

    try:
        engine = sql_engine(job.output_sql_url)
        with engine.connect() as conn:
            if not inspect(conn).has_table(job.output_sql_table):
                return False
            found = conn.execute(
                text(f'SELECT 1 FROM "{job.output_sql_table}" WHERE run_id = :r LIMIT 1'),
                {"r": run_id}).first()
            return found is not None
    except SQLAlchemyError as exc:
        raise JobIOError(f"cannot reach the SQL output: {exc.__class__.__name__}") from None


def check_output_writable(job) -> None:
    """Fail before any budget is spent if the output cannot be written."""
    if job.output_path:
        folder = Path(job.output_path)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JobIOError(f"cannot create output folder {str(folder)!r}: {exc.strerror}") from None
        if not os.access(folder, os.W_OK):
            raise JobIOError(f"output folder {str(folder)!r} is not writable")
    else:
        output_has_run(job, "__probe__")


def write_output(job, rows: pd.DataFrame, run_id: str) -> str:
    """Append a run's rows atomically; returns where they went."""
    if job.output_path:
        final = _run_file(job, run_id)
        tmp = final.with_name(f".{final.name}.tmp")
        if job.output_format == "csv":
            rows.to_csv(tmp, index=False)
        else:
            rows.to_parquet(tmp, index=False)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, final)
        return str(final)
    from sqlalchemy.exc import SQLAlchemyError

    try:
        engine = sql_engine(job.output_sql_url)
        with engine.begin() as conn:  # one transaction: all rows or none
            rows.to_sql(job.output_sql_table, conn, if_exists="append", index=False)
    except SQLAlchemyError as exc:
        raise JobIOError(f"cannot write the SQL output: {exc.__class__.__name__}") from None
    return f"{job.output_sql_table} (SQL)"
