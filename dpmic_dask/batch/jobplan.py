"""What a checked job (:mod:`dpmic_dask.batch.jobs`) releases: its release plan
(:func:`dpmic_dask.release.plan.plan_release`: private bounds, the ``[select]`` step,
the values) and its cost. The same translation serves ``dpmic validate`` (on a
schema in which every column is numeric) and ``dpmic run`` (on the input's).
"""

from __future__ import annotations

import hashlib
import json
import os

from dpmic_dask.batch.jobcausal import causal_plan
from dpmic_dask.batch.jobfile import JobError
from dpmic_dask.batch.jobmodel import Job, job_schema
from dpmic_dask.config import resolve
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.mechanisms.registry import auto_mechanism
from dpmic_dask.release.request import JobFileNames
from dpmic_dask.release.unitplan import plan_unit_release


def private_columns(job: Job) -> list[str]:
    """Columns whose bounds the job estimates privately (``bounds = "private"``)."""
    return [name for name, b in job.bounds.items() if b == "private"]


def job_release_plan(job: Job, schema):
    """The :class:`~dpmic_dask.release.plan.ReleasePlan` of ``job`` against ``schema``
    (messages spell the job file's keys): its private-bounds step, its
    ``[select]`` step, its values. Nothing is read."""
    if job.causal is not None:  # [causal]: the causal release's checks and charge
        if job.bounds_check not in (None, False, "auto"):
            raise InvalidParameterError("bounds.check is not available with [causal]")

        return causal_plan(job, schema)

    select = None
    if job.select_rule is not None:
        if job.mechanism not in ("auto", auto_mechanism(job.delta)):
            raise InvalidParameterError(
                "with [select], privacy.mechanism must be auto: the release is micr-lap when "
                "delta = 0 and micr-gauss when delta > 0")
        options = {"k": job.select_k, "threshold": job.select_threshold,
                   "max_pairs": job.select_max_pairs}
        select = {"rule": job.select_rule, "share": job.select_share,
                  "screen_B": job.screen_B,
                  **{key: value for key, value in options.items() if value is not None}}
    private: dict = {"bounds_share": job.bounds_share} if private_columns(job) else {}
    for key in ("domain", "coverage", "refine"):  # per-column private-bounds knobs
        values = {c: o[key] for c, o in job.bounds_options.items() if key in o}
        if values:
            private[key] = values
    categories = {c: b["categories"] for c, b in job.bounds.items() if isinstance(b, dict)}
    if categories:  # categorical columns: their lists, not bounds
        private["categories"] = categories
    bounds = {c: b for c, b in job.bounds.items() if not isinstance(b, dict)}
    # [bounds] check: a private check of public bounds ("auto" when absent)
    private["bounds_check"] = "auto" if job.bounds_check is None else job.bounds_check
    if job.privacy_unit is not None:  # per unit: bounding and a private row count first
        private["privacy_unit"] = list(job.privacy_unit)
        private["max_rows_per_unit"] = job.max_rows_per_unit
    return plan_unit_release(schema, job.eps, bounds=bounds, columns=list(job.bounds),
                        delta=job.delta, mechanism=job.mechanism, select=select,
                        nulls=job.nulls, fill=job.fill, label=job.name,
                        statistics=job.statistics, B=job.B, c=job.c,
                        task_memory=job.task_memory, names=JobFileNames(),
                        kinds=dict(job.kinds) or None, min_rows=job.min_rows, **private)


def bounds_section(section: dict, src: str) -> dict:
    """The optional ``[bounds]`` section: ``check``, the share of ``privacy.eps``
    spent on a private check of the public bounds (a number in (0, 1)), ``"auto"``
    (the default when absent: a small share where the check can speak), or
    ``false`` (off)."""
    if "check" not in section:
        return {}
    share = section["check"]
    if share is False or share == "auto":
        return {"bounds_check": share}
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise JobError(f"{src}: bounds.check must be a number between 0 and 1 (exclusive): "
                       "the share of privacy.eps spent on checking the public bounds, e.g. "
                       "0.05; or \"auto\" (the default), or false (off)")
    return {"bounds_check": float(share)}


