"""Inputs of batch jobs, and the SQL and folder plumbing outputs share.

Inputs: Parquet or CSV files (paths, globs, fsspec URLs) read by Dask, or a
SQL table/query read through SQLAlchemy on the driver. Outputs (where released
rows go) are :mod:`dpmic_dask.batch.joboutput`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import math
import numbers
import os
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd
from sqlalchemy import column, create_engine, inspect, literal_column, or_, select, text
from sqlalchemy import table as sql_table
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import NullPool

from dpmic_dask.batch.csvinput import csv_dtypes, duplicated_header
from dpmic_dask.batch.jobmodel import job_schema
from dpmic_dask.errors import DPMICError, UnavailableError
from dpmic_dask.privacy.ledgerdb import connect_reason
from dpmic_dask.stats.kindbase import CLOCK_WORDS

SQL_TIMEOUT = 30.0


class JobIOError(DPMICError):
    """An input or output of a job cannot be read or written (one line, no values)."""


def sql_engine(url: str, timeout: float = SQL_TIMEOUT):
    """SQLAlchemy engine with a connect timeout; plain ``postgresql://`` URLs use
    the psycopg 3 driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix):]
    try:
        backend = make_url(url).get_backend_name()
        connect_args = {
            "postgresql": {"connect_timeout": max(1, math.ceil(timeout))},
            "mysql": {"connect_timeout": max(1, math.ceil(timeout))},
            "sqlite": {"timeout": timeout},
        }.get(backend, {})
        # No pool: every connection closes when released (a job opens a few, once).
        return create_engine(url, connect_args=connect_args, poolclass=NullPool)
    except ImportError as exc:
        hint = ("pip install 'dpmic_dask[postgres]'" if "psycopg" in str(exc)
                else "install the database driver")
        raise JobIOError(
            f"the SQL URL needs a database driver that is not installed: {hint}") from None
    except (ArgumentError, NoSuchModuleError, ValueError):
        raise JobIOError("the SQL URL is not a valid database URL") from None


def _sql_failure(exc, what: str) -> DPMICError:
    """A SQL error as a package error: unreachable servers are UnavailableError."""
    kind = type(getattr(exc, "orig", None) or exc).__name__
    if isinstance(exc, (OperationalError, PoolTimeout)):
        reason = connect_reason(exc) or ("server down, wrong address, or no answer within "
                                         "the timeout")
        return UnavailableError(f"cannot reach the SQL {what}: {kind} ({reason})")
    return JobIOError(f"cannot use the SQL {what}: {kind}")


