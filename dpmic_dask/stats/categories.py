"""The category kind: a column whose values are names from a public list.

A categorical column is mapped, row by row and by a rule fixed before any data
is read, to integer *codes*:

* the ``j``-th listed category has code ``j`` (``j = 0 .. L-1``);
* with ``nulls="category"`` a missing value has code ``L`` (a category of its own);
* every other value -- one not in the list -- has the last code, ``K - 1``: one
  "other" bin, always present whether or not any value lands in it.

``K`` (the number of codes) and ``k`` (the listed categories plus the null
category: what the statistic's normaliser counts) depend on the list and the
policy only. Codes are counted as the numbers ``code + 0.5`` inside the public
bounds ``(0, K)``, so that the engine's exact binning puts each code in its own
bin of every range equipartition of at least ``K`` bins
(:func:`code_bins`); the statistic with a categorical axis is read off those bins
(:mod:`dpmic_dask.stats.statistics.categorical`).

Categories that pandas infers from the data (a ``category`` dtype's own
categories, ``astype("category")``, the distinct values of a string column) are
data and are never used: a categorical column must come with a list
(:func:`check_categories`), or with ``"private"`` and a public candidate list
released through :mod:`dpmic_dask.privacy.partition_selection`.

How a dtype is classed and how values are looked up in a list
(:func:`column_kind`, :func:`listed_codes`) is
:mod:`dpmic_dask.stats.categorycodes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from dpmic_dask.checks import is_one_fill, missing_fill_message
from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.stats.categorycodes import (
    MISSING,
    NOT_LISTED,
    _is_object_dtype,
    _is_string_dtype,
    categories_kind,
    column_kind,
    is_whole,
    listed_codes,
    listed_value,
    needs_categories,
)
from dpmic_dask.stats.counting import bins as equipartition
from dpmic_dask.stats.kindbase import ColumnKind, parses_as_time
from dpmic_dask.stats.kinds import read_as_ordered, register_kind

#: How ``categories`` asks for a privately chosen list.
PRIVATE = "private"

#: Most categories one column may list (a table has ``K`` columns per pair; the
#: grid budget ``B`` limits it further, see ``docs/statistics.md``).
MAX_CATEGORIES = 10_000


@dataclass(frozen=True)
class CategoryAxis:
    """One categorical column's public coding.

    Attributes
    ----------
    name : the column.
    categories : the public list, in code order.
    null_category : whether a missing value is a category of its own
        (``nulls="category"``).
    fill : the listed category that missing values become (``nulls="fill"``),
        or ``None``.
    strict : a public list, given before the charge and coded in the pass before
        it: an ``object`` column holding no value of the list's type is refused
        (a list chosen privately, after the charge, never refuses).
    """

    name: str
    categories: tuple
    null_category: bool = False
    fill: object = None
    strict: bool = False

    @property
    def codes(self) -> int:
        """``K``: listed categories, the null category if any, and "other"."""
        return len(self.categories) + int(self.null_category) + 1

    @property
    def cells(self) -> int:
        """``k``: the categories the statistic normalises by (listed, plus null; at
        least 2, so that a privately chosen list of one category or none still
        has a normaliser: the table then has at most two non-empty columns)."""
        return max(2, len(self.categories) + int(self.null_category))

    @property
    def other_code(self) -> int:
        return self.codes - 1

    @property
    def null_code(self) -> int | None:
        return len(self.categories) if self.null_category else None

    @property
    def bounds(self) -> tuple[float, float]:
        """The public bounds codes are counted in: ``(0, K)``."""
        return 0.0, float(self.codes)

    @property
    def fill_value(self) -> float | None:
        """The number a missing value is replaced by under ``nulls="fill"``."""
        if self.fill is None:
            return None
        return self.categories.index(self.fill) + 0.5

    def labels(self) -> tuple[str, ...]:
        """Every code's label, for reports (``"<null>"``, ``"<other>"``)."""
        extra = ("<null>",) if self.null_category else ()
        return tuple(str(c) for c in self.categories) + extra + ("<other>",)

    def encode(self, values) -> np.ndarray:
        """float64 ``code + 0.5`` of every value; NaN for a missing value unless
        missing values are a category. A per-row map fixed by the list alone.
        A value that cannot be looked up (unhashable, or failing to compare) is
        refused naming the column and the failure's type, never its message."""
        series = values if isinstance(values, pd.Series) else pd.Series(values)
        try:
            found = listed_codes(series, self.categories, strict=self.strict)
        except InvalidDataError:
            raise  # its own line: the column and what it holds, never a value
        except Exception as exc:  # noqa: BLE001 - a value's own failure may quote it
            raise InvalidDataError(
                f"column {self.name or series.name!r} holds a value that cannot be matched "
                f"against its category list ({type(exc).__name__})") from None
        codes = found.astype(np.float64)
        codes[found == NOT_LISTED] = self.other_code
        missing = found == MISSING
        if missing.any():
            codes[missing] = np.nan if self.null_code is None else self.null_code
        return codes + 0.5

    def encode_series(self, series: pd.Series) -> pd.Series:
        """:meth:`encode` keeping the series' index and name (a Dask partition map)."""
        return pd.Series(self.encode(series), index=series.index, name=series.name)


