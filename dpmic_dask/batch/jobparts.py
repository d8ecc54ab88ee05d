"""Reading the parts of a job file, each checked on its own: a section, a typed
value, seconds and bytes, the SQL input's partitions, a column's kind,
categories and private-bounds options, and the ``[select]`` section, for
:func:`dpmic_dask.batch.jobs.load_job`. Every problem is one line naming the
key, never a data value.
"""

from __future__ import annotations

import math
from typing import Any

from dask.utils import parse_bytes

from dpmic_dask.batch.jobfile import JobError
from dpmic_dask.batch.jobmodel import JOB_KINDS, SECTIONS
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.bounds import check_coverage, check_domain
from dpmic_dask.release.boundsspec import check_refine
from dpmic_dask.stats.timekind import UNITS


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


def _bytes(value, key, src) -> int:
    """A size in bytes: an integer, or a string with a unit ("256 MiB", "1GB")."""
    if isinstance(value, str):
        try:
            value = parse_bytes(value)
        except (ValueError, TypeError):
            raise JobError(f"{src}: {key} must be a size such as \"256 MiB\"") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 2**20 <= value <= 2**40:
        raise JobError(f"{src}: {key} must be a size from 1 MiB to 1 TiB")
    return value


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
    or numbers), as ``{"kind": ..., "unit": ...}``; ``{}`` when none is named.
    Numbers need their ``unit``: an input column of numbers cast to a time kind
    without one is refused from its schema (``dpmic validate --schema``, ``run``)."""
    if "kind" not in spec:
        if "unit" in spec:
            raise JobError(f"{src}: columns.{name}.unit needs columns.{name}.kind")
        return {}
    kind = spec["kind"]
    if kind not in JOB_KINDS:
        raise JobError(f"{src}: columns.{name}.kind must be one of {', '.join(JOB_KINDS)}")
    out = {"kind": kind}
    if "unit" in spec:
        if kind not in ("timestamp", "date", "timedelta") or spec["unit"] not in UNITS:
            raise JobError(f"{src}: columns.{name}.unit must be one of {', '.join(UNITS)} "
                           "(for a timestamp, date or timedelta kind)")
        out["unit"] = spec["unit"]
    return out


def _categories(spec: dict, name: str, src: str) -> dict:
    """``columns.<name>.categories``: a public list (``["north", "south"]``),
    ``{ private = [candidates] }`` or ``"private"`` (from the values that occur);
    kept in ``Job.bounds`` as ``{"categories": ...}`` (the column's bounds come
    from the list; see :mod:`dpmic_dask.stats.categories`)."""
    others = sorted(set(spec) - {"categories", "fill"})
    if others:
        raise JobError(f"{src}: columns.{name}.{others[0]} does not apply to a categorical "
                       "column (its bounds come from its categories)")
    listed = spec["categories"]
    if listed == "private":  # chosen from the values that occur (needs delta > 0)
        return {"categories": "private"}
    if isinstance(listed, dict):
        if set(listed) != {"private"} or not isinstance(listed["private"], list):
            raise JobError(f"{src}: columns.{name}.categories must be a list, "
                           '{ private = [candidates] } or "private"')
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
