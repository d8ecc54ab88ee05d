"""Job files for ``dpmic run`` / ``dpmic validate`` (TOML or YAML).

A job names its input, the columns with public bounds, the privacy parameters,
where results go, the cluster and the ledger. :func:`load_job` parses and
checks all of it without reading data or touching the budget; every problem is
one line naming the key, never a data value.

Example (TOML)::

    [job]
    name = "daily-dependence"              # default: the file's name ("daily" for daily.toml)
    dataset = "sales"                      # ledger dataset id; runs are keyed by
                                           # (dataset, name, run id): give every job
                                           # its own name (a key charged by another
                                           # job is refused, exit 2)

    [input]
    paths = ["data/sales-*.parquet"]       # Parquet or CSV files/globs, fsspec URLs
    # or: sql_url = "postgresql://..." with sql_table = "sales" (or sql_query = "...")
    # timeout = 30                         # seconds to connect to a SQL server
    # partition_column = "id"              # SQL read in ranges of a numeric column:
    # partition_bounds = [1, 5000000]      #   public range, split evenly (rows outside
    # partitions = 16                      #   it are read too, by the end ranges)

    [columns]
    age = { bounds = [0, 120] }
    income = { bounds = [0, 300000], fill = 40000 }
    # spend = { bounds = "private" }       # estimated privately (privacy.bounds_share)
    # ts = { bounds = "private", domain = [0, 4e9], coverage = 0.995, refine = true }
    #                                      # private-bounds knobs, per column
    # signup = { bounds = [2023-01-01, 2025-01-01] }   # times: bounds as TOML dates
    # ts = { kind = "timestamp", unit = "s", bounds = [2023-01-01, 2025-01-01] }
    #                                      # a cast: epoch numbers (or strings) as times
    # churned = { kind = "boolean" }       # booleans: bounds (0, 1) implied
    # region = { categories = ["north", "south", "east"] }  # categorical: a public list
    # plan = { categories = { private = ["basic", "plus", "pro"] } }  # chosen privately

    [privacy]
    eps = 1.0                              # also: delta, mechanism, B, c, nulls,
                                           # statistics = ["mic", "tau"]
    # nulls = "drop"                       # drop rows with a null (listwise), with
    # min_rows = 50000                     #   a public minimum of the rows kept

    [output]
    path = "results/"                      # a folder (Parquet or CSV), or sql_url + sql_table
                                           # (+ timeout, seconds to connect, default 30)

    [cluster]
    scheduler = "tcp://scheduler:8786"     # default: $DASK_SCHEDULER_ADDRESS, else a local cluster
    timeout = 30                           # seconds for the scheduler to answer (or for
                                           #   a local cluster's workers to start)
    # workers = 2                          # local cluster: 1 to 4 per CPU core
    task_memory = "256 MiB"                # counts and input one task holds (sets block sizes)
    [ledger]
    url = "sqlite:///ledger.db"            # default: $DPMIC_LEDGER, else sqlite:///dpmic-ledger.db

    [select]                               # optional: release only privately chosen pairs
    top_k = 10                             # the 10 strongest (or: threshold = 0.3 with
    share = 0.5                            #   max_pairs = 20); share of eps for choosing
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpmic_dask.batch.jobfile import JobError, read_job_file
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.limits import DEFAULT_TASK_MEMORY

SECTIONS = {
    "job": {"name", "dataset"},
    "input": {"paths", "format", "sql_url", "sql_table", "sql_query", "timeout",
              "partition_column", "partition_bounds", "partitions"},
    "columns": None,  # column names are free; each entry has COLUMN_KEYS
    "privacy": {"eps", "delta", "mechanism", "B", "c", "nulls", "statistics", "bounds_share",
                "min_rows", "unit", "max_rows_per_unit"},
    "output": {"path", "format", "sql_url", "sql_table", "timeout"},
    "cluster": {"scheduler", "workers", "timeout", "task_memory"},
    "select": {"top_k", "threshold", "max_pairs", "share", "screen_B"},
    "causal": {"alpha", "max_condition_size", "bins", "test", "select_share"},
    "ledger": {"url"},
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
    output_path: str | None = None
    output_format: str = "parquet"
    output_sql_url: str | None = None
    output_sql_table: str | None = None
    output_timeout: float = 30.0
    scheduler: str | None = None
    timeout: float = 30.0
    workers: int = 2
    task_memory: int = DEFAULT_TASK_MEMORY
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


MAX_SQL_PARTITIONS = 100_000


def _sql_partitions(inp: dict, src: str) -> dict:
    """``partition_column``, ``partition_bounds``, ``partitions`` of a SQL input."""
    keys = {"partition_column", "partition_bounds", "partitions"} & set(inp)
    if not keys:
        return {}
    if "partition_column" not in inp:
        raise JobError(f"{src}: input.{sorted(keys)[0]} needs input.partition_column")
    column = _typed(inp["partition_column"], str, "input.partition_column", src, "a column name")
    if not column.strip():
        raise JobError(f"{src}: input.partition_column must be a non-empty column name")
    if "partition_bounds" not in inp:
        raise JobError(f"{src}: input.partition_column needs input.partition_bounds = [lo, hi], "
                       "the public range of the column to split into partitions")
    b = inp["partition_bounds"]
    if not (isinstance(b, list) and len(b) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in b)
            and all(math.isfinite(v) for v in b) and b[0] < b[1]):
        raise JobError(f"{src}: input.partition_bounds must be [lo, hi], finite numbers, lo < hi")
    count = inp.get("partitions", 16)
    if isinstance(count, bool) or not isinstance(count, int) \
            or not 1 <= count <= MAX_SQL_PARTITIONS:
        raise JobError(f"{src}: input.partitions must be an integer from 1 to "
                       f"{MAX_SQL_PARTITIONS:,}")
    return {"partition_column": column, "partition_bounds": (float(b[0]), float(b[1])),
            "partitions": count}


def _column_kind(spec: dict, name: str, src: str) -> dict:
    """``columns.<name>.kind`` and ``unit`` (a cast for values that arrive as strings
    or numbers), as ``{"kind": ..., "unit": ...}``; ``{}`` when none is named."""
    if "kind" not in spec:
        if "unit" in spec:
            raise JobError(f"{src}: columns.{name}.unit needs columns.{name}.kind")
        return {}
    kind = spec["kind"]
    if kind not in JOB_KINDS:
        raise JobError(f"{src}: columns.{name}.kind must be one of {', '.join(JOB_KINDS)}")
    out = {"kind": kind}
    if "unit" in spec:
        from dpmic_dask.stats.timekind import UNITS

        if kind not in ("timestamp", "date", "timedelta") or spec["unit"] not in UNITS:
            raise JobError(f"{src}: columns.{name}.unit must be one of {', '.join(UNITS)} "
                           "(for a timestamp, date or timedelta kind)")
        out["unit"] = spec["unit"]
    return out


def _categories(spec: dict, name: str, src: str) -> dict:
    """``columns.<name>.categories``: a public list (``["north", "south"]``) or
    ``{ private = [candidates] }``; kept in ``Job.bounds`` as ``{"categories": ...}``
    (the column's bounds come from the list; see :mod:`dpmic_dask.stats.categories`)."""
    others = sorted(set(spec) - {"categories", "fill"})
    if others:
        raise JobError(f"{src}: columns.{name}.{others[0]} does not apply to a categorical "
                       "column (its bounds come from its categories)")
    listed = spec["categories"]
    if isinstance(listed, dict):
        if set(listed) != {"private"} or not isinstance(listed["private"], list):
            raise JobError(f"{src}: columns.{name}.categories must be a list or "
                           "{ private = [candidates] }")
        return {"categories": {"private": list(listed["private"])}}
    if not isinstance(listed, list):
        raise JobError(f"{src}: columns.{name}.categories must be a list of public categories")
    return {"categories": list(listed)}


def _bounds_options(spec: dict, name: str, src: str) -> dict:
    """``columns.<name>.domain``, ``coverage`` and ``refine`` of a column whose
    bounds are ``"private"`` (checked as the API checks them)."""
    keys = [k for k in ("domain", "coverage", "refine") if k in spec]
    if keys and spec.get("bounds") != "private":
        raise JobError(f'{src}: columns.{name}.{keys[0]} applies to bounds = "private" only')
    from dpmic_dask.privacy.bounds import check_coverage, check_domain
    from dpmic_dask.release.histograms import check_refine

    checks = {"domain": (check_domain, "[lo, hi], two finite numbers with lo < hi"),
              "coverage": (check_coverage, "a number between 0 and 1 (exclusive)"),
              "refine": (check_refine, "true or false")}
    out = {}
    for key in keys:
        check, what = checks[key]
        try:
            out[key] = check(spec[key])
        except InvalidParameterError:
            raise JobError(f"{src}: columns.{name}.{key} must be {what}") from None
    return out


def job_schema(job: Job) -> dict:
    """The schema a job declares, for ``dpmic validate`` (the input's own dtypes are
    checked by ``run``, or by ``validate --schema``): a named kind's dtype, else
    float64 for numeric, boolean or private bounds and datetime64 for bounds given
    otherwise (TOML dates and times, strings), whose kind then checks them."""
    import numpy as np

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


def _select(sel: dict, src: str) -> dict:
    """The optional ``[select]`` section: ``top_k``, or ``threshold`` with ``max_pairs``."""
    if not sel:
        return {}
    kw: dict[str, Any] = {}
    if ("top_k" in sel) == ("threshold" in sel):
        raise JobError(f"{src}: [select] needs exactly one of top_k, threshold")
    if "top_k" in sel:
        if "max_pairs" in sel:
            raise JobError(f"{src}: select.max_pairs goes with select.threshold, not top_k")
        kw["select_rule"] = "top-k"
        kw["select_k"] = _typed(sel["top_k"], int, "select.top_k", src, "an integer >= 1")
    else:
        kw["select_rule"] = "above"
        kw["select_threshold"] = _typed(sel["threshold"], (int, float), "select.threshold",
                                        src, "a number in [0, 1]")
        if "max_pairs" not in sel:
            raise JobError(f"{src}: select.threshold needs select.max_pairs")
        kw["select_max_pairs"] = _typed(sel["max_pairs"], int, "select.max_pairs", src,
                                        "an integer >= 1")
    if "share" in sel:
        kw["select_share"] = _typed(sel["share"], (int, float), "select.share", src,
                                    "a number between 0 and 1")
    if "screen_B" in sel:
        value = sel["screen_B"]
        if value == "off":
            kw["screen_B"] = None
        elif value != "auto":
            kw["screen_B"] = _typed(value, int, "select.screen_B", src,
                                    'an integer, "auto" or "off"')
    return kw


def _bytes(value, key, src) -> int:
    """A size in bytes: an integer, or a string with a unit ("256 MiB", "1GB")."""
    if isinstance(value, str):
        from dask.utils import parse_bytes

        try:
            value = parse_bytes(value)
        except (ValueError, TypeError):
            raise JobError(f"{src}: {key} must be a size such as \"256 MiB\"") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 2**20 <= value <= 2**40:
        raise JobError(f"{src}: {key} must be a size from 1 MiB to 1 TiB")
    return value


def load_job(path) -> Job:
    """Parse and check a job file; raise :class:`JobError` with one clear line."""
    path = Path(path)
    src = str(path)
    data = read_job_file(path)
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
    if "dataset" not in job:
        raise JobError(f"{src}: missing job.dataset")
    # A run is keyed by (dataset, job name, run id). Without a name, the job file's
    # name without its extension stands in ("daily" for daily.toml).
    named = {"dataset": job["dataset"], "name": job.get("name", path.stem)}
    for key in ("name", "dataset"):
        kw[key] = _typed(named[key], str, f"job.{key}", src, "a string")
        if not kw[key].strip():
            raise JobError(f"{src}: job.{key} must be a non-empty string")

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
        kw.update(_sql_partitions(inp, src))
    else:
        raise JobError(f"{src}: input needs paths or sql_url")
    if "paths" in inp:
        extra = sorted({"partition_column", "partition_bounds", "partitions"} & set(inp))
        if extra:
            raise JobError(f"{src}: input.{extra[0]} applies to SQL input only (files are "
                           "read in blocks already)")

    bounds: dict[str, Any] = {}
    fills: dict[str, Any] = {}
    kinds: dict[str, Any] = {}
    bounds_options: dict[str, Any] = {}
    for name, spec in cols.items():
        if not isinstance(spec, dict):
            raise JobError(f"{src}: columns.{name} must be a table with bounds")
        bad = sorted(set(spec) - COLUMN_KEYS)
        if bad:
            raise JobError(f"{src}: unknown key columns.{name}.{bad[0]} "
                           f"(allowed: {', '.join(sorted(COLUMN_KEYS))})")
        if "categories" in spec:  # a categorical column: its public list, no bounds
            bounds[name] = _categories(spec, name, src)
            if "fill" in spec:
                fills[name] = spec["fill"]
            continue
        kind = _column_kind(spec, name, src)
        if kind:
            kinds[name] = kind
        if "bounds" not in spec and kind.get("kind") == "boolean":
            spec = {**spec, "bounds": [0, 1]}  # public by type
        if "bounds" not in spec:
            raise JobError(f"{src}: columns.{name} has no bounds (public bounds are required)")
        options = _bounds_options(spec, name, src)
        if options:
            bounds_options[name] = options
        b = spec["bounds"]
        if b == "private":
            bounds[name] = "private"
        elif not (isinstance(b, list) and len(b) == 2):
            raise JobError(f'{src}: columns.{name}.bounds must be [lo, hi] or "private"')
        else:
            bounds[name] = tuple(b)
        if "fill" in spec:
            fills[name] = spec["fill"]
    if len(bounds) < 2:
        raise JobError(f"{src}: at least two columns are needed")
    kw["bounds"] = bounds
    kw["kinds"] = kinds
    kw["bounds_options"] = bounds_options

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
    if "bounds_share" in priv:
        kw["bounds_share"] = _typed(priv["bounds_share"], (int, float), "privacy.bounds_share",
                                    src, "a number between 0 and 1")
    if "statistics" in priv:
        from dpmic_dask.privacy.mechanisms.registry import check_statistics

        try:
            kw["statistics"] = check_statistics(priv["statistics"])
        except InvalidParameterError:
            raise JobError(f'{src}: privacy.statistics must be ["mic"] or ["mic", "tau"]') from None
    kw["nulls"] = priv.get("nulls", "raise")
    if "min_rows" in priv:
        kw["min_rows"] = _typed(priv["min_rows"], int, "privacy.min_rows", src,
                                "an integer (the public minimum of the rows kept)")
    if "unit" in priv:
        unit = priv["unit"]
        names = [unit] if isinstance(unit, str) else unit
        if not isinstance(names, list) or not names or not all(
                isinstance(n, str) and n for n in names):
            raise JobError(f"{src}: privacy.unit must be a column name or a list of names")
        kw["privacy_unit"] = tuple(names)
    if "max_rows_per_unit" in priv:
        kw["max_rows_per_unit"] = _typed(priv["max_rows_per_unit"], int,
                                         "privacy.max_rows_per_unit", src,
                                         "an integer >= 1 (the most rows used per unit)")
    if ("privacy_unit" in kw) != ("max_rows_per_unit" in kw):
        raise JobError(f"{src}: privacy.unit and privacy.max_rows_per_unit go together")
    if set(kw.get("privacy_unit", ())) & set(kw["bounds"]):
        raise JobError(f"{src}: the privacy unit column is never released: do not list it "
                       "in [columns]")
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
    kw.update(_select(_section(data, "select", src), src))
    if "causal" in data:
        from dpmic_dask.batch.jobcausal import parse_causal

        kw["causal"] = parse_causal(_section(data, "causal", src), src)
    if "task_memory" in cluster:
        kw["task_memory"] = _bytes(cluster["task_memory"], "cluster.task_memory", src)
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
    from dpmic_dask.batch.cluster import check_address, check_local_workers
    from dpmic_dask.batch.jobplan import job_release_plan
    from dpmic_dask.errors import DPMICError
    from dpmic_dask.privacy.accounting import ledger_from_url
    try:
        if job.mechanism == "mice-lap":
            raise InvalidParameterError("privacy.mechanism 'mice-lap' is in-memory only")
        job_release_plan(job, job_schema(job))
        if job.scheduler:
            check_address(job.scheduler)
        else:  # a local cluster: a worker count this machine can start
            check_local_workers(job.workers)
        ledger_from_url(job.ledger_url)  # URL shape only; nothing is opened
    except JobError:
        raise
    except DPMICError as exc:
        raise JobError(f"{job.source}: {exc}") from None
    return job
