"""The rows a batch run releases, before they are written: their columns and
kinds (:data:`BASE_COLUMNS`, :func:`expected_columns`), the table a release
becomes (:func:`result_rows`) with every column of its declared kind
(:func:`declared`), and the Parquet and SQL types a written file or table
takes. Where the rows go is :mod:`dpmic_dask.batch.joboutput`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlalchemy import BigInteger, Float, Text

from dpmic_dask.release.results import output_name

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Columns of every released row, in order, with their kind.
BASE_COLUMNS = {
    "run_id": str, "released_at": str, "job": str, "dataset": str, "x": str, "y": str,
    "mic": float, "ci95": float, "noise_scale": float, "mechanism": str, "statistic": str,
    "release_epsilon": float, "release_delta": float, "value_cost": float, "cost_unit": str,
    "n": int, "B": int, "c": int,
}



def expected_columns(job) -> dict:
    """The columns (name -> kind) a run of ``job`` writes."""
    columns = dict(BASE_COLUMNS)
    # whether each value lies inside its own ci95 of 0 (0 or 1)
    columns["within_noise"] = int
    for statistic in job.statistics[1:]:
        name = output_name(statistic)  # tau is written as tau_a
        columns.update({name: float, f"{name}_ci95": float, f"{name}_noise_scale": float,
                        f"{name}_within_noise": int})
    if "tau" in job.statistics:
        columns["nonlinearity"] = float
    if any(b == "private" for b in job.bounds.values()):
        # the bounds each value was computed at: a run that estimated bounds writes
        # them, so that the next run can pin them as public (and stop paying)
        columns.update({"x_lo": float, "x_hi": float, "y_lo": float, "y_hi": float,
                        # "public", "private", or "private: " and what is wrong with
                        # them ("unresolved, fallback bounds", ...): never pin those
                        "x_bounds": str, "y_bounds": str})
    columns["charge_id"] = str
    return columns


#: pandas dtypes of the column kinds (an empty column would otherwise be float64).
_DTYPES = {str: "object", float: "float64", int: "int64"}


def declared(rows: pd.DataFrame, job) -> pd.DataFrame:
    """``rows`` with every column of an empty release given its declared kind (a
    release that passed no pair still writes ``x`` and ``y`` as strings)."""
    if len(rows):
        return rows
    kinds = expected_columns(job)
    return rows.astype({name: _DTYPES[kinds[name]] for name in rows.columns if name in kinds})


def result_rows(result, *, run_id: str, job) -> pd.DataFrame:
    """The rows a run writes: the tidy table plus run id, time, job, dataset, charge."""
    table = result.to_pandas()
    for flag in [c for c in table.columns if c.endswith("within_noise")]:
        table[flag] = table[flag].astype("int64")  # 0 or 1 in every output format
    table.insert(0, "run_id", run_id)
    table.insert(1, "released_at", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    table.insert(2, "job", job.name)
    table.insert(3, "dataset", job.dataset)
    if result.private_bounds is not None:
        used = {c: _numbers(b) for c, b in job.bounds.items()}
        used.update(result.private_bounds.bounds)  # axis numbers
        for side in ("x", "y"):
            table[f"{side}_lo"] = [float(used.get(c, _NO_BOUNDS)[0]) for c in table[side]]
            table[f"{side}_hi"] = [float(used.get(c, _NO_BOUNDS)[1]) for c in table[side]]
        found = result.private_bounds
        for side in ("x", "y"):
            table[f"{side}_bounds"] = [found.note(c) if c in found.bounds else "public"
                                       for c in table[side]]
    table["charge_id"] = result.charge_id
    return declared(table, job)


_NO_BOUNDS = (float("nan"), float("nan"))


def _numbers(bounds) -> tuple[float, float]:
    """Public bounds as two numbers (bounds given in another kind, such as dates,
    are written as NaN: the job file holds them)."""
    try:
        lo, hi = (float(v) for v in bounds)
    except (TypeError, ValueError):
        return _NO_BOUNDS
    return lo, hi


def _fixed(rows: pd.DataFrame, job) -> dict:
    """The declared kinds a written table or file takes: every column's when
    ``rows`` is empty; else the string columns' (numbers keep their inferred
    type, so a value is never cast)."""
    kinds = expected_columns(job)
    return {name: kinds[name] for name in rows.columns
            if name in kinds and (not len(rows) or kinds[name] is str)}


def _sql_types(rows: pd.DataFrame, job) -> dict:
    """SQL types of the declared columns, for a table the delivery creates."""
    types: dict[type, Any] = {str: Text(), int: BigInteger(), float: Float(precision=53)}
    return {name: types[kind] for name, kind in _fixed(rows, job).items()}


def _arrow_schema(rows: pd.DataFrame, job):
    """The Parquet schema of ``rows``: declared kinds, whatever the row count."""
    types = {str: pa.string(), int: pa.int64(), float: pa.float64()}
    kinds = _fixed(rows, job)
    inferred = pa.Schema.from_pandas(rows, preserve_index=False)
    return pa.schema([pa.field(f.name, types[kinds[f.name]]) if f.name in kinds else f
                      for f in inferred])
