"""The column kind protocol (:class:`ColumnKind`), the helpers every kind shares,
and the simple built-in kinds: ``boolean`` and ``number``. The registry and the
conversion of a request's arguments and frames are :mod:`dpmic_dask.stats.kinds`
(its docstring documents every built-in kind); times and durations are
:mod:`dpmic_dask.stats.timekind`.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import numbers
import sys
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from dpmic_dask.errors import InvalidDataError, InvalidParameterError

FLOAT64 = np.dtype(np.float64)


class ColumnKind:
    """One way of reading a column as axis values (subclass and :func:`register_kind`)."""

    #: The kind's name, as users write it (``kinds={"ts": "timestamp"}``).
    name: str = "kind"
    #: Axis bounds that the type itself makes public (booleans: ``(0, 1)``), or None.
    implied_bounds: tuple[float, float] | None = None

    def detects(self, dtype) -> bool:
        """Whether a column of ``dtype`` is of this kind (schema only)."""
        return False

    def claims(self, dtype, bounds) -> bool:
        """Whether this kind reads an ambiguous (``object``) column whose bounds (or
        other per-column spec) are ``bounds``; by default no."""
        return False

    def resolve(self, dtype, options: Mapping) -> ColumnKind:
        """The kind specialised for one column of ``dtype``; ``options`` are the
        user's per-column settings (e.g. ``{"unit": "ms"}``). Unknown options are
        refused (one line naming the option)."""
        if options:
            raise InvalidParameterError(
                f"kind {self.name!r} takes no option(s) {sorted(options)}")
        return self

    def axis(self, series: pd.Series) -> np.ndarray:
        """The column's axis values, float64 with NaN for nulls."""
        raise NotImplementedError

    def bound(self, value, what: str):
        """A bound or fill value given in this kind as an axis number (may be
        returned unchecked: :func:`~dpmic_dask.checks.check_bounds` checks it)."""
        return value

    def check_bounds(self, lo, hi, what: str) -> None:
        """Refuse bounds ``(lo, hi)`` (axis numbers) that no value of the column can
        reach, from its dtype alone (one line naming ``what``); by default none."""

    def format(self, number: float):
        """An axis number back in this kind (for reports)."""
        return float(number)

    def describe(self) -> str:
        return self.name


def column_error(column, dtype, what: str) -> InvalidDataError:
    """A column no kind can read as asked: its name and dtype, never a value."""
    return InvalidDataError(f"column {column!r} (dtype {dtype}) {what}")


def float_axis(series: pd.Series) -> np.ndarray:
    """float64 with NaN for nulls; a float64 NumPy column is handed out as it is.
    Decimals (``Decimal`` objects, pyarrow decimals) become the double nearest
    their exact value, as ``float(Decimal)`` rounds (:func:`decimal_axis`)."""
    if series.dtype == FLOAT64:
        return series.to_numpy()
    if is_decimal(series.dtype):
        return decimal_axis(series)
    try:
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError, decimal.InvalidOperation, ArithmeticError):
        raise column_error(series.name, series.dtype,
                            "holds values that are not numbers") from None


#: What :func:`pandas.api.types.infer_dtype` calls an ``object`` column of numbers
#: only (nulls skipped); ``"mixed"`` and ``"mixed-integer"`` are looked at value by value.
_NUMBER_OBJECTS = frozenset({"integer", "floating", "mixed-integer-float", "decimal", "empty"})


def holds_numbers(series: pd.Series) -> bool:
    """Whether an ``object`` column holds only numbers (``int``, ``float``,
    ``Decimal``, NumPy numbers; not ``bool``) and nulls. A number written as a
    string is not a number: converting it would hide a column of text."""
    inferred = pd.api.types.infer_dtype(series, skipna=True)
    if inferred in _NUMBER_OBJECTS:
        return True
    if inferred not in ("mixed", "mixed-integer"):
        return False
    return all(map(is_number, series.dropna()))


