"""Column kinds: how a column of any dtype becomes the numbers the engine bins.

The engine bins float64 *axis values* (SPEC section 2). A column kind says how a
column's values become axis values, by one documented rule, and how bounds and
fill values given in the column's own kind become axis numbers (and back, for
reports). The kind is decided from the schema (the dtype), never from the data;
an ``object`` or string column is read by the kind its bounds are given in
(numbers, or dates and times), or by an explicit ``kinds={column: "timestamp"}``.

Built-in kinds (tried in this order; a later :func:`register_kind` goes first):

``boolean``
    ``bool``, ``boolean``, ``bool[pyarrow]``: False -> 0, True -> 1. Bounds
    ``(0, 1)`` are implied (public by type); none need be given or paid for
    (bounds given must have their midpoint in ``(0, 1]``, keeping 0 and 1 apart).
``number``
    every integer, unsigned and float dtype (NumPy, pandas nullable ``Int64`` /
    ``Float64``, pyarrow-backed), pyarrow decimals (``decimal128`` /
    ``decimal256``: Parquet decimals as ``dd.read_parquet`` reads them), and
    ``object`` columns of numbers (``Decimal`` from SQL ``numeric`` or pandas)
    when their bounds are numbers: the value itself, as an IEEE double (a
    decimal as the double nearest its exact value, as ``float(Decimal)``). An
    ``object`` column holding anything else, a numeric string too, is refused;
    so is a column of times or durations named ``"number"`` (its storage ticks).
``timestamp`` (also named ``date``)
    ``datetime64`` of any unit, naive or tz-aware, pyarrow timestamps and dates,
    ``object`` columns of ``date`` / ``datetime`` (or, cast explicitly, strings:
    ``kinds={"ts": "timestamp"}``, and numbers **with their unit**:
    ``kinds={"ts": ("timestamp", "s")}``): **seconds since 1970-01-01 00:00:00
    UTC**; a naive value is taken to be UTC. Bounds: strings, ``date``,
    ``datetime``, ``Timestamp``, ``datetime64`` (or numbers, read as seconds
    since the epoch).
``timedelta``
    ``timedelta64`` of any unit, pyarrow durations (or, cast explicitly, strings,
    and numbers with their unit): the length in **seconds**. Bounds:
    ``timedelta``, ``Timedelta``, strings such as ``"30 days"`` (or numbers of
    seconds).

A cast of numbers to a time kind needs their unit (``W``, ``D``, ``h``, ``m``,
``s``, ``ms``, ``us``, ``ns``): a numeric column cast without one is refused from
its dtype, before anything is read or charged (epoch seconds read as
nanoseconds would all fall in one bin). With a unit, an integer column is
refused when its bounds lie outside every time its dtype can hold in that unit,
or hold no whole unit (numeric bounds are seconds).

Nulls (None, NaN, NaT, NA) become NaN, which the null policy handles.

API (all a new kind needs):

* :class:`ColumnKind`: subclass it; the methods to write are ``detects``,
  ``axis`` and, if bounds in the kind's own terms are accepted, ``bound`` and
  ``format``. ``claims`` lets a kind read ``object`` columns by the type of the
  column's bounds; ``implied_bounds`` bounds the axis when the type does;
  ``resolve(dtype, options)`` returns the kind specialised for one column (its
  unit, time zone, category list...), ``options`` being the dict a user gave in
  ``kinds={column: {...}}`` (``{"unit": u}`` for a pair ``(name, u)``) or a job
  file's ``columns.<name>`` (minus ``bounds``/``fill``); ``check_bounds``
  refuses bounds (in axis numbers) that no value of the column can reach.
* :func:`register_kind` adds a kind (tried before the built-in ones).
* :func:`read_as_ordered` (a named kind or claiming bounds: not a category),
  :func:`kind_named`, :func:`column_kind` (the kind of one column, or one line
  naming the column and its dtype), :func:`axis_arguments` (a request's schema,
  bounds and fill values in axis numbers, and each column's kind),
  :func:`axis_partition` and :func:`axis_series` (one partition's kinded columns
  as float64 axis values, rows with nulls dropped on request; a whole pandas or
  Dask frame: :func:`dpmic_dask.release.axisframe.axis_frame`),
  :func:`format_bounds`.

No message here quotes a value: refusals name the column and its dtype only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpmic_dask.checks import check_unique_labels, is_one_fill
from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.stats.kindbase import FLOAT64, BooleanKind, ColumnKind, NumberKind, is_object
from dpmic_dask.stats.timekind import TimeKind, UnitNeededError

#: The registry: kinds tried in order (a registered kind goes first).
_REGISTRY: list[ColumnKind] = [BooleanKind(), NumberKind(), TimeKind(),
                               TimeKind(name="timedelta", duration=True)]


def register_kind(kind: ColumnKind) -> ColumnKind:
    """Add ``kind`` to the registry, tried before every kind registered earlier
    (a kind of the same name is replaced). Returns ``kind``."""
    if not isinstance(kind, ColumnKind) or not isinstance(kind.name, str):
        raise TypeError("register_kind takes a ColumnKind instance with a name")
    _REGISTRY[:] = [k for k in _REGISTRY if k.name != kind.name]
    _REGISTRY.insert(0, kind)
    return kind


def registered_kinds() -> tuple[str, ...]:
    """Names of the registered kinds, in the order they are tried."""
    return tuple(k.name for k in _REGISTRY)


def kind_named(name: str) -> ColumnKind:
    """The registered kind called ``name`` (``"date"`` is ``"timestamp"``)."""
    if name == "date":
        name = "timestamp"
    for kind in _REGISTRY:
        if kind.name == name:
            return kind
    raise InvalidParameterError(
        f"unknown column kind (known: {', '.join(registered_kinds())})")


def kind_options(column, kind) -> tuple:
    """``(kind, options)`` of one ``kinds`` entry: a name, a :class:`ColumnKind`,
    ``None``, a pair ``(name, unit)`` (``("timestamp", "s")``) or a dict
    ``{"kind": name, **options}`` (``{"kind": "timestamp", "unit": "s"}``)."""
    if isinstance(kind, Mapping):
        options = dict(kind)
        return options.pop("kind", None), options
    if isinstance(kind, tuple):
        if len(kind) != 2 or not all(isinstance(part, str) for part in kind):
            raise InvalidParameterError(
                f"kinds[{column!r}] as a pair must be (kind, unit), e.g. ('timestamp', 's')")
        return kind[0], {"unit": kind[1]}
    return kind, {}


def column_kind(column, dtype, *, bounds=None, kind=None) -> ColumnKind:
    """The kind of one column, resolved for it.

    ``kind``: ``None`` (detect from ``dtype``, and for ``object`` columns from the
    type of ``bounds``), a name, a pair ``(name, unit)``, a dict ``{"kind": name,
    **options}`` or a :class:`ColumnKind`. A column no kind reads is one line
    naming the column and its dtype; so is a cast of numbers to a time kind
    without their unit."""
    kind, options = kind_options(column, kind)
    asked = kind if isinstance(kind, str) else None
    if isinstance(kind, str):
        chosen: ColumnKind | None = kind_named(kind)
    elif kind is None or isinstance(kind, ColumnKind):
        chosen = kind
    else:
        raise InvalidParameterError(
            f"kinds[{column!r}] must be a kind name, a pair (kind, unit) or a dict")
    if chosen is None and is_object(dtype):  # strings and objects: read as their bounds say
        chosen = next((k for k in _REGISTRY if k.claims(dtype, bounds)), None)
    if chosen is None:
        chosen = next((k for k in _REGISTRY if k.detects(dtype)), None)
    if chosen is None:
        chosen = next((k for k in _REGISTRY if k.claims(dtype, bounds)), None)
    if chosen is None:
        hint = (" (give its bounds as numbers, or as dates and times, or name its kind)"
                if is_object(dtype) else "")
        raise InvalidDataError(
            f"column {column!r} has dtype {dtype}, which no column kind reads "
            f"({', '.join(registered_kinds())}){hint}")
    try:
        return chosen.resolve(dtype, options)
    except UnitNeededError as exc:
        raise InvalidParameterError(exc.line(column, asked)) from None
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"kinds[{column!r}]: {exc}") from None
    except InvalidDataError as exc:
        raise InvalidDataError(f"column {column!r}: {exc}") from None


def read_as_ordered(dtype, *, bounds=None, kind=None) -> bool:
    """Whether a column of ``dtype`` is read by a kind other than ``"category"``
    because the user said so: a named ``kind`` (not ``"category"``), or bounds in a
    kind's own terms that a built-in kind claims (dates on an ``object`` column).
    Categorical checks skip such columns."""
    if isinstance(kind, Mapping):
        kind = kind.get("kind")
    elif isinstance(kind, tuple) and kind:
        kind = kind[0]
    if kind is not None:
        return getattr(kind, "name", kind) != "category"
    return any(k.claims(dtype, bounds) for k in _REGISTRY if k.name != "category")


def _pair_of_other_than_numbers(pairs) -> bool:
    """Whether ``pairs`` is a pair holding something other than numbers (text, dates)."""
    if not isinstance(pairs, (list, tuple)) or len(pairs) != 2:
        return False
    return not all(isinstance(v, (int, float, np.integer, np.floating)) for v in pairs)


@dataclass(frozen=True)
class AxisArguments:
    """A request's arguments in axis numbers: ``schema`` (every kinded column
    float64), ``bounds`` and ``fill`` (converted; ``"private"`` kept), and each
    involved column's resolved ``kinds``."""

    schema: dict
    bounds: object
    fill: object
    kinds: dict = field(default_factory=dict)

    def in_axis(self, pairs, name: str = "domain"):
        """Per-column pairs in the columns' own kinds (``{"signup": ("2020-01-01",
        "2030-01-01")}``, e.g. a private-bounds ``domain``) as axis numbers; one pair
        for every column is read in each column's kind when it is not two numbers
        (dates for every column of dates), anything else is returned as it is."""
        if not isinstance(pairs, Mapping):
            if not _pair_of_other_than_numbers(pairs):
                return pairs
            pairs = dict.fromkeys(self.kinds, pairs)
        out = dict(pairs)
        for column, given in pairs.items():
            kind = self.kinds.get(column)
            if kind is None or isinstance(given, str):
                continue
            try:
                lo, hi = given
            except (TypeError, ValueError):
                continue  # refused by the checks of ``name``, with their wording
            what = f"{name}[{column!r}]"
            out[column] = (kind.bound(lo, what), kind.bound(hi, what))
        return out

    def needs_conversion(self) -> dict:
        """The kinds of the columns whose values are not float64 already."""
        return {c: k for c, k in self.kinds.items() if k is not None}


