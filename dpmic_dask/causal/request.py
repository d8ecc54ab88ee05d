"""A causal-discovery request and every check of its arguments, made against
the frame's schema before any data is read: the columns and their public
bounds or categories (:class:`~dpmic_dask.causal.tables.ColumnCoding`), bins,
``alpha``, the largest conditioning set, the test, and the size of the largest
table a level may count. The release itself is
:func:`dpmic_dask.causal.discover.causal_graph`.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpmic_dask.causal.citests import CORRELATION_TESTS, check_test
from dpmic_dask.causal.tables import ColumnCoding
from dpmic_dask.checks import check_bounds, check_column_list, finite_real
from dpmic_dask.errors import DPMICError, InvalidDataError, InvalidParameterError
from dpmic_dask.release.axisframe import axis_frame
from dpmic_dask.stats.categorycodes import categories_kind
from dpmic_dask.stats.categorycodes import column_kind as category_column_kind
from dpmic_dask.stats.kindbase import reads_as_number
from dpmic_dask.stats.kinds import column_kind
from dpmic_dask.stats.timekind import TimeKind

#: Default number of bins of a bounded column (a range equipartition).
DEFAULT_BINS = 5
MAX_BINS = 16
MAX_CATEGORIES = 254
#: The smallest test level: below about 2e-16, ``1 - alpha / 2`` is 1 in double
#: precision and no two-sided threshold can be computed.
MIN_ALPHA = 1e-15
#: Counts (int64) one pass holds at most: a level that needs more is counted in
#: blocks, one pass each; a single table must fit (checked before anything is read).
MAX_LEVEL_CELLS = 2**26


@dataclass(frozen=True)
class CausalRequest:
    """A validated request (no data read)."""

    codings: tuple[ColumnCoding, ...]
    alpha: float
    max_condition_size: int
    bins: int
    test: str

    @property
    def names(self) -> tuple:
        return tuple(c.name for c in self.codings)

    @property
    def pairs(self) -> int:
        p = len(self.codings)
        return p * (p - 1) // 2

    @property
    def levels(self) -> int:
        return self.max_condition_size + 1


def _integer(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not low <= int(value) <= high:
        raise InvalidParameterError(f"{name} must be an integer in [{low}, {high}]")
    return int(value)


def _categories(values, name, dtype) -> tuple:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidParameterError(f"categories[{name!r}] must be a list of public values")
    cats = tuple(values)
    if not 1 <= len(cats) <= MAX_CATEGORIES:
        raise InvalidParameterError(
            f"categories[{name!r}] must list 1 to {MAX_CATEGORIES} public values")
    try:
        distinct = len(set(cats)) == len(cats)
    except TypeError:  # a list or a dict as a category
        raise InvalidParameterError(
            f"categories[{name!r}] must list single values (numbers, text, dates), "
            "not lists or mappings") from None
    if any(c != c for c in cats) or not distinct:
        raise InvalidParameterError(f"categories[{name!r}] must list distinct values, no NaN")
    # a list no value of the column can match puts every row in "other": refused,
    # from the dtype alone (an object column may hold anything; numbers, times,
    # bytes, periods and the like never hold text, nor does a type pandas cannot name)
    text = [isinstance(c, str) for c in cats]
    kind = category_column_kind(dtype)
    held = dtype
    if kind == "category":  # what its categories are: their dtype is schema
        kind = categories_kind(dtype)
        held = dtype.categories.dtype if dtype.categories is not None else np.dtype(object)
    if (kind in ("integer", "other") and any(text)) or (
            kind == "string" and not pd.api.types.is_object_dtype(held) and not all(text)):
        raise InvalidParameterError(
            f"categories[{name!r}] lists {'text' if any(text) else 'values that are not text'}"
            f" for a column of dtype {dtype}, which no value of the column can match")
    return cats


def _resolve_test(test: str, codings, per_unit: bool = False) -> str:
    """``test``, with ``"auto"`` chosen from the column kinds: ``"copula"`` when
    every column has bounds (continuous or ordinal); ``"chisq"`` (released tables,
    :mod:`dpmic_dask.causal.tablerelease`) when every column has categories;
    mixed: ``"tau"`` on binned tables when every categorical column is binary (one
    listed category and "other": its order is a sign, which a two-sided test
    ignores) and the privacy unit is a row (the per-test decisions have no
    per-unit form), else ``"chisq"`` (no rank statistic on unordered categories:
    two listed categories and "other" are three unordered levels, whatever the
    data hold). A correlation test needs every column bounded."""
    bounded = all(c.categories is None for c in codings)
    if test == "auto":
        if bounded:
            return "copula"
        categorical = [c for c in codings if c.categories is not None]
        if not per_unit and len(categorical) < len(codings) and all(
                c.size <= 2 for c in categorical):
            return "tau"
        return "chisq"
    if test in CORRELATION_TESTS and not bounded:
        raise InvalidParameterError(
            f'test="{test}" needs public bounds for every column (it reads correlations of '
            'the values); with categorical columns use test="auto" (released tables: '
            '"chisq")')
    unordered = [c.name for c in codings if c.categories is not None and c.size > 2]
    if test == "tau" and unordered:
        raise InvalidParameterError(
            f'test="tau" ranks values, and column(s) {unordered} have more than two '
            'levels (their listed categories and "other"), which have no order: use '
            'test="chisq" or "g" (or "auto"), or give a column of numbers bounds')
    return test


def time_kinds(dtypes, bounds) -> dict:
    """The bounded columns of a time kind (timestamps, dates, durations: detected
    from the dtype, or an ``object`` column of dates given date bounds), by name.
    The tests read them as seconds (since the epoch, UTC; SPEC section 8's one
    rule), their bounds converted by the kind. Anything else is left to
    :func:`check_request`'s wording."""
    names = list(dtypes.index) if hasattr(dtypes, "index") else list(dtypes)
    found = {}
    for name, pair in (bounds or {}).items() if isinstance(bounds, Mapping) else ():
        if name not in names:
            continue
        if reads_as_number(dtypes[name], pair):
            if isinstance(pair, (list, tuple)) and any(
                    isinstance(v, (str, _dt.date, np.datetime64)) for v in pair):
                raise InvalidParameterError(
                    f"bounds[{name!r}] are dates or text, and column {name!r} holds "
                    f"numbers (dtype {dtypes[name]}): the causal search reads times from "
                    "columns of times only; convert epoch numbers first "
                    "(pd.to_datetime(column, unit='s')), or give numbers as bounds")
            continue
        try:
            kind = column_kind(name, dtypes[name], bounds=pair)
        except DPMICError:
            continue
        if isinstance(kind, TimeKind):
            found[name] = kind
    return found