def decimal_axis(series: pd.Series) -> np.ndarray:
    """A pyarrow decimal column as float64, NaN for nulls, each value the double
    nearest its exact value (what ``float(Decimal)`` gives: a column written as
    float64 from the same decimal text has the same numbers).

    Up to 15 digits (``decimal128(12, 2)``...) the unscaled integer ``m`` of a
    value ``m / 10**s`` is exact as a double, and so is ``10**s`` up to
    ``s = 22``: one IEEE division rounds the exact quotient, read straight from
    the Arrow buffers. Wider decimals go through Python's ``Decimal``."""
    arrow = arrow_type(series.dtype)
    scale = arrow.scale
    if arrow.precision > 15 or abs(scale) > 22 or arrow.byte_width not in (4, 8, 16, 32) \
            or sys.byteorder != "little":
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    word = np.int32 if arrow.byte_width == 4 else np.int64
    parts = []
    for chunk in series.array.__arrow_array__().chunks:
        n, first = len(chunk), chunk.offset
        if n == 0:
            continue
        raw = np.frombuffer(chunk.buffers()[1], dtype=np.uint8)
        cells = raw[first * arrow.byte_width:(first + n) * arrow.byte_width]
        # the low word of a little-endian two's complement value holds all of it
        unscaled = cells.view(word).reshape(n, -1)[:, 0].astype(np.float64)
        if scale > 0:
            unscaled /= float(10 ** scale)
        elif scale < 0:
            unscaled *= float(10 ** -scale)
        if chunk.null_count:
            null = chunk.is_null().to_numpy(zero_copy_only=False)
            unscaled[np.asarray(null, dtype=bool)] = np.nan
        parts.append(unscaled)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)


def arrow_type(dtype):
    """The pyarrow type of a pyarrow-backed dtype, else ``None``."""
    return getattr(dtype, "pyarrow_dtype", None)


def is_decimal(dtype) -> bool:
    """Whether ``dtype`` is a pyarrow decimal (``decimal128``, ``decimal256``...), as
    ``dd.read_parquet`` reads a Parquet decimal column. Its NumPy ``kind`` is ``"O"``,
    like a column of strings: the dtype says number, not the ``kind``."""
    arrow = arrow_type(dtype)
    if arrow is None:
        return False

    return bool(pa.types.is_decimal(arrow))


def holds_times(dtype) -> bool:
    """Whether ``dtype`` is a time, date or duration (NumPy or pyarrow)."""
    if getattr(dtype, "kind", None) in ("M", "m"):
        return True
    arrow = arrow_type(dtype)
    return arrow is not None and bool(pa.types.is_temporal(arrow))


class BooleanKind(ColumnKind):
    """Booleans: False -> 0, True -> 1, bounds ``(0, 1)`` implied by the type."""

    name = "boolean"
    implied_bounds = (0.0, 1.0)

    def detects(self, dtype) -> bool:
        return getattr(dtype, "kind", None) == "b"

    def resolve(self, dtype, options):
        """Refuse a column that is not of a boolean dtype named one: its numbers
        would be clamped to (0, 1) (every count above 1 read as True), its times
        read as storage ticks, its text as numbers -- a cast that guesses."""
        if not self.detects(dtype):
            raise InvalidParameterError(
                f"kind 'boolean' reads columns of a boolean dtype (bool, boolean, "
                f"bool[pyarrow]); this one is {dtype}: a column of 0 and 1 is read as a "
                "number with bounds (0, 1) (in a job file bounds = [0, 1], no kind); "
                "convert other columns to booleans first (e.g. s == 'yes')")
        return super().resolve(dtype, options)

    def axis(self, series):
        return float_axis(series)

    def check_bounds(self, lo, hi, what):
        """Refuse bounds that put False (0) and True (1) on one side of their middle:
        every grid's coarsest cut, so the two values would share every cell the
        coarsest grids have ((2, 10) clamps both to 2; (0, 10**9) bins both at 0)
        and a related pair would read as unrelated. Bounds whose midpoint lies in
        ``(0, 1]`` keep them apart; none need be given."""
        try:
            middle = (float(lo) + float(hi)) / 2.0
        except (TypeError, ValueError):
            return  # refused by the request's checks, with their wording
        if not 0.0 < middle <= 1.0:
            raise InvalidParameterError(
                f"{what}: a boolean column is read as 0 (False) and 1 (True), and these "
                "bounds put both on one side of their middle, so the two would share "
                "every cell of the coarsest grids; give none (its (0, 1) are implied) "
                "or bounds whose midpoint lies in (0, 1]")

    def format(self, number):
        """False or True at 0 and 1; any other axis number (a released bound such as
        0.9975) as the number, never rounded to a truth value."""
        return bool(number) if number in (0.0, 1.0) else float(number)


