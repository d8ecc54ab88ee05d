"""What a checked job (:mod:`dpmic_dask.jobs`) releases: its request, the
selection step of a ``[select]`` section, and the columns whose bounds are
estimated privately. The same translation serves ``dpmic validate`` (on a
schema in which every column is numeric) and ``dpmic run`` (on the input's).
"""

from __future__ import annotations

from .errors import InvalidParameterError
from .jobs import Job

#: Stands in for a private column's bounds while the rest of the job is checked.
PLACEHOLDER_BOUNDS = (-1e300, 1e300)


def private_columns(job: Job) -> list[str]:
    """Columns whose bounds the job estimates privately (``bounds = "private"``)."""
    return [name for name, b in job.bounds.items() if b == "private"]


def checked_bounds(job: Job) -> dict:
    """The job's bounds with a wide placeholder for private ones (checks only)."""
    return {name: PLACEHOLDER_BOUNDS if b == "private" else b for name, b in job.bounds.items()}


def job_request(job: Job, schema):
    """The checked release request of ``job`` against the input's ``schema``."""
    from .request import JobFileNames, pairwise_request

    return pairwise_request(schema, eps=job.eps, bounds=checked_bounds(job),
                            columns=list(job.bounds),
                            delta=job.delta, mechanism=job.mechanism, B=job.B, c=job.c,
                            nulls=job.nulls, fill=job.fill, label=job.name,
                            task_memory=job.task_memory, statistics=job.statistics,
                            names=JobFileNames())


def job_selection(job: Job) -> dict | None:
    """The ``[select]`` section as ``run_with_private_bounds``' ``select`` argument."""
    if job.select_rule is None:
        return None
    return {"rule": job.select_rule, "k": job.select_k, "threshold": job.select_threshold,
            "max_pairs": job.select_max_pairs, "share": job.select_share,
            "screen_B": job.screen_B, "B": job.B, "c": job.c, "task_memory": job.task_memory,
            "statistics": job.statistics}


def job_plan(job: Job, schema):
    """``(request, selection plan or None)`` of ``job`` against ``schema``: with a
    ``[select]`` section the budget is split between choosing and releasing."""
    if job.select_rule is None:
        return job_request(job, schema), None
    from .costs import measure_for
    from .request import JobFileNames
    from .selected import selection_request

    if job.mechanism not in ("auto", f"micr-{measure_for(job.delta).noise}"):
        raise InvalidParameterError(
            "with [select], privacy.mechanism must be auto: the release is micr-lap when "
            "delta = 0 and micr-gauss when delta > 0")
    return selection_request(
        schema, job.select_rule, eps=job.eps, delta=job.delta, share=job.select_share,
        k=job.select_k, threshold=job.select_threshold, max_pairs=job.select_max_pairs,
        bounds=checked_bounds(job), columns=list(job.bounds), B=job.B, c=job.c, nulls=job.nulls,
        fill=job.fill, label=job.name, task_memory=job.task_memory, names=JobFileNames(),
        screen_B=job.screen_B, statistics=job.statistics)


def job_cost(job: Job):
    """What one run of ``job`` is charged (no data read): the release, the total
    of a selection, or the whole ``eps`` (and ``delta``) with private bounds."""
    from .costs import measure_for
    from .request import numeric_schema

    if private_columns(job):
        return measure_for(job.delta).total(job.eps, job.delta)
    request, plan = job_plan(job, numeric_schema(job.bounds))
    return request.cost if plan is None else plan.total


def job_fingerprint(job: Job) -> str:
    """A hash of what one run of ``job`` releases and where it goes: the dataset,
    the input, the columns with their bounds and fills, the privacy parameters,
    the statistics, the selection and the output. Two job files that share a
    run key ``(dataset, name, run id)`` but differ in any of these have different
    fingerprints. The job's name, cluster and ledger are not part of it. Paths
    are made absolute (the same relative path from another folder is another
    input or output)."""
    import hashlib
    import json
    import os

    def local(path):
        return path if path is None or "://" in path else os.path.abspath(path)

    content = {
        "dataset": job.dataset,
        "input": {"paths": [local(p) for p in job.input_paths], "format": job.input_format,
                  "sql_url": job.sql_url, "sql_table": job.sql_table,
                  "sql_query": job.sql_query, "partition_column": job.partition_column,
                  "partition_bounds": job.partition_bounds, "partitions": job.partitions},
        "columns": {name: {"bounds": bounds, "fill": (job.fill or {}).get(name)}
                    for name, bounds in job.bounds.items()},
        "column_order": list(job.bounds),
        "privacy": {"eps": job.eps, "delta": job.delta, "mechanism": job.mechanism,
                    "B": job.B, "c": job.c, "nulls": job.nulls,
                    "bounds_share": job.bounds_share},
        "statistics": list(job.statistics),
        "select": job_selection(job),
        "output": {"path": local(job.output_path), "format": job.output_format,
                   "sql_url": job.output_sql_url, "sql_table": job.output_sql_table},
    }
    text = json.dumps(content, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