def prepare_folder(folder, name: str) -> Path:
    """Create ``folder`` if needed and check that it is a writable folder."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise JobIOError(f"{name} {str(folder)!r} is not a folder (a file is in the way)") from None
    except OSError as exc:
        raise JobIOError(f"cannot create {name} {str(folder)!r}: "
                         f"{exc.strerror or type(exc).__name__}") from None
    if not os.access(folder, os.W_OK):
        raise JobIOError(f"{name} {str(folder)!r} is not writable")
    return folder


def load_input(job):
    """The job's table as a Dask DataFrame (schema only until computed)."""
    columns = list(job.bounds) + list(job.privacy_unit or ())  # the unit is read, never released
    if job.input_paths:
        out = os.path.realpath(job.output_path) if job.output_path else None
        for pattern in job.input_paths:
            if "://" in pattern:
                continue
            found = glob.glob(pattern, recursive=True)
            if not found:
                raise JobIOError(f"cannot open input {pattern!r}: no such file")
            if out is not None and any(
                    os.path.realpath(f).startswith(out + os.sep) or (
                        os.path.isdir(f) and (out + os.sep).startswith(
                            os.path.realpath(f) + os.sep))
                    for f in found):
                raise JobIOError(
                    f"input {pattern!r} matches files in the output folder {job.output_path!r}"
                    ": a run's released rows would be read as input; keep the output "
                    "outside the input's paths (nothing was charged)")
        if job.input_format == "csv":
            wrong = duplicated_header(list(job.input_paths), set(map(str, columns)))
            if wrong is not None:
                raise JobIOError(wrong)
        failure = None
        try:
            if job.input_format == "csv":
                # the first block's integer columns declared nullable: an empty cell
                # only in a later file is a null, not a clash of int64 and float64
                sample = dd.read_csv(list(job.input_paths), blocksize="64MB")
                frame = dd.read_csv(list(job.input_paths), blocksize="64MB",
                                    dtype=csv_dtypes(job, dict(sample.dtypes)))
            else:
                frame = dd.read_parquet(list(job.input_paths))
        except Exception as exc:  # noqa: BLE001 - readers raise many types; report the kind only
            failure = exc.__class__.__name__
        if failure is not None:
            raise JobIOError(f"cannot open input {list(job.input_paths)}: {failure} "
                             "(check the paths and the format)")
        _require_columns(list(frame.columns), columns)
        return frame[columns]

    problem: DPMICError | None = None
    try:
        meta = _sql_meta(job.sql_url, job.sql_table, job.sql_query, columns, job.input_timeout,
                         assumed=job_schema(job))
    except SQLAlchemyError as exc:
        problem = _sql_failure(exc, "input")
    except (ValueError, OSError) as exc:
        problem = JobIOError(f"cannot read the SQL input: {exc.__class__.__name__}")
    if problem is not None:
        raise problem
    # Rows are read lazily, inside the graph, after every check has passed: one
    # task per range of the partition column, or one task for the whole input.
    # The reader is column-projectable, so each block of pairs reads its own
    # columns and no partition stays in memory for the whole run.
    reader = SQLRangeReader(job.sql_url, job.sql_table, job.sql_query, tuple(columns),
                            job.input_timeout, dict(meta.dtypes))
    ranges = sql_ranges(job.partition_column, job.partition_bounds, job.partitions)
    return dd.from_map(reader, ranges, meta=meta, enforce_metadata=False)


class SQLRangeReader:
    """Reads one range of a SQL input. Dask passes ``columns=`` when a computation
    needs only some columns (column projection), and only those are selected."""

    def __init__(self, url, table, query, columns, timeout=SQL_TIMEOUT, dtypes=None):
        self.url, self.table, self.query = url, table, query
        self.all_columns = tuple(columns)
        self.timeout = timeout
        self.dtypes = {} if dtypes is None else dict(dtypes)

    def __dask_tokenize__(self):
        return (type(self).__name__, self.url, self.table, self.query, self.all_columns,
                self.timeout, tuple(sorted((c, str(t)) for c, t in self.dtypes.items())))

    def __call__(self, where, columns=None):
        """One partition: exactly the wanted columns (a query may return more), in
        the dtypes of the input's schema (:func:`conform`)."""
        wanted = list(self.all_columns if columns is None else columns)
        frame = _read_sql(self.url, self.table, self.query, wanted, timeout=self.timeout,
                          where=where)
        return conform(frame[wanted], self.dtypes) if self.dtypes else frame[wanted]


def sql_ranges(column, bounds, partitions):
    """The ranges one SQL input is read in: ``(column, lo, hi)`` per partition.

    The public ``bounds`` are split into ``partitions`` equal ranges; the first is
    open below (and takes NULLs), the last open above, so every row is read by
    exactly one range whatever its value (``lo`` or ``hi`` is ``None`` when open).
    Without a partition column: one range, the whole input.
    """
    if column is None or partitions <= 1:
        return [None] if column is None else [(column, None, None)]
    lo, hi = bounds
    cuts = [lo + (hi - lo) * k / partitions for k in range(1, partitions)]
    edges = [None, *cuts, None]
    return [(column, edges[k], edges[k + 1]) for k in range(partitions)]


def _require_columns(available, wanted) -> None:
    """Name the job's columns the input lacks (names come from the job file)."""
    missing = [c for c in wanted if c not in available]
    if missing:
        raise JobIOError(f"the input has no column(s) {missing} named in [columns]")