class NumberKind(ColumnKind):
    """Numbers of every dtype (and ``object`` columns of numbers): the value itself."""

    name = "number"

    def detects(self, dtype) -> bool:
        return getattr(dtype, "kind", None) in ("i", "u", "f") or is_decimal(dtype)

    def claims(self, dtype, bounds) -> bool:
        # a plain object column (Decimal from SQL numeric), never a string column
        return dtype == np.dtype(object) and all_bounds(bounds, is_number)

    def resolve(self, dtype, options):
        """Refuse a column of times or durations named a number: read as one, a
        time is its storage ticks, whose unit is the dtype's accident (microseconds
        from one reader, nanoseconds from another), not one documented rule."""
        if holds_times(dtype):
            raise InvalidParameterError(
                f"the column holds times or durations (dtype {dtype}), which kind "
                "'number' would read as their storage ticks; dates and times are read "
                "as 'timestamp' (seconds since the epoch, UTC) and durations as "
                "'timedelta' (seconds) without naming a kind; convert other temporal "
                "types (times of day, calendar intervals) to numbers first")
        return super().resolve(dtype, options)

    def axis(self, series):
        return number_axis(series)


def reads_as_number(dtype, bounds=None) -> bool:
    """Whether a column of ``dtype`` whose bounds are ``bounds`` is read as its
    numbers: booleans, integers, floats, decimals, and ``object`` columns
    (``Decimal`` from SQL ``numeric``) given bounds that are numbers."""
    number = NumberKind()
    return BooleanKind().detects(dtype) or number.detects(dtype) or number.claims(dtype, bounds)


def number_axis(series: pd.Series) -> np.ndarray:
    """:func:`float_axis` of a column of numbers; an ``object`` column holding
    anything else (a string, even one that reads as a number) is refused,
    naming the column and its dtype."""
    if is_object(series.dtype) and not holds_numbers(series):
        raise column_error(series.name, series.dtype, "holds values that are not numbers")
    return float_axis(series)


def is_object(dtype) -> bool:
    """Whether ``dtype`` is ``object`` (not a ``category``)."""
    return getattr(dtype, "kind", None) == "O" and not isinstance(dtype, pd.CategoricalDtype)


def is_number(value) -> bool:
    """Whether ``value`` is a real number (not a bool)."""
    return isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(
        value, (bool, np.bool_))


def all_bounds(bounds, test) -> bool:
    """Whether ``bounds`` is a pair whose two ends pass ``test``."""
    if isinstance(bounds, (list, tuple)) and len(bounds) == 2:
        return all(test(v) for v in bounds)
    return False


#: Text pandas reads as the clock when it converts it, not as a date.
CLOCK_WORDS = ("now", "today")


def infers_numbers(series: pd.Series) -> bool:
    """Whether an ``object`` column holds numbers (ints, floats, ``Decimal``)."""
    inferred = pd.api.types.infer_dtype(series, skipna=True)
    return inferred in ("integer", "floating", "decimal", "mixed-integer-float")


def text_of_numbers(series: pd.Series) -> bool:
    """Whether every non-null value of a text column reads as a number."""
    try:
        pd.to_numeric(series.dropna(), errors="raise")
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def reads_as_duration(value) -> bool:
    """Whether ``value`` is a duration, or text with a unit that reads as one."""
    if isinstance(value, (_dt.timedelta, np.timedelta64)):
        return True
    if not isinstance(value, str) or text_of_numbers(pd.Series([value])):
        return False
    try:
        return pd.Timedelta(value) is not pd.NaT
    except (TypeError, ValueError, OverflowError):
        return False


def bare_numbers(series: pd.Series) -> bool:
    """Whether some value of a text (or ``object``) column is a number written as
    text, or a number: a duration without a unit."""
    if not (is_object(series.dtype) or pd.api.types.is_string_dtype(series.dtype)):
        return False
    values = series.dropna()
    numeric = values.map(lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool))
    return bool(pd.to_numeric(values[numeric.astype(bool)].astype(str), errors="coerce")
                .notna().any()) if len(values) else False


def parses_as_time(text: str) -> bool:
    """Whether ``text`` reads as a date or time (as a bound: an ``object`` column
    with such bounds is read as times, not as categories)."""
    try:
        return pd.Timestamp(text) is not pd.NaT
    except (TypeError, ValueError, OverflowError):
        return False