@dataclass(frozen=True)
class CategoryKind(ColumnKind):
    """The ``category`` column kind (:mod:`dpmic_dask.stats.kinds`): a column read as
    its codes ``code + 0.5`` of a public list (:class:`CategoryAxis`), bounds
    ``(0, K)`` implied by the list. Registered on import; a string or ``category``
    column without a list is refused (its categories would come from the data)."""

    name: str = "category"
    coding: CategoryAxis | None = None
    implied_bounds: tuple[float, float] | None = None

    def detects(self, dtype) -> bool:
        return isinstance(dtype, pd.CategoricalDtype) or (
            _is_string_dtype(dtype) and not _is_object_dtype(dtype))

    def claims(self, dtype, bounds) -> bool:
        # bounds of text that reads as dates or times are the time kind's (an object
        # column of ISO text or of datetimes, read as times); other text is not
        # a range, and a categorical column is pointed to its category list
        return _is_object_dtype(dtype) and (bounds is None or isinstance(
            bounds, (list, tuple)) and all(isinstance(v, str) for v in bounds) and bool(bounds)
            and not all(parses_as_time(v) for v in bounds))

    def resolve(self, dtype, options):
        if self.coding is not None and not options:
            return self
        options = dict(options)
        listed = options.pop("categories", None)
        null_category = bool(options.pop("null_category", False))
        if options:
            raise InvalidParameterError(
                f"kind 'category' takes only the option 'categories', not {sorted(options)}")
        if listed is None:
            raise InvalidDataError(
                f"a column of dtype {dtype} is categorical and its categories would come from "
                "the data, which is never public: give it a public category list")
        return with_coding(CategoryAxis("", _check_list("column", dtype, listed),
                                        null_category))

    def axis(self, series):
        if self.coding is None:  # pragma: no cover - resolve refuses this
            raise InvalidDataError("a categorical column needs a public category list")
        return self.coding.encode(series)

    def bound(self, value, what):
        """A fill value (a listed category) as its code's number; an axis number
        (a float, e.g. the implied bounds) as it is."""
        if self.coding is None or isinstance(value, float):
            return value
        listed = self.coding.categories
        found = listed_value(value, listed)
        if found is not None:
            return listed.index(found) + 0.5
        raise InvalidParameterError(f"{what} must be one of the listed categories")

    def format(self, number):
        if self.coding is None or not np.isfinite(number):
            return float(number)
        labels = self.coding.labels()
        return labels[min(max(int(number), 0), len(labels) - 1)]

    def describe(self) -> str:
        k = 0 if self.coding is None else len(self.coding.categories)
        return f"category ({k} listed, one 'other' bin)"


def with_coding(axis: CategoryAxis) -> CategoryKind:
    """The category kind of one column coded by ``axis``."""
    return CategoryKind(coding=axis, implied_bounds=axis.bounds)