def _schema_items(schema):
    if hasattr(schema, "items"):
        return list(schema.items())
    return [(name, FLOAT64) for name in schema]


def axis_arguments(schema, *, bounds, columns=None, fill=None, kinds=None,
                   bounds_name=None, fill_name=None) -> AxisArguments:
    """Resolve the kinds of the columns a request uses and put its bounds and fill
    values in axis numbers (no data is read).

    A column is used when ``columns`` names it, or (without ``columns``) when
    ``bounds`` does. A boolean column named in ``columns`` needs no bounds (its
    ``(0, 1)`` are implied, and ``"private"`` becomes them at no cost). Columns
    already float64 are left as they are (no conversion, no copy)."""
    bounds_name = bounds_name or (lambda col: f"bounds[{col!r}]")
    fill_name = fill_name or (lambda col: f"fill[{col!r}]")
    items = _schema_items(schema)
    dtypes = dict(items)
    if kinds is not None and not isinstance(kinds, Mapping):
        raise InvalidParameterError("kinds must be a mapping {column: kind}")
    kinds = dict(kinds or {})
    unknown = [c for c in kinds if c not in dtypes]
    if unknown:
        raise InvalidParameterError(f"kinds given for unknown column(s): {unknown}")
    if isinstance(bounds, str):
        if bounds != "private" or columns is None or isinstance(columns, str):
            return AxisArguments(dtypes, bounds, fill)
        bounds = dict.fromkeys(columns, "private")
    if not isinstance(bounds, Mapping):
        return AxisArguments(dtypes, bounds, fill)  # refused by the request's checks
    bounds = dict(bounds)
    if columns is None or isinstance(columns, str) or not hasattr(columns, "__iter__"):
        used = [c for c in dtypes if c in bounds]
    else:
        used = [c for c in columns if c in dtypes]
    check_unique_labels([name for name, _ in items], used)  # dtypes keeps one of each
    if is_one_fill(fill):  # fill=0.0: one number for every column, in each column's kind
        fill = dict.fromkeys(used, fill)
    schema_out = dict(dtypes)
    resolved: dict = {}
    for column in used:
        dtype = dtypes[column]
        given = bounds.get(column)
        kind = column_kind(column, dtype, bounds=given, kind=kinds.get(column))
        if kind.implied_bounds is not None and (given is None or given == "private"):
            bounds[column] = kind.implied_bounds
        elif given is not None and not isinstance(given, str):
            try:
                lo, hi = given
            except (TypeError, ValueError):
                pass  # refused by the request's checks, with their wording
            else:
                axis_lo = kind.bound(lo, bounds_name(column))
                axis_hi = kind.bound(hi, bounds_name(column))
                kind.check_bounds(axis_lo, axis_hi, bounds_name(column))
                bounds[column] = (axis_lo, axis_hi)
        if isinstance(fill, Mapping) and column in fill:
            fill = {**fill, column: kind.bound(fill[column], fill_name(column))}
        if isinstance(kind, NumberKind) and dtype == FLOAT64:
            resolved[column] = None  # read as it is
        else:
            resolved[column] = kind
            schema_out[column] = FLOAT64
    return AxisArguments(schema_out, bounds, fill, resolved)