def seconds_bounds(bounds, kinds: dict) -> dict:
    """``bounds`` with those of the :func:`time_kinds` columns in seconds; as they
    are without any (or when not a mapping: :func:`check_request` says so)."""
    if not kinds or not isinstance(bounds, Mapping):
        return bounds
    out = dict(bounds)
    for name, kind in kinds.items():
        pair = out[name]
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            out[name] = tuple(kind.bound(v, f"bounds[{name!r}]") for v in pair)
    return out


def seconds_schema(dtypes, kinds: dict):
    """``dtypes`` with the :func:`time_kinds` columns as float64 (what they become)."""
    if not kinds:
        return dtypes
    out = pd.Series(dtypes).copy()
    for name in kinds:
        out[name] = np.dtype(np.float64)
    return out


def seconds_request(frame, backend, *, bounds, **checks) -> tuple:
    """``(frame, request)``: :func:`check_request` on the schema and bounds with
    every :func:`time_kinds` column in seconds, then ``frame`` with those columns
    converted (:func:`~dpmic_dask.release.axisframe.axis_frame`: lazily on Dask,
    column by column)."""
    schema = backend.schema(frame)
    kinds = time_kinds(schema, bounds)
    request = check_request(seconds_schema(schema, kinds), bounds=seconds_bounds(bounds, kinds),
                            **checks)
    return axis_frame(frame, kinds), request


