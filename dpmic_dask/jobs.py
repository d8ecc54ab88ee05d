"""Job files for ``dpmic run`` / ``dpmic validate`` (TOML or YAML).

A job names its input, the columns with public bounds, the privacy parameters,
where results go, the cluster and the ledger. :func:`load_job` parses and
checks all of it without reading data or touching the budget; every problem is
one line naming the key, never a data value.

Example (TOML)::

    [job]
    name = "daily-dependence"
    dataset = "sales"                      # ledger dataset id

    [input]
    paths = ["data/sales-*.parquet"]       # Parquet or CSV files/globs, fsspec URLs
    # or: sql_url = "postgresql://..." with sql_table = "sales" (or sql_query = "...")
    # timeout = 30                         # seconds to connect to a SQL server

    [columns]
    age = { bounds = [0, 120] }
    income = { bounds = [0, 300000], fill = 40000 }

    [privacy]
    eps = 1.0                              # also: delta, mechanism, B, c, nulls

    [output]
    path = "results/"                      # a folder (Parquet or CSV), or sql_url + sql_table
                                           # (+ timeout, seconds to connect, default 30)

    [cluster]
    scheduler = "tcp://scheduler:8786"     # default: $DASK_SCHEDULER_ADDRESS, else a local cluster
    timeout = 30                           # seconds for the scheduler to answer
    [ledger]
    url = "sqlite:///ledger.db"            # default: $DPMIC_LEDGER, else sqlite:///dpmic-ledger.db
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidParameterError

SECTIONS = {
    "job": {"name", "dataset"},
    "input": {"paths", "format", "sql_url", "sql_table", "sql_query", "timeout"},
    "columns": None,  # column names are free; each entry has COLUMN_KEYS
    "privacy": {"eps", "delta", "mechanism", "B", "c", "nulls"},
    "output": {"path", "format", "sql_url", "sql_table", "timeout"},
    "cluster": {"scheduler", "workers", "timeout"},
    "ledger": {"url"},
}
COLUMN_KEYS = {"bounds", "fill"}
FORMATS = ("parquet", "csv")


class JobError(InvalidParameterError):
    """A job file is malformed; the message names the file and the key."""


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
    bounds: dict = field(default_factory=dict)
    fill: dict | None = None
    eps: float = 1.0
    delta: float = 0.0
    mechanism: str = "auto"
    B: int | None = None
    c: int | None = None
    nulls: str = "raise"
    output_path: str | None = None
    output_format: str = "parquet"
    output_sql_url: str | None = None
    output_sql_table: str | None = None
    output_timeout: float = 30.0
    scheduler: str | None = None
    timeout: float = 30.0
    workers: int = 2
    ledger_url: str = "sqlite:///dpmic-ledger.db"


def _read(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as exc:
        raise JobError(f"{path}: cannot read the job file ({exc.strerror})") from None
    # A job file is configuration, not data: its parser's position and reason
    # are safe to show.
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown place"
            reason = exc.problem or exc.context
            raise JobError(f"{path}: not valid YAML at {where}: {reason}") from None
        except yaml.YAMLError as exc:
            raise JobError(f"{path}: not valid YAML ({exc.__class__.__name__})") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise JobError(f"{path}: not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise JobError(f"{path}: a job file must be a table of sections")
    return data


def _section(data, name, src, required=False) -> dict:
    value = data.get(name)
    if value is None:
        if required:
            raise JobError(f"{src}: missing section [{name}]")
        return {}
    if not isinstance(value, dict):
        raise JobError(f"{src}: [{name}] must be a table")
    allowed = SECTIONS[name]
    if allowed is not None:
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise JobError(f"{src}: unknown key {name}.{unknown[0]} "
                           f"(allowed: {', '.join(sorted(allowed))})")
    return value


def _typed(value, kinds, key, src, what):
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise JobError(f"{src}: {key} must be {what}")
    return value


def _seconds(value, key, src) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
        raise JobError(f"{src}: {key} must be a number of seconds in (0, 3600]")
    return float(value)


def load_job(path) -> Job:
    """Parse and check a job file; raise :class:`JobError` with one clear line."""
    path = Path(path)
    src = str(path)
    data = _read(path)
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise JobError(f"{src}: unknown section [{unknown[0]}] (allowed: {', '.join(SECTIONS)})")
    job = _section(data, "job", src, required=True)
    inp = _section(data, "input", src, required=True)
    cols = _section(data, "columns", src, required=True)
    priv = _section(data, "privacy", src, required=True)
    out = _section(data, "output", src, required=True)
    cluster = _section(data, "cluster", src)
    ledger = _section(data, "ledger", src)

    kw: dict[str, Any] = {"source": src}
    for key in ("name", "dataset"):
        if key not in job:
            raise JobError(f"{src}: missing job.{key}")
        kw[key] = _typed(job[key], str, f"job.{key}", src, "a string")

    if "paths" in inp and ("sql_url" in inp):
        raise JobError(f"{src}: input takes either paths or sql_url, not both")
    if "paths" in inp:
        paths = inp["paths"]
        paths = [paths] if isinstance(paths, str) else paths
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise JobError(f"{src}: input.paths must be a path or a list of paths")
        kw["input_paths"] = tuple(paths)
        fmt = inp.get("format") or ("csv" if paths[0].endswith((".csv", ".csv.gz")) else "parquet")
        if fmt not in FORMATS:
            raise JobError(f"{src}: input.format must be one of {', '.join(FORMATS)}")
        kw["input_format"] = fmt
    elif "sql_url" in inp:
        kw["sql_url"] = _typed(inp["sql_url"], str, "input.sql_url", src, "a database URL")
        if ("sql_table" in inp) == ("sql_query" in inp):
            raise JobError(f"{src}: input with sql_url needs exactly one of sql_table, sql_query")
        for key in ("sql_table", "sql_query"):
            if key in inp:
                kw[key] = _typed(inp[key], str, f"input.{key}", src, "a non-empty string")
                if not kw[key].strip():
                    raise JobError(f"{src}: input.{key} must be a non-empty string")
        if "timeout" in inp:
            kw["input_timeout"] = _seconds(inp["timeout"], "input.timeout", src)
    else:
        raise JobError(f"{src}: input needs paths or sql_url")

    bounds, fills = {}, {}
    for name, spec in cols.items():
        if not isinstance(spec, dict):
            raise JobError(f"{src}: columns.{name} must be a table with bounds")
        bad = sorted(set(spec) - COLUMN_KEYS)
        if bad:
            raise JobError(f"{src}: unknown key columns.{name}.{bad[0]} (allowed: bounds, fill)")
        if "bounds" not in spec:
            raise JobError(f"{src}: columns.{name} has no bounds (public bounds are required)")
        b = spec["bounds"]
        if not (isinstance(b, list) and len(b) == 2):
            raise JobError(f"{src}: columns.{name}.bounds must be [lo, hi]")
        bounds[name] = tuple(b)
        if "fill" in spec:
            fills[name] = spec["fill"]
    if len(bounds) < 2:
        raise JobError(f"{src}: at least two columns are needed")
    kw["bounds"] = bounds

    if "eps" not in priv:
        raise JobError(f"{src}: missing privacy.eps")
    kw["eps"] = _typed(priv["eps"], (int, float), "privacy.eps", src, "a number > 0")
    kw["delta"] = _typed(priv.get("delta", 0.0), (int, float), "privacy.delta", src,
                         "a number in [0, 1)")
    kw["mechanism"] = _typed(priv.get("mechanism", "auto"), str, "privacy.mechanism", src,
                             "a string")
    for key in ("B", "c"):
        if key in priv:
            kw[key] = _typed(priv[key], int, f"privacy.{key}", src, "an integer")
    kw["nulls"] = priv.get("nulls", "raise")
    if kw["nulls"] == "fill":
        kw["fill"] = fills
    elif fills:
        raise JobError(f"{src}: fill values need privacy.nulls = \"fill\"")

    if "path" in out and "sql_url" in out:
        raise JobError(f"{src}: output takes either path or sql_url, not both")
    if "path" in out:
        kw["output_path"] = _typed(out["path"], str, "output.path", src, "a folder path")
        kw["output_format"] = out.get("format", "parquet")
        if kw["output_format"] not in FORMATS:
            raise JobError(f"{src}: output.format must be one of {', '.join(FORMATS)}")
    elif "sql_url" in out:
        kw["output_sql_url"] = _typed(out["sql_url"], str, "output.sql_url", src, "a database URL")
        kw["output_sql_table"] = _typed(out.get("sql_table"), str, "output.sql_table", src,
                                        "a table name")
        if not kw["output_sql_table"].strip():
            raise JobError(f"{src}: output.sql_table must be a non-empty table name")
        if "timeout" in out:
            kw["output_timeout"] = _seconds(out["timeout"], "output.timeout", src)
    else:
        raise JobError(f"{src}: output needs path or sql_url")

    if "scheduler" in cluster:
        kw["scheduler"] = _typed(cluster["scheduler"], str, "cluster.scheduler", src, "an address")
    if "timeout" in cluster:
        kw["timeout"] = _seconds(cluster["timeout"], "cluster.timeout", src)
    if "workers" in cluster:
        kw["workers"] = _typed(cluster["workers"], int, "cluster.workers", src, "an integer >= 1")
        if kw["workers"] < 1:
            raise JobError(f"{src}: cluster.workers must be an integer >= 1")
    if "url" in ledger:
        kw["ledger_url"] = _typed(ledger["url"], str, "ledger.url", src, "a ledger URL")
    elif os.environ.get("DPMIC_LEDGER"):
        kw["ledger_url"] = os.environ["DPMIC_LEDGER"]  # e.g. from a Kubernetes Secret
    if "scheduler" not in cluster and os.environ.get("DASK_SCHEDULER_ADDRESS"):
        kw["scheduler"] = os.environ["DASK_SCHEDULER_ADDRESS"]  # set by the Dask operator
    return _check_parameters(Job(**kw))


def _check_parameters(job: Job) -> Job:
    """Run the library's own checks that need no data, with the job file's names:
    the very request ``dpmic run`` builds, on a schema in which every column is
    numeric (the input's real dtypes are checked when it is opened)."""
    from .cluster import check_address
    from .errors import DPMICError
    from .ledger import SQLLedger
    from .request import numeric_schema

    try:
        if job.mechanism == "mice-lap":
            raise InvalidParameterError("privacy.mechanism 'mice-lap' is in-memory only")
        job_request(job, numeric_schema(job.bounds))
        if job.scheduler:
            check_address(job.scheduler)
        SQLLedger(job.ledger_url)  # URL shape only; nothing is opened
    except JobError:
        raise
    except DPMICError as exc:
        raise JobError(f"{job.source}: {exc}") from None
    return job


def job_request(job: Job, schema):
    """The checked release request of ``job`` against the input's ``schema``."""
    from .request import JobFileNames, pairwise_request

    return pairwise_request(schema, eps=job.eps, bounds=job.bounds, columns=list(job.bounds),
                            delta=job.delta, mechanism=job.mechanism, B=job.B, c=job.c,
                            nulls=job.nulls, fill=job.fill, label=job.name,
                            names=JobFileNames())
