"""Times and durations as column kinds: ``timestamp`` (seconds since
1970-01-01 00:00:00 UTC; a naive value is taken to be UTC) and ``timedelta``
(a length in seconds), from ``datetime64``, ``timedelta64``, pyarrow times and
durations, ``object`` columns of dates and times, strings cast explicitly, or
numbers cast explicitly **with their unit** (see :mod:`dpmic_dask.stats.kinds`).

A number is a time only in a unit: epoch seconds read as nanoseconds all fall in
the first two seconds of 1970, clamp into one bin and release noise around 0. So
a cast of a numeric column without a ``unit`` is refused from the schema, before
anything is read or charged (:class:`UnitNeededError`), and an ``object`` column
found to hold numbers is refused the same way when it is read (before the
charge); neither message quotes a value.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.kindbase import (
    CLOCK_WORDS,
    ColumnKind,
    NumberKind,
    all_bounds,
    arrow_type,
    bare_numbers,
    column_error,
    float_axis,
    infers_numbers,
    is_number,
    is_object,
    parses_as_time,
    reads_as_duration,
    text_of_numbers,
)
from dpmic_dask.stats.timeticks import (
    MAX_SECONDS,
    UNITS,
    arrow_ticks,
    per_second,
    seconds_of_ticks,
)


def holds_numbers(dtype) -> bool:
    """Whether ``dtype`` is a numeric dtype (integers, unsigned, floats of every
    flavour, pyarrow decimals): values that are times only in a unit."""
    return NumberKind().detects(dtype)


def unit_hint(column, kind: str) -> str:
    """How to give a cast its unit, in the Python API and in a job file."""
    return (f"kinds={{{column!r}: ({kind!r}, 's')}} (in a job file columns.{column}.unit = "
            f"\"s\"; units: {', '.join(UNITS)})")


class UnitNeededError(InvalidParameterError):
    """A cast of numbers to a time kind without their unit (raised by
    :meth:`TimeKind.resolve`, which does not know the column's name;
    :func:`~dpmic_dask.stats.kinds.column_kind` words it with :meth:`line`)."""

    def __init__(self, dtype, kind: str):
        self.dtype, self.kind = str(dtype), kind
        super().__init__(f"a cast of {self.dtype} numbers to {kind} needs their unit "
                         f"(one of {', '.join(UNITS)})")

    def line(self, column, kind: str | None = None) -> str:
        """One line naming ``column`` and its dtype (never a value), and the fix."""
        kind = kind or self.kind
        return (f"column {column!r} holds {self.dtype} numbers; a cast to {kind} needs "
                f"their unit: {unit_hint(column, kind)}")


def _whole_units_within(lo: float, hi: float, unit: str) -> bool:
    """Whether some whole multiple of ``unit`` lies in ``[lo, hi]`` (seconds;
    exact arithmetic, so a bound on a multiple counts)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return True  # refused by the request's checks, with their wording
    multiply, divide = per_second(unit)
    step = Fraction(multiply, divide)
    return math.floor(Fraction(hi) / step) >= math.ceil(Fraction(lo) / step)


def _integer_span(dtype, unit: str) -> tuple[float, float] | None:
    """The seconds an integer ``dtype`` can hold in ``unit`` (``None``: not integers)."""
    base = getattr(dtype, "numpy_dtype", dtype)
    try:
        info = np.iinfo(base)
    except (TypeError, ValueError):
        return None
    multiply, divide = per_second(unit)
    return (float(info.min) * multiply / divide, float(info.max) * multiply / divide)


