"""The rows a batch run releases, before they are written: their columns and
kinds (:data:`BASE_COLUMNS`, :func:`expected_columns`), the table a release
becomes (:func:`result_rows`) with every column of its declared kind
(:func:`declared`), and the Parquet and SQL types a written file or table
takes. Where the rows go is :mod:`dpmic_dask.batch.joboutput`.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlalchemy import BigInteger, Float, Text

from dpmic_dask.release.boundsresult import LONGEST_NOTE
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
    if job.privacy_unit is not None:  # per unit: which unit, how many rows each
        columns.update({"privacy_unit": str, "max_rows_per_unit": int})
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


def probe_row(job, run_id: str | None = None) -> dict:
    """A row as wide as this job's rows can be: its longest column name as ``x``
    and ``y``, its names and run id, and the extreme values of each numeric kind
    (no data value)."""
    longest = max(job.bounds, key=len) if job.bounds else "x"
    texts = {"run_id": run_id or uuid.uuid4().hex, "released_at": "2026-01-01T00:00:00+00:00",
             "job": job.name, "dataset": job.dataset, "x": longest, "y": longest,
             "mechanism": max((job.mechanism, "micr-gauss"), key=len),
             # the names rows hold (MIC's estimator, the zCDP unit), the longest of each
             "statistic": max(("micr", "mice", *job.statistics), key=len),
             "cost_unit": max(("epsilon", "rho (zCDP)"), key=len),
             "privacy_unit": "+".join(job.privacy_unit or ()),
             "x_bounds": LONGEST_NOTE, "y_bounds": LONGEST_NOTE,
             "charge_id": uuid.uuid4().hex}
    extreme = {int: 2**63 - 1, float: 1.7976931348623157e308}
    return {name: texts.get(name, "") if kind is str else
            1 if name.endswith("within_noise") else RANGES.get(name, extreme[kind])
            for name, kind in expected_columns(job).items()}


#: Released values whose range is known, probed at an end of it (``mic`` is clamped
#: to [0, 1], ``tau_a`` to [-1, 1], ``nonlinearity`` lies in [-1, 1], a
#: ``within_noise`` flag is 0 or 1: a table may rightly check that).
RANGES = {"mic": 1.0, "tau_a": -1.0, "nonlinearity": -1.0}


def missing_columns(job) -> list:
    """The columns this job's rows may leave empty (NULL in a table): Kendall's tau
    of a pair with a categorical column, ``ci95`` of ``micr-geom``, the bounds of
    columns whose bounds are not numbers (dates: written in the job file)."""
    columns = expected_columns(job)
    out = []
    if any(isinstance(b, dict) for b in job.bounds.values()):  # a categorical column
        out += [name for name in columns
                if name.startswith("tau_a") and name != "tau_a_within_noise"]
        out += ["nonlinearity"] if "nonlinearity" in columns else []
    if job.mechanism == "micr-geom":
        out.append("ci95")
    if "x_lo" in columns and any(not _numbers_or_private(b) for b in job.bounds.values()):
        out += ["x_lo", "x_hi", "y_lo", "y_hi"]
    return out


def _numbers_or_private(bounds) -> bool:
    return bounds == "private" or (isinstance(bounds, (list, tuple)) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds))


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