def check_request(dtypes, *, columns, alpha, max_condition_size, bounds, categories, bins,
                  test, per_unit: bool = False) -> CausalRequest:
    """Every check of the arguments against the frame's schema (no data read);
    ``per_unit``: a privacy unit was named (it steers the ``"auto"`` test)."""
    names = list(dtypes.index) if hasattr(dtypes, "index") else list(dtypes)
    bounds = {} if bounds is None else bounds
    categories = {} if categories is None else categories
    for what, mapping in (("bounds", bounds), ("categories", categories)):
        if not isinstance(mapping, Mapping):
            raise InvalidParameterError(f"{what} must be a mapping {{column: ...}}")
        unknown = [c for c in mapping if c not in names]
        if unknown:
            raise InvalidParameterError(f"{what} given for unknown column(s): {unknown}")
    both = [c for c in bounds if c in categories]
    if both:
        raise InvalidParameterError(f"column(s) {both} have both bounds and categories")
    if columns is None:
        selected = [c for c in names if c in bounds or c in categories]
    else:
        selected = check_column_list(columns, names)
        # a boolean column's bounds (0, 1) are public by type, as pairwise reads them
        bounds = {**{c: (0.0, 1.0) for c in selected if c not in bounds
                     and c not in categories and pd.api.types.is_bool_dtype(dtypes[c])},
                  **bounds}
        public = [c for c in selected if c not in bounds and c not in categories]
        if public:
            raise InvalidParameterError(
                f"public bounds or categories are missing for column(s) {public}; they must "
                "come from domain knowledge, never from the data")
    if len(selected) < 2:
        raise InvalidParameterError("at least two columns with bounds or categories are needed")
    if any(names.count(c) > 1 for c in selected):
        raise InvalidDataError("a selected column label appears more than once in the frame")
    bins = _integer(bins, "bins", 2, MAX_BINS)
    non_numeric = [c for c in selected if c in bounds and not reads_as_number(dtypes[c], bounds[c])]
    if non_numeric:
        raise InvalidDataError(f"column(s) {non_numeric} are not numeric; give them public "
                               "categories instead of bounds")
    codings = []
    for c in selected:
        if c in bounds:
            codings.append(ColumnCoding(c, bins, bounds=check_bounds(bounds[c],
                                                                     f"bounds[{c!r}]")))
        else:
            cats = _categories(categories[c], c, dtypes[c])
            codings.append(ColumnCoding(c, len(cats) + 1, categories=cats))
    alpha = finite_real(alpha, "alpha", "a number in (0, 1)")
    if not 0.0 < alpha < 1.0:
        raise InvalidParameterError("alpha must be a number in (0, 1)")
    if alpha < MIN_ALPHA:
        raise InvalidParameterError(f"alpha must be at least {MIN_ALPHA:g}: a smaller level "
                                    "has no threshold a test can compute")
    # more than p - 2 can never be used: the levels paid for stop there
    max_condition_size = min(_integer(max_condition_size, "max_condition_size", 0, 8),
                             len(selected) - 2)
    request = CausalRequest(tuple(codings), alpha, max_condition_size, bins,
                            _resolve_test(check_test(test), codings, per_unit))
    sizes = sorted((c.size for c in codings), reverse=True)
    largest_table = math.prod(sizes[:max_condition_size + 2])
    if largest_table > MAX_LEVEL_CELLS:
        raise InvalidParameterError(
            f"a table conditioning on {max_condition_size} columns may need {largest_table} "
            f"counts (more than {MAX_LEVEL_CELLS}); use fewer bins or categories, or a "
            "smaller max_condition_size")
    return request


def check_shares(level_shares, levels: int, select_share) -> tuple[tuple[float, ...], float]:
    """``(level shares as fractions adding up to 1, select share)``;
    ``level_shares`` are relative weights (``None``: equal)."""
    try:
        select = float(select_share)
    except (TypeError, ValueError):
        raise InvalidParameterError("select_share must be a number in (0, 1)") from None
    if not 0.0 < select < 1.0 or isinstance(select_share, bool):
        raise InvalidParameterError("select_share must be a number in (0, 1)")
    if level_shares is None:
        weights = [1.0] * levels
    else:
        try:
            weights = [float(w) for w in level_shares]
        except (TypeError, ValueError):
            raise InvalidParameterError("level_shares must be positive numbers") from None
        if len(weights) != levels or not all(math.isfinite(w) and w > 0 for w in weights):
            raise InvalidParameterError(
                f"level_shares must be {levels} positive number{'s' if levels != 1 else ''}, "
                "one per level 0 .. max_condition_size")
    total = sum(weights)
    return tuple(w / total for w in weights), select