def _sql_meta(url, table, query, columns, timeout=SQL_TIMEOUT,
              assumed: dict | None = None) -> pd.DataFrame:
    """An empty frame with the input's columns and dtypes, from the schema only.

    Table columns take the dtype of their declared type (:func:`sql_dtype`:
    ``numeric``/``real`` -> float64, ``integer`` -> Int64, ``boolean`` -> boolean,
    ``timestamp`` -> datetime64 (UTC when ``with time zone``), ``date`` -> dates,
    ``interval`` -> timedelta64, anything else -> object); every partition is
    read in them. A query's columns take the types its driver reports for an
    empty result (PostgreSQL's type codes, :data:`PG_TYPES`); where it reports
    none (SQLite), the type the job's own declarations give (``assumed``,
    :func:`~dpmic_dask.batch.jobmodel.job_schema`: dates for date bounds, text
    for categories, else numbers), and a value that is not of it is reported by
    column name when the data is counted.
    """
    if table:
        with sql_engine(url, timeout).connect() as conn:
            declared = {c["name"]: c["type"] for c in inspect(conn).get_columns(table)}
        _require_columns(list(declared), columns)
        dtypes = {name: sql_dtype(declared[name]) for name in columns}
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in dtypes.items()})
    empty, codes = _read_sql(url, None, query, columns, limit=0, timeout=timeout,
                             type_codes=True)
    _require_columns(list(empty.columns), columns)
    guess = {name: _reported(dtype) for name, dtype in (assumed or {}).items()}
    return pd.DataFrame({c: pd.Series(dtype=PG_TYPES.get(codes.get(c), guess.get(c, "float64")))
                         for c in columns})


def _reported(dtype) -> str:
    """A job's declared dtype as the dtype a query's column is read in (times in
    microseconds, as :data:`PG_TYPES` reads them; text as text)."""
    name = str(dtype)
    if name.startswith("datetime64"):
        return "datetime64[us]"
    if name.startswith("timedelta64"):
        return "timedelta64[us]"
    if name == "bool":  # declared boolean: 0/1 read as False/True, anything else refused
        return "boolean"
    return "object" if name == "object" else name


#: PostgreSQL type codes (OIDs) of a query's columns -> the dtype they are read in.
PG_TYPES = {16: "boolean", 20: "Int64", 21: "Int64", 23: "Int64", 700: "float64",
            701: "float64", 1700: "float64", 1082: "date32[pyarrow]", 1114: "datetime64[us]",
            1184: "datetime64[us, UTC]", 1186: "timedelta64[us]", 25: "str", 1043: "str"}


def sql_dtype(declared):
    """The pandas dtype a declared SQL column type is read in (object when unknown)."""
    try:
        python = declared.python_type
    except NotImplementedError:
        return "object"
    if python is bool:
        return "boolean"
    if python is int:
        return "Int64"
    if python in (float, decimal.Decimal):
        return "float64"
    if python is dt.datetime:
        return "datetime64[us, UTC]" if getattr(declared, "timezone", False) else "datetime64[us]"
    if python is dt.date:
        return "date32[pyarrow]"
    if python is dt.timedelta:
        return "timedelta64[us]"
    if python is str:
        return "str"
    return "object"


#: Declared SQL types read as times (dates, timestamps, intervals): a number is
#: never read as one (no unit is declared for it).
TIME_TARGETS = ("datetime64", "date32", "timedelta64")

#: :func:`pandas.api.types.infer_dtype` kinds of numbers.
_NUMBER_KINDS = {"integer", "floating", "decimal", "mixed-integer", "mixed-integer-float",
                 "boolean", "complex"}