def _check_list(name, dtype, listed) -> tuple:
    what = f"categories[{name!r}]"
    if isinstance(listed, (str, bytes)) or not hasattr(listed, "__iter__") or isinstance(
            listed, Mapping):
        raise InvalidParameterError(
            f"{what} must be a list of public categories or {PRIVATE!r}")
    values = tuple(listed)
    if not values:  # one is enough: that category and "other" (a kept list of one too)
        raise InvalidParameterError(f"{what} must list at least one category")
    if len(values) > MAX_CATEGORIES:
        raise InvalidParameterError(f"{what} lists more than {MAX_CATEGORIES} categories")
    kind = column_kind(dtype)
    is_int = is_whole
    if kind == "category":
        # a category dtype's categories are data, but their dtype is schema: a list
        # must be of values that can equal them (text equals no integer category)
        kind = categories_kind(dtype)
        if kind == "other":
            raise InvalidParameterError(
                f"{what}: the column's categories are of dtype "
                f"{dtype.categories.dtype}, which no listed text or integer can equal; "
                "convert the column to text or integers first")
    if kind == "integer":
        ok, expected = all(is_int(v) for v in values), "integers"
    elif kind == "unknown":
        ok = all(isinstance(v, str) for v in values) or all(is_int(v) for v in values)
        expected = "strings or integers (all of one type)"
    elif _is_object_dtype(dtype):
        ok, expected = all(isinstance(v, str) or is_int(v) for v in values), "strings or integers"
    else:
        ok, expected = all(isinstance(v, str) for v in values), "strings"
    if not ok:
        raise InvalidParameterError(f"{what} must list {expected} for a column of dtype {dtype}")
    if kind == "integer":
        values = tuple(int(v) for v in values)
    if len(set(values)) != len(values):
        raise InvalidParameterError(f"{what} lists a category more than once")
    return values


def check_categories(schema, categories, *, nulls="raise", fill=None,
                     selected=None) -> dict[str, CategoryAxis]:
    """Check ``categories`` (column -> public list) against ``schema`` (column ->
    dtype) before anything is read, and refuse every column that would need
    categories from the data.

    ``selected``: the columns the release uses (``None``: every column named in
    ``categories``); a selected string, object or ``category`` column without a
    list is refused with its name and dtype. ``"private"`` entries are resolved
    by the caller (:mod:`dpmic_dask.privacy.partition_selection`) before this.
    """
    names = list(schema.index) if hasattr(schema, "index") else list(schema)
    categories = {} if categories is None else categories
    if not isinstance(categories, Mapping):
        raise InvalidParameterError("categories must be a mapping {column: [categories]}")
    unknown = [c for c in categories if c not in names]
    if unknown:
        raise InvalidParameterError(f"categories given for unknown column(s): {unknown}")
    for column in selected or ():
        if column in names and column not in categories and needs_categories(schema[column]):
            dtype = schema[column]
            origin = ("its categories come from the data" if column_kind(dtype) == "category"
                      else "its distinct values come from the data")
            text = ("" if not pd.api.types.is_string_dtype(dtype)
                    or column_kind(dtype) == "category" else
                    ". If it holds dates, times or numbers as text (Dask turns an object "
                    "column of datetime.date or Decimal values into text), give it their "
                    "dtype before Dask reads it, or for dates and times kinds="
                    f"{{{column!r}: 'date'}} (or 'timestamp')")
            raise InvalidDataError(
                f"column {column!r} (dtype {dtype}) is categorical and {origin}, which is "
                f"never public: pass categories={{{column!r}: [public list]}} (values "
                "outside the list fall into one 'other' bin) or a private choice from a "
                f"public candidate list{text}")
    axes = {}
    for column, listed in categories.items():
        dtype = schema[column]
        if column_kind(dtype) == "other":
            raise InvalidDataError(
                f"column {column!r} (dtype {dtype}) cannot be categorical: categories apply "
                "to string, object, category and integer columns")
        values = _check_list(column, dtype, listed)
        fill_value = None
        if nulls == "fill":
            if is_one_fill(fill):
                fill = dict.fromkeys(categories, fill)
            if not isinstance(fill, Mapping) or column not in fill:
                raise InvalidParameterError(missing_fill_message([column]))
            fill_value = listed_value(fill[column], values)
            if fill_value is None:
                # 2.0 equals the integer 2 but would be read as an axis number, not
                # as category 2: a fill is a listed category of the list's own type
                raise InvalidParameterError(
                    f"fill[{column!r}] must be one of the listed categories, of their type "
                    "(text for a list of text, an integer for a list of integers)")
        axes[column] = CategoryAxis(column, values, nulls == "category", fill_value,
                                    strict=True)
    return axes


