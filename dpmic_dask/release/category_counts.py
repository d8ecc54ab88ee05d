"""The one pass of a choice of categories: per partition, each private column's
counts, the row count and the missing flags, merged by adding.

A column chosen from public candidates arrives as candidate codes and is
counted with ``bincount``. A column chosen from the values that occur arrives
raw: its values are counted as exact Python ``str`` or ``int`` (one type per
column, so values of different types that Python calls equal are never one
value), merged in a dictionary, and, before the charge, sorted and capped at
:data:`MAX_DISTINCT` (``docs/privacy.md``, "Categories from the values that
occur"). Anything else is refused naming the column and a type, never a value.
"""

from __future__ import annotations

import numbers
from collections import Counter

import numpy as np
import pandas as pd

from dpmic_dask.errors import InvalidDataError
from dpmic_dask.stats.categories import column_kind
from dpmic_dask.stats.counting import column_values

#: The most distinct values such a column may hold (refused before the charge).
MAX_DISTINCT = 1_000_000


def first_pass(frame, *, columns, private, codes, fill, unknown=(), null_category=()):
    """One partition: each private column's code histogram (a column chosen from
    the values that occur: the count of each value that occurs, as a Series), the
    row count, and every column's missing flag (every other column converted: a
    cell that is not a number is refused here, before the charge)."""
    hist = []
    for c in private:
        hist.append(None if c in unknown else np.zeros(codes[c], dtype=np.int64))
    missing = np.zeros(len(columns), dtype=bool)
    for k, name in enumerate(columns):
        if name in unknown:
            series = frame[name]
            nulls = series.isna()
            missing[k] = bool(nulls.any()) and name not in null_category
            hist[private.index(name)] = value_counts(series[~nulls], name)
            continue
        v = column_values(frame, name)
        nan = np.isnan(v)
        if nan.any():
            missing[k] = True
            v = v[~nan] if fill is None else np.where(nan, fill[k], v)
        if name in private:
            at = private.index(name)
            hist[at] += np.bincount(np.floor(v).astype(np.int64), minlength=codes[name])
    return hist, len(frame), missing


def value_counts(series: pd.Series, name: str) -> Counter:
    """How many times each value occurs, keyed by the value as a Python ``str``
    (string, object and ``category`` columns) or ``int`` (integer columns):
    one exact type per column, so values of different types that Python deems
    equal (``1``, ``1.0``, ``True``) can never be counted as one. Any other
    value is refused, naming the column and the value's type (never the value),
    before the charge. Values that do not occur are not listed, whatever a
    ``category`` dtype's own categories say."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        used = np.bincount(series.cat.codes.to_numpy().astype(np.int64), minlength=len(
            dtype.categories))
        labels = dtype.categories
        exact = _exact_values(pd.Series(labels[used > 0], dtype=object), name)
        return Counter(dict(zip(exact, used[used > 0].tolist())))
    kind = column_kind(dtype)
    if kind == "integer" or (kind == "string" and not _is_object(dtype)):
        typed = int if kind == "integer" else str  # the dtype holds one type only
    else:  # object: every value's type is checked (a fast scan; values only on refusal)
        inferred = pd.api.types.infer_dtype(series, skipna=False)
        if inferred not in ("string", "integer", "empty"):
            _exact_values(series.to_numpy(dtype=object), name)  # names the type
            raise InvalidDataError(  # pragma: no cover - the line above refuses
                f"column {name!r} holds values that are not all strings or all integers")
        typed = int if inferred == "integer" else str
    counts = series.value_counts(sort=False, dropna=True)
    return Counter(dict(zip((typed(v) for v in counts.index), counts.to_numpy().tolist())))


def _is_object(dtype) -> bool:
    return getattr(dtype, "kind", None) == "O" and not isinstance(dtype, pd.StringDtype)


def _exact_values(values, name: str) -> list:
    """``values`` (no nulls) as Python ``str`` or ``int``, all of one type, or
    :class:`InvalidDataError` naming the column and the first other type."""
    out: list = []
    kinds: set = set()
    for v in values:
        if isinstance(v, str):
            out.append(str(v))
            kinds.add(str)
        elif isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
            out.append(int(v))
            kinds.add(int)
        else:
            raise InvalidDataError(
                f"column {name!r} holds a value of type {type(v).__name__}: categories chosen "
                "from the values that occur must be all strings or all integers (nothing was "
                "charged)")
        if len(kinds) > 1:
            raise InvalidDataError(
                f"column {name!r} mixes strings and integers: categories chosen from the "
                "values that occur must be all of one type (nothing was charged)")
    return out


def _merge(x, y):
    if isinstance(x, Counter):
        kinds = {type(next(iter(c))) for c in (x, y) if c}
        if len(kinds) > 1:
            raise InvalidDataError("a column mixes strings and integers across partitions: "
                                   "categories chosen from the values that occur must be all "
                                   "of one type (nothing was charged)")
        both = Counter(x)
        both.update(y)
        return both
    return x + y


def add_passes(a, b):
    """Two partitions' :func:`first_pass` results added (the tree's merge)."""
    return [_merge(x, y) for x, y in zip(a[0], b[0])], a[1] + b[1], a[2] | b[2]


def occurring(name: str, counts: Counter) -> tuple[list, np.ndarray]:
    """The values that occur in their natural order (all strings or all integers)
    and their counts; refuses more than :data:`MAX_DISTINCT` of them (before the
    charge: the noise after it is one draw per value)."""
    if len(counts) > MAX_DISTINCT:
        raise InvalidDataError(
            f"column {name!r} has more than {MAX_DISTINCT:,} distinct values: too many to "
            "choose categories from the values that occur; give public candidates instead "
            "(nothing was charged)")
    values = sorted(counts)
    return values, np.array([counts[v] for v in values], dtype=np.int64)


__all__ = ["MAX_DISTINCT", "add_passes", "first_pass", "occurring", "value_counts"]
