"""What a checked job file is: its sections and keys, and the :class:`Job` that
:func:`dpmic_dask.batch.jobs.load_job` returns (with :func:`job_schema`, the
schema its columns imply).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SECTIONS = {
    "job": {"name", "dataset"},
    "input": {"paths", "format", "sql_url", "sql_table", "sql_query", "timeout",
              "partition_column", "partition_bounds", "partitions"},
    "columns": None,  # column names are free; each entry has COLUMN_KEYS
    "privacy": {"eps", "delta", "mechanism", "B", "c", "nulls", "statistics", "bounds_share",
                "min_rows", "unit", "max_rows_per_unit"},
    "output": {"path", "format", "sql_url", "sql_table", "timeout"},
    "cluster": {"scheduler", "workers", "timeout", "task_memory", "memory_limit"},
    "select": {"top_k", "threshold", "max_pairs", "share", "screen_B"},
    "causal": {"alpha", "max_condition_size", "bins", "test", "select_share"},
    "ledger": {"url"},
    "bounds": {"check"},  # [bounds] check = 0.05: a private check of public bounds
}


COLUMN_KEYS = {"bounds", "fill", "kind", "unit", "domain", "coverage", "refine", "categories"}


#: Kinds a job file can name (``columns.ts.kind``); see :mod:`dpmic_dask.stats.kinds`.
JOB_KINDS = ("number", "boolean", "timestamp", "date", "timedelta")


FORMATS = ("parquet", "csv")


@dataclass(frozen=True)
class Job:
    """A checked job (no data has been read, no budget touched)."""

    source: str
    name: str
    dataset: str
    input_paths: tuple = ()
    input_format: str | None = None
    sql_url: str | None = None
    sql_table: str | None = None
    sql_query: str | None = None
    input_timeout: float = 30.0
    partition_column: str | None = None
    partition_bounds: tuple[float, float] | None = None
    partitions: int = 1
    bounds: dict = field(default_factory=dict)
    fill: dict | None = None
    #: Per-column kinds and casts (``columns.ts.kind = "timestamp"``, ``unit``):
    #: ``{column: {"kind": ..., "unit": ...}}``, only for the columns that name one.
    kinds: dict = field(default_factory=dict)
    #: ``privacy.nulls = "drop"``: the public minimum of the rows kept.
    min_rows: int | None = None
    #: ``privacy.unit`` (the column(s) of one unit; ``None``: one row) and
    #: ``privacy.max_rows_per_unit`` (docs/privacy.md, "Privacy per unit").
    privacy_unit: tuple | None = None
    max_rows_per_unit: int | None = None
    #: Private-bounds knobs of ``bounds = "private"`` columns that set one:
    #: ``{column: {"domain": (lo, hi), "coverage": ..., "refine": ...}}``.
    bounds_options: dict = field(default_factory=dict)
    eps: float = 1.0
    delta: float = 0.0
    mechanism: str = "auto"
    B: int | None = None
    c: int | None = None
    nulls: str = "raise"
    statistics: tuple = ("mic",)
    bounds_share: float | None = None
    bounds_check: float | str | bool | None = None
    output_path: str | None = None
    output_format: str = "parquet"
    output_sql_url: str | None = None
    output_sql_table: str | None = None
    output_timeout: float = 30.0
    scheduler: str | None = None
    timeout: float | None = None  # cluster.timeout: 30 s for a scheduler, 120 to start one
    workers: int = 2
    task_memory: int | None = None  # [cluster] task_memory; None: dpmic_dask.config's
    memory_limit: int | None = None  # [cluster] memory_limit of a local worker; None: Dask's
    select_rule: str | None = None
    select_k: int | None = None
    select_threshold: float | None = None
    select_max_pairs: int | None = None
    select_share: float = 0.5
    screen_B: int | str | None = "auto"
    ledger_url: str = "sqlite:///dpmic-ledger.db"
    #: ``[causal]``: release a private CPDAG (:mod:`dpmic_dask.batch.jobcausal`) with
    #: these options instead of pairwise values; ``None``: no causal section.
    causal: dict | None = None


def job_schema(job: Job) -> dict:
    """The schema a job declares, for ``dpmic validate`` (the input's own dtypes are
    checked by ``run``, or by ``validate --schema``): a named kind's dtype, else
    float64 for numeric, boolean or private bounds and datetime64 for bounds given
    otherwise (TOML dates and times, strings), whose kind then checks them."""
    declared = {"timestamp": "datetime64[ns]", "date": "datetime64[ns]",
                "timedelta": "timedelta64[ns]", "boolean": "bool", "number": "float64"}
    schema = {name: np.dtype(object) for name in job.privacy_unit or ()}  # any type
    for name, bounds in job.bounds.items():
        kind = job.kinds.get(name, {})
        if isinstance(bounds, dict):  # a categorical column: strings (or integers)
            schema[name] = np.dtype(object)
        elif kind and "unit" not in kind:
            schema[name] = np.dtype(declared[kind["kind"]])
        elif kind or bounds == "private" or any(
                isinstance(v, (int, float)) for v in bounds):
            schema[name] = np.dtype("float64")
        else:
            schema[name] = np.dtype("datetime64[ns]")
    return schema