def _refuse_numbers_as_times(name: str, column: pd.Series, target) -> None:
    """Refuse a column declared as a time (``target``) whose values arrived as
    numbers (SQLite keeps whatever it is given): read as a time, a number would
    need a unit no declaration gives (pandas would take nanoseconds, Arrow
    days), and SPEC 9 casts numbers to times only with an explicit unit."""
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        held = True
    elif column.dtype == object:
        kind = pd.api.types.infer_dtype(column, skipna=True)
        held = kind in _NUMBER_KINDS or (kind == "mixed" and any(
            isinstance(v, (numbers.Number, decimal.Decimal)) for v in column.dropna()))
    else:
        held = False
    if held:
        raise JobIOError(
            f"the SQL column {name!r} is declared as {target} but holds numbers: a number "
            "becomes a time only with an explicit unit, which a declared type does not "
            "give (a job's unit applies to columns declared as numbers). Store times "
            "(ISO 8601 text or the database's time type), or select the column through "
            "sql_query with a cast to a time (nothing was charged)")


def conform(frame: pd.DataFrame, dtypes) -> pd.DataFrame:
    """``frame`` (rows as the driver returned them: ``Decimal``, ``date`` and
    ``None`` in object columns) in ``dtypes``. A column that does not convert is
    one line naming it and its dtype, never a value."""
    out = {}
    for name in frame.columns:
        target = dtypes.get(name, "object")
        column = frame[name]
        if str(target) == "object" or str(column.dtype) == str(target):
            out[name] = column
            continue
        if str(target).startswith(TIME_TARGETS):
            _refuse_numbers_as_times(name, column, target)
        try:
            if str(target).startswith("datetime64"):
                # ISO 8601 text only (with or without a time and an offset): another
                # layout is refused, never read by guessing day and month; nor is
                # "now" or "today", which pandas reads as the clock
                if column.isin(CLOCK_WORDS).any():
                    raise ValueError
                # text with offsets (SQLite keeps what was written) is read as the
                # instant it names; a column typed without a zone holds UTC
                converted = pd.to_datetime(column, utc=True, format="ISO8601")
                if not str(target).endswith("UTC]"):
                    converted = converted.dt.tz_localize(None)
                out[name] = converted.astype(target)
            elif str(target) == "float64":
                out[name] = column.astype("float64")
            else:
                out[name] = column.astype(target)
        except (TypeError, ValueError, ArithmeticError, OverflowError, NotImplementedError):
            kind = type(column.dtype).__name__
            hint = (": times are read from ISO 8601 text only (e.g. 2024-02-01 or "
                    "2024-02-01T09:30:00+01:00), never by guessing the order of day and month"
                    if str(target).startswith(TIME_TARGETS) else "")
            raise JobIOError(f"the SQL column {name!r} does not read as {target} "
                             f"(its values arrived as {column.dtype}, {kind}){hint}") from None
    return pd.DataFrame(out, index=frame.index)


def _read_sql(url, table, query, columns, limit=None, timeout=SQL_TIMEOUT,
              where=None, type_codes=False):
    """Rows of a SQL table (selected columns) or query; ``limit`` caps the rows;
    ``where`` is a range ``(column, lo, hi)`` of :func:`sql_ranges` (or ``None``).
    With ``type_codes``, also the driver's type code of each column (by name)."""
    statement: Any
    if table:
        statement = select(*[column(c) for c in columns]).select_from(sql_table(table))
    else:
        statement = select(literal_column("*")).select_from(
            text(f"({query}) AS dpmic_input"))
    if where is not None:
        name, lo, hi = where
        key: Any = column(name)
        if lo is None:
            if hi is not None:
                statement = statement.where(or_(key < hi, key.is_(None)))
        else:
            statement = statement.where(key >= lo)
            if hi is not None:
                statement = statement.where(key < hi)
    if limit is not None:
        statement = statement.limit(limit)
    with sql_engine(url, timeout).connect() as conn:
        if not type_codes:
            return pd.read_sql_query(statement, conn)
        result = conn.execute(statement)
        described = getattr(result.cursor, "description", None) or ()
        codes = {d[0]: getattr(d, "type_code", d[1]) for d in described}
        return pd.DataFrame(result.fetchall(), columns=list(result.keys())), codes
