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
    #                                      # a cast: epoch numbers as times (unit
    #                                      #   required: s, ms, us, ns, D...; strings
    #                                      #   need none)
    # churned = { kind = "boolean" }       # booleans: bounds (0, 1) implied
    # region = { categories = ["north", "south", "east"] }  # categorical: a public list
    # plan = { categories = { private = ["basic", "plus", "pro"] } }  # chosen privately
    # city = { categories = "private" }  # chosen from the values that occur (delta > 0)

    [privacy]
    eps = 1.0                              # also: delta, mechanism, B, c, nulls,
                                           # statistics = ["mic", "tau_a"]
    # nulls = "drop"                       # drop rows with a null (listwise), with
    # min_rows = 50000                     #   a public minimum of the rows kept

    [output]
    path = "results/"                      # a folder (Parquet or CSV), or sql_url + sql_table
                                           # (+ timeout, seconds to connect, default 30)

    [cluster]
    scheduler = "tcp://scheduler:8786"     # default: $DASK_SCHEDULER_ADDRESS, else a local cluster
    timeout = 30                           # seconds for the scheduler to answer (default
                                           #   30), or for a local cluster's workers to
                                           #   start (default 120)
    # workers = 2                          # local cluster: 1 to 4 per CPU core
    task_memory = "256 MiB"                # counts and input one task holds (sets block sizes)
    # memory_limit = "4 GiB"               # local cluster: each worker's (default: Dask's)
    [ledger]
    url = "sqlite:///ledger.db"            # default: $DPMIC_LEDGER, else sqlite:///dpmic-ledger.db

    [bounds]                               # optional: check the public bounds privately
    check = 0.05                           #   with this share of eps (same charge)

    [select]                               # optional: release only privately chosen pairs
    top_k = 10                             # the 10 strongest (or: threshold = 0.3 with
    share = 0.5                            #   max_pairs = 20); share of eps for choosing
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from dpmic_dask.batch.cluster import check_address, check_local_workers
from dpmic_dask.batch.jobcausal import parse_causal
from dpmic_dask.batch.jobfile import JobError, read_job_file
from dpmic_dask.batch.jobmodel import COLUMN_KEYS, FORMATS, SECTIONS, Job, job_schema
from dpmic_dask.batch.jobparts import (
    _bounds_options,
    _bytes,
    _categories,
    _column_kind,
    _seconds,
    _section,
    _select,
    _sql_partitions,
    _typed,
)
from dpmic_dask.batch.jobplan import bounds_section, job_release_plan
from dpmic_dask.errors import DPMICError, InvalidParameterError
from dpmic_dask.privacy.accounting import ledger_from_url
from dpmic_dask.privacy.mechanisms.registry import (
    check_statistics,
    deprecated_spellings,
    deprecation_message,
)


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
            raise JobError(f"{src}: columns.{name} has no bounds (public bounds are "
                           'required; a boolean column takes kind = "boolean" instead, '
                           "its bounds (0, 1) public by type)")
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
        try:
            kw["statistics"] = check_statistics(priv["statistics"])
        except InvalidParameterError:
            raise JobError(
                f'{src}: privacy.statistics must be ["mic"] or ["mic", "tau_a"]') from None
        for old in deprecated_spellings(priv["statistics"]):
            warnings.warn(deprecation_message(old, f"{src}: privacy.statistics"), FutureWarning,
                          stacklevel=2)
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
    if "bounds" in data:
        kw.update(bounds_section(_section(data, "bounds", src), src))
    if "causal" in data:
        kw["causal"] = parse_causal(_section(data, "causal", src), src)
    if "task_memory" in cluster:
        kw["task_memory"] = _bytes(cluster["task_memory"], "cluster.task_memory", src)
    if "memory_limit" in cluster:
        if "scheduler" in cluster:
            raise JobError(f"{src}: cluster.memory_limit sizes the workers of a local "
                           "cluster; a scheduler's workers have their own (leave it out)")
        kw["memory_limit"] = _bytes(cluster["memory_limit"], "cluster.memory_limit", src)
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
