"""How a column meets a public category list, by a rule fixed before any data
is read: what class of dtype it is (:func:`column_kind`, :func:`needs_categories`)
and the position of every value in the list (:func:`listed_codes`). The category
kind and the coding built on these are :mod:`dpmic_dask.stats.categories`.
"""

from __future__ import annotations

import numbers
from functools import lru_cache

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from dpmic_dask.errors import InvalidDataError
from dpmic_dask.stats.kindbase import is_decimal


def _is_string_dtype(dtype) -> bool:
    if isinstance(dtype, pd.CategoricalDtype):
        return False
    try:
        return bool(pd.api.types.is_string_dtype(dtype))
    except TypeError:  # pragma: no cover - exotic dtypes
        return False


def _is_object_dtype(dtype) -> bool:
    """A NumPy ``object`` column (any Python objects), not a pandas string dtype."""
    return isinstance(dtype, np.dtype) and dtype.kind == "O"


def column_kind(dtype) -> str:
    """``"category"`` (a pandas ``category`` dtype), ``"string"`` (str, pyarrow or
    Python strings, ``object``), ``"integer"``, or ``"other"`` (floats, pyarrow
    decimals, times...) -- from the dtype only.

    pandas gives kind ``"O"`` to Arrow types that hold no text (bytes, times of
    day, lists, structs, intervals, nulls) and to periods and intervals; none of
    their values can equal a listed string, so a category list would put every
    row in the "other" bin: they are ``"other"``."""
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if is_decimal(dtype):  # kind "O", like strings, but numbers
        return "other"
    if isinstance(dtype, pd.ArrowDtype):
        held = dtype.pyarrow_dtype
        if pa.types.is_dictionary(held):
            held = held.value_type
        if pa.types.is_string(held) or pa.types.is_large_string(held) or (
                hasattr(pa.types, "is_string_view") and pa.types.is_string_view(held)):
            return "string"
        return "integer" if pa.types.is_integer(held) else "other"
    if isinstance(dtype, (pd.PeriodDtype, pd.IntervalDtype)):
        return "other"
    kind = getattr(dtype, "kind", "O")
    if kind == "O" or _is_string_dtype(dtype):
        return "string"
    if kind in "iu" and not pd.api.types.is_bool_dtype(dtype):
        return "integer"
    return "other"


#: What Dask's schema holds for the categories of a ``category`` column it has
#: not read (``dask.dataframe.utils.UNKNOWN_CATEGORIES``).
UNKNOWN_CATEGORIES = "__UNKNOWN_CATEGORIES__"


def categories_kind(dtype: pd.CategoricalDtype) -> str:
    """``"integer"``, ``"string"``, ``"other"``, or ``"unknown"`` (a Dask schema's
    categories: their type is checked when each partition is coded): what a
    ``category`` dtype's categories are."""
    categories = dtype.categories
    if categories is None:
        return "string"
    if len(categories) == 1 and categories[0] == UNKNOWN_CATEGORIES:
        return "unknown"  # a Dask schema's: integers or text, checked when coded
    inner = categories.dtype
    if pd.api.types.is_integer_dtype(inner) and not pd.api.types.is_bool_dtype(inner):
        return "integer"
    if getattr(inner, "kind", "") == "O" or pd.api.types.is_string_dtype(inner):
        return "string"
    return "other"


def needs_categories(dtype) -> bool:
    """Whether a column of this dtype can only be used with a category list
    (strings, objects and pandas ``category`` columns)."""
    return column_kind(dtype) in ("category", "string")


#: What :func:`pandas.api.types.infer_dtype` may say of an ``object`` column's
#: distinct values for a category list to be able to equal them: text, integers.
LISTABLE = {"string", "integer", "mixed-integer", "empty"}

#: :func:`listed_codes` of a value that is not listed, and of a missing value.
NOT_LISTED, MISSING = -1, -2