@lru_cache(maxsize=4096)
def code_bins(codes: int, bins: int) -> np.ndarray:
    """Bin of each code's value ``code + 0.5`` (bounds ``(0, codes)``) in a range
    equipartition of ``bins`` bins, computed by the engine's own exact binning
    (int64[codes]). Distinct codes get distinct bins when ``bins >= codes``."""
    values = np.arange(codes, dtype=np.float64) + 0.5
    out = equipartition(values, (0.0, float(codes)), bins)
    out.setflags(write=False)
    return out


register_kind(CategoryKind())

__all__ = ["MAX_CATEGORIES", "PRIVATE", "CategoryAxis", "CategoryKind", "check_categories",
           "code_bins", "column_kind", "needs_categories", "with_coding"]


def category_kinds(schema, categories, *, bounds, columns, kinds, nulls, fill=None,
                   unsupported_by: str | None = None):
    """Put a request's ``categories`` into its column ``kinds`` (nothing is read).

    Returns ``(kinds, columns, nulls, axes)``: ``kinds`` with each categorical
    column's :class:`CategoryKind`; ``columns`` made explicit when categorical
    columns are used without a ``columns`` list (every column named in
    ``bounds`` or ``categories``, in the schema's order); ``nulls`` as the
    numeric path knows it (``"category"`` keeps a categorical column's nulls as
    a category of their own and refuses nulls elsewhere, like ``"raise"``); and
    ``axes`` (column -> :class:`CategoryAxis`). ``unsupported_by``: the name of
    the release's mechanism when it cannot hold a categorical axis (any
    categorical column is then refused). Refuses a selected string,
    object or ``category`` column without a list, naming it and its dtype.
    """
    names = list(schema.index) if hasattr(schema, "index") else list(schema)
    dtypes = dict(schema.items()) if hasattr(schema, "items") else {}
    if columns is None or isinstance(columns, str) or not hasattr(columns, "__iter__"):
        named = set(bounds) if isinstance(bounds, Mapping) else set()
        named |= set(categories or {})
        selected = [c for c in names if c in named]
    else:
        selected = list(columns)
    if nulls == "category" and not categories:
        raise InvalidParameterError("nulls='category' applies to categorical columns: give "
                                    "categories={column: [public list]}")
    # a column given another kind (or bounds a time kind reads) is not categorical
    given_bounds = bounds if isinstance(bounds, Mapping) else {}
    given_kinds = kinds if isinstance(kinds, Mapping) else {}
    ordered = [c for c in selected if c in dtypes and read_as_ordered(
        dtypes[c], bounds=given_bounds.get(c), kind=given_kinds.get(c))]
    axes = check_categories(dtypes, categories, nulls=nulls, fill=fill,
                            selected=[c for c in selected if c not in ordered])
    if not axes:
        return kinds, columns, nulls, {}
    unused = [c for c in axes if c not in selected]
    if unused:
        raise InvalidParameterError(f"categories given for column(s) {unused} that the "
                                    "release does not use (add them to columns)")
    if unsupported_by is not None:
        raise InvalidParameterError(f"mechanism {unsupported_by!r} does not support "
                                    "categorical columns")
    if isinstance(bounds, Mapping):
        bounded = [c for c in axes if c in bounds]
        if bounded:
            raise InvalidParameterError(
                f"column(s) {bounded} are categorical: their bounds come from the category "
                "list; give no bounds for them")
    if kinds is not None and not isinstance(kinds, Mapping):
        raise InvalidParameterError("kinds must be a mapping {column: kind}")
    clash = [c for c in axes if kinds and c in kinds]
    if clash:
        raise InvalidParameterError(f"column(s) {clash} are given both a kind and categories")
    axes = {c: CategoryAxis(c, a.categories, a.null_category, strict=a.strict)
            for c, a in axes.items()}
    merged = {**(kinds or {}), **{c: with_coding(a) for c, a in axes.items()}}
    if nulls == "category":
        if fill is not None:
            raise InvalidParameterError("fill is only used with nulls='fill'")
        nulls = "raise"
    return merged, selected, nulls, axes