def job_cost(job: Job):
    """What one run of ``job`` is charged (no data read): its plan's one charge."""
    return job_release_plan(job, job_schema(job)).cost


def job_selection(job: Job, legacy: bool = False) -> dict | None:
    """The ``[select]`` section as one dict (part of the job's fingerprint).
    ``legacy``: with the task memory in force, as fingerprints held it before
    (a sizing knob, read from the environment too: it changes no value)."""
    if job.select_rule is None:
        return None
    out = {"rule": job.select_rule, "k": job.select_k, "threshold": job.select_threshold,
           "max_pairs": job.select_max_pairs, "share": job.select_share,
           "screen_B": job.screen_B, "B": job.B, "c": job.c, "statistics": job.statistics}
    if legacy:
        out["task_memory"] = resolve("task_memory", job.task_memory)
    return out


def job_fingerprints(job: Job) -> tuple[str, ...]:
    """The fingerprints a journaled run of ``job`` may hold: today's; the older
    form, of the values as written and the output (runs charged before numbers
    were read by value and the output left out); and for a ``[select]`` job both
    with the task memory in force (runs charged before it was left out)."""
    found = [job_fingerprint(job), job_fingerprint(job, older=True)]
    if job.select_rule is not None:
        found += [job_fingerprint(job, legacy=True),
                  job_fingerprint(job, legacy=True, older=True)]
    if job.bounds_check == "auto":  # runs charged when a written default counted
        found += [job_fingerprint(job, legacy=legacy, older=older, auto_written=True)
                  for legacy in (False, True) for older in (False, True)]
    return tuple(dict.fromkeys(found))


def _by_value(content):
    """``content`` with every integer (not a bool) a double holds exactly as the
    float it equals: ``eps = 1`` and ``eps = 1.0`` in a job file are one release
    (a larger integer stays one: 2**53 + 1 is not 2**53)."""
    if isinstance(content, dict):
        return {key: _by_value(value) for key, value in content.items()}
    if isinstance(content, (list, tuple)):
        return [_by_value(value) for value in content]
    if isinstance(content, int) and not isinstance(content, bool) and abs(content) <= 2**53:
        return float(content)
    return content


def job_fingerprint(job: Job, legacy: bool = False, older: bool = False,
                    auto_written: bool = False) -> str:
    """A hash of what one run of ``job`` releases: the dataset, the input, the
    columns with their bounds and fills, the privacy parameters, the statistics
    and the selection, numbers by value (``1`` and ``1.0`` alike). Two job files
    that share a run key ``(dataset, name, run id)`` but differ in any of these
    have different fingerprints. The job's name, cluster, ledger and output are
    not part of it (an output moved after a lost disk still delivers the run's
    kept values). Paths are made absolute (the same relative path from another
    folder is another input). ``older``: the form runs were charged with before
    (numbers as written, and the output)."""
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
                    "bounds_share": job.bounds_share,
                    **({"unit": list(job.privacy_unit),
                        "max_rows_per_unit": job.max_rows_per_unit}
                       if job.privacy_unit is not None else {})},
        "statistics": list(job.statistics),
        "select": job_selection(job, legacy),
    }
    if older:
        content["output"] = {"path": local(job.output_path), "format": job.output_format,
                             "sql_url": job.output_sql_url, "sql_table": job.output_sql_table}
    if job.causal is not None:  # absent: fingerprints of older jobs unchanged
        content["causal"] = job.causal
    if job.bounds_options:  # absent: fingerprints of older jobs unchanged
        content["bounds_options"] = job.bounds_options
    # absent: fingerprints of older jobs unchanged; "auto" written is the default
    # (``auto_written``: as runs charged before that was so count it)
    if job.bounds_check not in (None, "auto") or (auto_written and job.bounds_check):
        content["bounds"] = {"check": job.bounds_check}
    if job.kinds or job.min_rows is not None:  # absent: fingerprints of older jobs unchanged
        content["kinds"] = {"columns": job.kinds, "min_rows": job.min_rows}
    text = json.dumps(content if older else _by_value(content), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