@dataclass(frozen=True)
class TimeKind(ColumnKind):
    """Times as seconds since the epoch (UTC), or durations as seconds.

    ``tz`` is the column's time zone (for reports only), ``date`` whether it
    holds dates (reports print dates), ``unit`` the unit of numbers cast to
    times (``None``: numbers are refused; strings and dates are parsed),
    ``span`` the seconds an integer column cast in ``unit`` can hold and
    ``source`` its dtype (for :meth:`check_bounds`)."""

    name: str = "timestamp"
    duration: bool = False
    tz: str | None = None
    date: bool = False
    unit: str | None = None
    cast: bool = False
    span: tuple[float, float] | None = None
    source: str | None = None

    def detects(self, dtype) -> bool:
        kind = getattr(dtype, "kind", None)
        return kind == ("m" if self.duration else "M")

    def claims(self, dtype, bounds) -> bool:
        if self.duration:
            return is_object(dtype) and all_bounds(
                bounds, lambda v: isinstance(v, (_dt.timedelta, np.timedelta64)))
        return is_object(dtype) and all_bounds(
            bounds, lambda v: isinstance(v, (_dt.date, np.datetime64)) or (
                isinstance(v, str) and parses_as_time(v)))

    def resolve(self, dtype, options):
        options = dict(options)
        unit = options.pop("unit", None)
        if options:
            raise InvalidParameterError(
                f"kind {self.name!r} takes only the option 'unit', not {sorted(options)}")
        if unit is not None and unit not in UNITS:
            raise InvalidParameterError(
                f"unit must be one of {', '.join(UNITS)} (got an unknown unit)")
        tz = getattr(dtype, "tz", None)
        arrow = arrow_type(dtype)
        date = False
        if arrow is not None:
            tz = getattr(arrow, "tz", None)
            date = bool(pa.types.is_date(arrow))
        cast = not self.detects(dtype)
        span = None
        if cast and holds_numbers(dtype):
            if unit is None:  # epoch seconds read as nanoseconds: every value in one bin
                raise UnitNeededError(dtype, self.name)
            span = _integer_span(dtype, unit)
        return replace(self, tz=None if tz is None else str(tz), date=date, unit=unit,
                       cast=cast, span=span, source=str(dtype) if cast else None)

    def check_bounds(self, lo, hi, what):
        """Refuse bounds outside every time an integer column cast in its unit can
        hold (int32 milliseconds reach only 25 days around 1970): every value would
        be clamped to one end. The span comes from the dtype, never the data."""
        if self.span is None:
            return
        low, high = self.span
        try:
            outside = float(hi) < low or float(lo) > high
        except (TypeError, ValueError):
            return  # refused by the request's checks, with their wording
        if outside:
            raise InvalidParameterError(
                f"{what}: the column's {self.source} values in unit {self.unit!r} can only "
                f"be {self._plural()} from {self._shown(low)} to {self._shown(high)}, none "
                "inside these bounds (is the unit right?)")
        if not _whole_units_within(float(lo), float(hi), self.unit or "s"):
            # integers in unit D are whole days: bounds of (19700, 20100) read as
            # seconds hold none, and every value would be clamped to one end
            raise InvalidParameterError(
                f"{what}: the column's {self.source} values are whole {self.unit!r} "
                f"(numbers cast in unit {self.unit!r}), and none lies inside these bounds, "
                "which are read in seconds since the epoch as numbers: give them as "
                f"{'durations' if self.duration else 'dates or times'}, or in seconds")

    def _shown(self, number: float) -> str:
        value = self.format(number)
        if isinstance(value, float):
            return f"{value:.6g}"
        if isinstance(value, pd.Timestamp):
            return value.tz_convert("UTC").strftime("%Y-%m-%d %H:%M:%S UTC")
        return str(value)

    def axis(self, series):
        dtype = series.dtype
        if self.detects(dtype):
            if arrow_type(dtype) is not None:
                return self._arrow_axis(series)
            unit, count = np.datetime_data(
                dtype.base if isinstance(dtype, np.dtype) else np.dtype(f"M8[{dtype.unit}]"))
            null = series.isna().to_numpy()
            try:
                return seconds_of_ticks(series.array.asi8, unit, count, null)
            except ValueError:
                raise column_error(series.name, dtype,
                                    "has a calendar unit of no fixed length") from None
        return self._cast_axis(series)

    def _arrow_axis(self, series):
        arr = pa.chunked_array([pa.Array.from_pandas(series)]) if not isinstance(
            series.array, pd.arrays.ArrowExtensionArray) else pa.chunked_array(
                series.array.__arrow_array__())
        ticks, unit, null = arrow_ticks(arr)
        return seconds_of_ticks(ticks, unit, null=null)

    def _cast_axis(self, series):
        """A column that is not of a time dtype, read as times (or durations)."""
        dtype = series.dtype
        if getattr(dtype, "kind", "") == "b":
            raise column_error(series.name, dtype, f"holds booleans, which are not "
                                                   f"{self._plural()}")
        if self.unit is not None and (getattr(dtype, "kind", "") in "iuf" or is_object(dtype)):
            numbers_ = float_axis(series)
            multiply, divide = per_second(self.unit)
            return numbers_ * multiply / divide
        if self.unit is None and (holds_numbers(dtype) or (
                is_object(dtype) and infers_numbers(series))):
            # numbers without a unit (an object column's are seen only when read)
            raise column_error(series.name, dtype,
                                f"holds numbers; a cast to {self.name} needs their unit: "
                                f"{unit_hint(series.name, self.name)}")
        if self.duration and bare_numbers(series):
            # pandas reads a bare number of text as nanoseconds ("5" is 5 ns): a
            # unit is never guessed
            what = (f"holds numbers as text; a cast to {self.name} needs their unit: "
                    f"{unit_hint(series.name, self.name)}" if text_of_numbers(series) else
                    "holds durations written as bare numbers, without a unit (pandas "
                    "would read them as nanoseconds); write each with its unit ('90 s', "
                    "'2 days')")
            raise column_error(series.name, dtype, what)
        try:
            if self.duration:
                converted = pd.to_timedelta(series)
            else:
                # ISO 8601 text only: other layouts are read by guessing, value by
                # value ("01/02/2020" month first, "13/02/2020" day first); pandas
                # reads "now" and "today" as the clock at conversion: not dates either
                if series.isin(CLOCK_WORDS).any():
                    raise ValueError
                converted = pd.to_datetime(series, utc=True, format="ISO8601")
        except (TypeError, ValueError, OverflowError):
            what = f"holds values that are not {self._plural()}"
            if not self.duration:
                what += (" in ISO 8601 (2024-01-31, 2024-01-31 08:00:00+02:00); other "
                         "layouts of text are ambiguous (01/02/2024: January or "
                         "February?) and are not guessed: convert the column with its "
                         "format first (pandas.to_datetime(..., format='%d/%m/%Y'))")
            if text_of_numbers(series):
                what = (f"holds numbers as text; a cast to {self.name} needs their unit: "
                        f"{unit_hint(series.name, self.name)}")
            raise column_error(series.name, dtype, what) from None
        return replace(self, cast=False).axis(converted)

    def _plural(self) -> str:
        return "durations" if self.duration else "dates or times"

    def bound(self, value, what):
        if is_number(value):
            # already seconds (e.g. released private bounds); a number beyond
            # +-1e11 s (3,000 years) is milliseconds or nanoseconds by mistake
            if abs(float(value)) > MAX_SECONDS:
                since = "" if self.duration else " (since the epoch, UTC)"
                given = "durations" if self.duration else "dates and times"
                raise InvalidParameterError(
                    f"{what}: numbers for a {self.name} column are seconds{since}; this one "
                    f"is beyond +-{MAX_SECONDS:.0e} s -- give {given}, or seconds")
            return value
        try:
            if self.duration:
                if not isinstance(value, (str, _dt.timedelta, np.timedelta64)):
                    raise TypeError
                delta = pd.Timedelta(value)
                if delta is pd.NaT:
                    raise ValueError
                return delta.value / 1e9  # Timedelta.value is in nanoseconds
            if not isinstance(value, (str, _dt.date, np.datetime64)) or (
                    isinstance(value, str) and value in CLOCK_WORDS):
                raise TypeError
            # text in ISO 8601 only, as the column's own text (never guessed)
            stamp = (pd.to_datetime(value, format="ISO8601") if isinstance(value, str)
                     else pd.Timestamp(value))
        except (TypeError, ValueError, OverflowError):
            if isinstance(value, str) and text_of_numbers(pd.Series([value])):
                raise InvalidParameterError(
                    f"{what} holds a number written as text: write numbers without quotes "
                    f"(bounds = [0, 1]), or give {self._plural()} in ISO 8601") from None
            iso = "" if self.duration else " (text in ISO 8601: 2024-01-31)"
            other = ""
            if not self.duration and reads_as_duration(value):
                other = ("; these read as durations: for a column of durations name its "
                         "kind (kinds={...: 'timedelta'}; in a job file kind = "
                         "\"timedelta\")")
            raise InvalidParameterError(
                f"{what} must be a pair of {self._plural()}{iso} (or numbers of seconds) "
                f"for a {self.name} column{other}") from None
        if stamp is pd.NaT:
            raise InvalidParameterError(f"{what} must not be missing")
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return _stamp_seconds(stamp)

    def format(self, number):
        """A released number of seconds as a time for people; the number itself
        where no time can show it (beyond what pandas holds, or a year past 9999,
        which ``strftime`` cannot print)."""
        if not np.isfinite(number):
            return float(number)
        try:
            if self.duration:  # to the millisecond: bounds print readably
                return pd.Timedelta(seconds=float(number)).round("ms")
            stamp = _stamp(float(number))
        except (OverflowError, ValueError):
            return float(number)
        if not 1 <= stamp.year <= 9999:
            return float(number)
        if self.date:
            return stamp.date()
        return stamp.tz_convert(self.tz) if self.tz else stamp

    def describe(self) -> str:
        if self.duration:
            return "timedelta (seconds)"
        return "timestamp (seconds since the epoch, UTC)"


def _stamp(seconds: float) -> pd.Timestamp:
    """``seconds`` since the epoch as a UTC time: to the nanosecond where pandas
    holds it (years 1677-2262), else to the microsecond (years to 294,000)."""
    try:
        return pd.Timestamp(seconds, unit="s", tz="UTC")
    except (OverflowError, ValueError):
        return pd.Timestamp(np.datetime64(round(seconds * 1e6), "us")).tz_localize("UTC")


def _stamp_seconds(stamp: pd.Timestamp) -> float:
    ticks = stamp.as_unit("us").asm8.astype("datetime64[us]").view(np.int64)
    return float(seconds_of_ticks(np.array([ticks]), "us")[0])