def axis_series(series: pd.Series, kind: ColumnKind) -> pd.Series:
    """One column (one partition) as float64 axis values."""
    return pd.Series(kind.axis(series), index=series.index, name=series.name)


def axis_partition(frame: pd.DataFrame, kinds: Mapping, drop) -> pd.DataFrame:
    """Every column of ``kinds`` (name -> kind) as axis values, then the rows with
    a null in a ``drop`` column dropped (one partition, one pass; the whole frame
    is :func:`dpmic_dask.release.axisframe.axis_frame`)."""
    out = frame.copy(deep=False)
    for column, kind in kinds.items():
        out[column] = axis_series(frame[column], kind)
    return out.dropna(subset=list(drop)) if drop else out


def format_value(kind: ColumnKind | None, number: float) -> str:
    """An axis number as text in the column's own kind."""
    if kind is None:
        return f"{number:.6g}"
    value = kind.format(number)
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, pd.Timestamp):
        if value.tz is not None and str(value.tz) == "UTC":
            return value.strftime("%Y-%m-%d %H:%M:%S") + " UTC" if (
                value.hour or value.minute or value.second) else value.strftime("%Y-%m-%d")
        return value.isoformat()
    return str(value)


def format_bounds(kind: ColumnKind | None, bounds) -> str:
    """``[lo, hi]`` in the column's own kind (dates, times, durations, numbers)."""
    lo, hi = bounds
    return f"[{format_value(kind, lo)}, {format_value(kind, hi)}]"


__all__ = ["AxisArguments", "axis_arguments", "axis_partition", "axis_series", "column_kind",
           "format_bounds", "format_value", "kind_named", "kind_options", "read_as_ordered",
           "register_kind", "registered_kinds"]