def listed_codes(series: pd.Series, categories: tuple, *, strict: bool = False) -> np.ndarray:
    """int64 position of every value in ``categories``; :data:`NOT_LISTED` (-1) for
    a value that is not listed, :data:`MISSING` (-2) for a null (None, NaN, NA).

    Every branch computes the same per-row function -- equality with a listed
    category -- only faster for some dtypes: a ``category`` column looks its
    dtype's categories up in the list once and maps its integer codes (the
    dtype's categories serve as a table, never as a list); pyarrow strings use
    Arrow's hash look-up; ``object`` columns factorize first, then look up the
    distinct values. ``strict`` (a public list, coded before the charge): an
    ``object`` column holding no value of the list's type is refused."""
    index = _index(categories)
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        # a part without values (empty, or nulls only) codes every row as missing
        # whatever its dtype's categories: only parts with values can be refused (a
        # list chosen after the charge is checked, before it, on those parts alone)
        if len(dtype.categories) and series.notna().any() \
                and not _can_equal(dtype.categories, categories):
            # a Dask column's categories are known only here (its schema says
            # "unknown"): integer categories against a text list, or the reverse
            raise InvalidDataError(
                f"column {series.name!r} (dtype category) has categories of another type "
                "than its list (integers against text, or text against integers), so no "
                "listed category can equal them; list them as they are")
        per_category = index.get_indexer(dtype.categories)
        codes = series.cat.codes.to_numpy().astype(np.int64)  # -1: missing
        return np.where(codes >= 0, per_category[np.maximum(codes, 0)], MISSING)
    array = series.array
    if hasattr(array, "__arrow_array__") and all(isinstance(c, str) for c in categories):
        data = array.__arrow_array__()
        if pa.types.is_string(data.type) or pa.types.is_large_string(data.type):
            found = pc.index_in(data, value_set=pa.array(list(categories), type=data.type))
            codes = np.asarray(pc.fill_null(found, NOT_LISTED).to_numpy(zero_copy_only=False),
                               dtype=np.int64)
            null = np.asarray(data.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            codes[null] = MISSING
            return codes
    if _is_object_dtype(dtype):
        codes, uniques = pd.factorize(series, use_na_sentinel=True)  # -1: missing
        if not _any_listable(uniques):
            # dates, floats, bytes... can never equal a listed text or integer: every
            # row would fall in "other" (a Dask frame would have turned them into text);
            # a text column with a few stray values is not refused (those are "other")
            raise InvalidDataError(
                f"column {series.name!r} (dtype object) holds values that are neither text "
                "nor integers, which no listed category can equal; convert it to text "
                "first (dates as ISO text: s.map(lambda d: d.isoformat()))")
        if strict and not _any_of_the_lists_type(uniques, categories):
            # integers only against a list of text (or text against integers): the
            # same: every row would fall in "other" (released as independent)
            # checked a part (partition) at a time, in the pass before the charge: a
            # column mixing both types may be refused for a part holding only one
            raise InvalidDataError(
                f"column {series.name!r} (dtype object) holds no value of its list's type "
                "(integers against a list of text, or text against a list of integers) in "
                "a part of the table, so no listed category can equal one there; list the "
                "values as they are, or convert the column to one type (text: "
                "s.astype(str))")
        per_value = index.get_indexer(uniques)
        found = np.where(codes >= 0, per_value[np.maximum(codes, 0)], MISSING).astype(np.int64)
        if pd.api.types.infer_dtype(uniques, skipna=True) not in ("string", "integer"):
            # a value equals a listed category only if it is of its type: True (== 1,
            # and factorized with it) and 2.0 are not the integers 1 and 2, nor is any
            # of them a text; looked at row by row in columns of mixed types only
            other = ~np.fromiter((_of_a_listed_type(v, categories) for v in series),
                                 dtype=bool, count=len(series))
            found[other & (found >= 0)] = NOT_LISTED
        return found
    codes = index.get_indexer(series).astype(np.int64)  # type: ignore[arg-type]
    codes[series.isna().to_numpy(dtype=bool)] = MISSING
    return codes


def _any_listable(uniques) -> bool:
    """Whether some of ``uniques`` (an object column's distinct values) is text or
    an integer, which a listed category can equal (none: an empty column)."""
    if len(uniques) == 0 or pd.api.types.infer_dtype(uniques, skipna=True) in LISTABLE:
        return True
    return any(isinstance(v, str) or (isinstance(v, (int, np.integer))
                                      and not isinstance(v, (bool, np.bool_)))
               for v in uniques)


def is_whole(value) -> bool:
    """An integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def listed_value(value, listed):
    """The category of ``listed`` that ``value`` names, or ``None``: text equals
    text, an integer (Python or NumPy) equals an integer; a float, a bool or any
    other type names no category, even where ``==`` would say equal."""
    for category in listed:
        if isinstance(value, str) and isinstance(category, str) and value == category:
            return category
        if is_whole(value) and is_whole(category) and int(value) == int(category):
            return category
    return None


def _any_of_the_lists_type(uniques, listed: tuple) -> bool:
    """Whether some of ``uniques`` (an object column's distinct values) is of a type
    a ``listed`` category has: text for text, an integer for an integer."""
    kind = pd.api.types.infer_dtype(uniques, skipna=True)
    text = any(isinstance(c, str) for c in listed)
    whole = any(is_whole(c) for c in listed)
    if len(uniques) == 0 or kind == "empty":
        return True
    if kind == "string":
        return text
    if kind == "integer":
        return whole
    return any((text and isinstance(v, str)) or (whole and is_whole(v)) for v in uniques)


def _of_a_listed_type(value, listed: tuple) -> bool:
    """Whether ``value`` is of a type a listed category has (text for text; an
    integer, not a bool, for an integer)."""
    if isinstance(value, str):
        return any(isinstance(c, str) for c in listed)
    return is_whole(value) and any(is_whole(c) for c in listed)


def _can_equal(present: pd.Index, listed: tuple) -> bool:
    """Whether a category dtype's ``present`` categories can equal a ``listed``
    one: text with text, integers with integers (from the types alone)."""
    kind = pd.api.types.infer_dtype(present, skipna=True)
    if all(isinstance(c, str) for c in listed):
        return kind in ("string", "mixed", "mixed-integer")
    if all(isinstance(c, (int, np.integer)) for c in listed):
        return kind in ("integer", "mixed-integer", "mixed", "mixed-integer-float")
    return True


@lru_cache(maxsize=256)
def _index(categories: tuple) -> pd.Index:
    return pd.Index(list(categories), dtype=object)
