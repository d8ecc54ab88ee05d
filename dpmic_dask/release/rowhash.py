"""A row's keyed priority for the per-unit bounding (:mod:`dpmic_dask.release.keeprows`)
and the one order of content that breaks ties among rows of equal priority.
Both are functions of the row alone (and the key): never of the other rows of
its partition, which hold other units' rows (``docs/privacy.md``, contribution
bounding)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from dpmic_dask.stats.timeticks import arrow_ticks, exact_seconds

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit finaliser (bijective): spreads a hash over all bits."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * _M1
        x = x ^ (x >> np.uint64(27))
        x = x * _M2
        return x ^ (x >> np.uint64(31))


#: Added between the chained hashes of a row's columns (2**64 / golden ratio).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: The hash of every missing value (a float NaN's), whatever column holds it.
_MISSING_HASH = pd.util.hash_array(np.array([np.nan]))[0]


def row_priority(frame: pd.DataFrame, content, key: tuple[int, int]) -> np.ndarray:
    """Each row's keyed priority: a hash of the row's own ``content`` columns (the
    unit's and the released ones), keyed by ``key``. A function of the row and the
    key only (:func:`value_hashes`); identical rows get the same priority (and are
    interchangeable)."""
    h = np.zeros(len(frame), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in content:  # the columns' hashes chained, in order
            h = _mix(h + _GOLDEN) ^ value_hashes(frame[name])
        return _mix(_mix(h ^ np.uint64(key[0])) + np.uint64(key[1]))


def value_hashes(column: pd.Series) -> np.ndarray:
    """A 64-bit hash of each value of ``column`` that depends on that value alone,
    never on the other values of the partition (other units' among them), nor on
    the dtype a partition happened to get:

    - a number or boolean hashes as its float64 value, whatever holds it (numpy,
      nullable or Arrow column, a categorical, an object column): an integer
      column with a missing value becomes floats in some partitions, and a
      categorical's values take the type of its partition's category list;
    - a date or time stamp hashes as its whole seconds and nanoseconds since the
      epoch (UTC), a duration as its own, whatever its unit, time zone or holder
      (numpy, Arrow, categorical, sparse): partitions of one column can differ
      in unit (``from_delayed`` checks no meta), and 2020-01-02 in seconds is
      2020-01-02 in nanoseconds;
    - text hashes as text; a missing value as a float NaN;
    - any other value in an object column (bytes, dates, Decimal, ...) as text
      naming its type. pandas hashes an object column through its distinct
      values, so values equal in Python (``1``, ``1.0``, ``True``) would take the
      hash of whichever came first.

    Values made equal here (``1`` and ``1.0``, integers past 2**53) only tie,
    and ties are broken by :func:`content_order`, a function of the rows alone."""
    sparse = column.dtype
    if isinstance(sparse, pd.SparseDtype):
        column = column.astype(sparse.subtype)
    if isinstance(column.dtype, pd.CategoricalDtype):
        # times keep their kind (a categorical of times hashes as the times do)
        kind = getattr(column.cat.categories.dtype, "kind", None)
        column = column.astype(column.cat.categories.dtype if kind in ("M", "m") else object)
    if column.dtype != object:
        if pd.api.types.is_bool_dtype(column.dtype) or pd.api.types.is_numeric_dtype(
                column.dtype):
            return pd.util.hash_array(column.to_numpy(dtype="float64", na_value=np.nan))
        if getattr(column.dtype, "kind", None) in ("M", "m"):
            return _time_hashes(column)
        out = pd.util.hash_pandas_object(column, index=False).to_numpy(np.uint64).copy()
        out[column.isna().to_numpy()] = _MISSING_HASH
        return out
    values = column.to_numpy(dtype=object)
    missing = pd.isna(values)
    out = np.full(len(values), _MISSING_HASH, dtype=np.uint64)
    if pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
        if not missing.all():
            out[~missing] = pd.util.hash_array(values[~missing])
        return out
    numbers = np.full(len(values), np.nan)
    text = np.empty(len(values), dtype=object)
    is_number = missing.copy()
    for i in np.flatnonzero(~missing):
        number = _as_number(values[i])
        if number is not None:
            numbers[i], is_number[i] = number, True
        else:
            text[i] = values[i] if isinstance(values[i], str) else "\x00" + _typed_text(values[i])
    out[is_number & ~missing] = pd.util.hash_array(numbers[is_number & ~missing])
    if not is_number.all():
        out[~is_number] = pd.util.hash_array(text[~is_number])
    return out


def _time_hashes(column: pd.Series) -> np.ndarray:
    """:func:`value_hashes` of a column of dates, time stamps or durations: each
    value as its whole seconds and nanoseconds since the epoch in UTC (or of the
    duration), exact in int64 for every unit
    (:func:`~dpmic_dask.stats.timeticks.exact_seconds`)."""
    ticks, unit, missing = arrow_ticks(pa.Array.from_pandas(column))
    seconds, nanos = exact_seconds(ticks, unit)
    with np.errstate(over="ignore"):
        out = _mix(pd.util.hash_array(seconds) + _GOLDEN) ^ pd.util.hash_array(nanos)
    out[missing] = _MISSING_HASH
    return out


def _as_number(value) -> float | None:
    """A number's or boolean's float64 value, else ``None``."""
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        try:
            return float(value)
        except OverflowError:  # an integer past the float range: hashed as text
            return None
    return None


def content_order(frame: pd.DataFrame, columns) -> np.ndarray:
    """The positions of ``frame``'s rows sorted by ``columns`` (stable, missing
    last) in a total order that never compares values of different Python types:
    an object column's values are sorted as text naming their type and ``repr``
    (text and bytes, numbers and dates in one column would otherwise fail the
    sort, and only for the rows a key happens to tie). Rows of equal priority
    are identical rows or a 64-bit collision: any fixed order of their content
    serves, as long as every path uses this one."""
    keys = pd.DataFrame({f"k{i}": _sortable(frame[c]).reset_index(drop=True)
                         for i, c in enumerate(columns)})
    return keys.sort_values(list(keys.columns), kind="stable",
                            na_position="last").index.to_numpy()


def _sortable(column: pd.Series) -> pd.Series:
    if column.dtype != object:
        return column
    return column.map(_typed_text, na_action="ignore")


def _typed_text(value) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}:{value!r}"
