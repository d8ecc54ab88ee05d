"""Times and durations as column kinds: ``timestamp`` (seconds since
1970-01-01 00:00:00 UTC; a naive value is taken to be UTC) and ``timedelta``
(a length in seconds), from ``datetime64``, ``timedelta64``, pyarrow times and
durations, ``object`` columns of dates and times, or strings and numbers cast
explicitly in a ``unit`` (see :mod:`dpmic_dask.stats.kinds`).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.kindbase import (
    ColumnKind,
    all_bounds,
    arrow_type,
    column_error,
    float_axis,
    is_number,
    is_object,
)

#: Seconds per tick of a time unit (calendar units such as months have no fixed length).
_SECONDS = {"W": 604800, "D": 86400, "h": 3600, "m": 60, "s": 1}


_TICKS = {"ms": 10**3, "us": 10**6, "ns": 10**9}


UNITS = tuple(_SECONDS) + tuple(_TICKS)


#: Numbers given as time bounds are seconds; beyond this they are refused.
MAX_SECONDS = 1e11


def _per_second(unit: str) -> tuple[int, int]:
    """``(multiply, divide)``: seconds = ticks * multiply / divide."""
    if unit in _SECONDS:
        return _SECONDS[unit], 1
    if unit in _TICKS:
        return 1, _TICKS[unit]
    raise ValueError(unit)


def seconds_of_ticks(ticks: np.ndarray, unit: str, count: int = 1,
                     null: np.ndarray | None = None) -> np.ndarray:
    """int64 ``ticks`` of ``count * unit`` as float64 seconds (NaN where ``null``).

    Whole seconds and the remainder are converted apart, so a nanosecond time
    stamp keeps the precision a double has at its magnitude (about 2e-7 s now)."""
    multiply, divide = _per_second(unit)
    ticks = np.asarray(ticks, dtype=np.int64)
    if null is not None and null.any():
        ticks = np.where(null, 0, ticks)
    if divide == 1:
        out = ticks.astype(np.float64) * float(multiply * count)
    else:
        whole, rest = np.divmod(ticks, divide)
        out = (whole.astype(np.float64) + rest.astype(np.float64) / divide) * count
    if null is not None and null.any():
        out[null] = np.nan
    return out


@dataclass(frozen=True)
class TimeKind(ColumnKind):
    """Times as seconds since the epoch (UTC), or durations as seconds.

    ``tz`` is the column's time zone (for reports only), ``date`` whether it
    holds dates (reports print dates), ``unit`` the unit of numbers cast to
    times (``None``: numbers are refused; strings and dates are parsed)."""

    name: str = "timestamp"
    duration: bool = False
    tz: str | None = None
    date: bool = False
    unit: str | None = None
    cast: bool = False

    def detects(self, dtype) -> bool:
        kind = getattr(dtype, "kind", None)
        return kind == ("m" if self.duration else "M")

    def claims(self, dtype, bounds) -> bool:
        if self.duration:
            return is_object(dtype) and all_bounds(
                bounds, lambda v: isinstance(v, (_dt.timedelta, np.timedelta64)))
        return is_object(dtype) and all_bounds(
            bounds, lambda v: isinstance(v, (_dt.date, np.datetime64)) or (
                isinstance(v, str) and _parses_as_time(v)))

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
            import pyarrow as pa

            tz = getattr(arrow, "tz", None)
            date = bool(pa.types.is_date(arrow))
        cast = not self.detects(dtype)
        return replace(self, tz=None if tz is None else str(tz), date=date, unit=unit,
                       cast=cast)

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
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.chunked_array([pa.Array.from_pandas(series)]) if not isinstance(
            series.array, pd.arrays.ArrowExtensionArray) else pa.chunked_array(
                series.array.__arrow_array__())
        kind = arr.type
        null = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if pa.types.is_date32(kind):
            ticks, unit = pc.cast(arr, pa.int32()).cast(pa.int64()), "D"
        elif pa.types.is_date64(kind):
            ticks, unit = pc.cast(arr, pa.int64()), "ms"
        else:
            ticks, unit = pc.cast(arr, pa.int64()), kind.unit
        ints = pc.fill_null(ticks, 0).to_numpy()
        return seconds_of_ticks(ints, unit, 1, null)

    def _cast_axis(self, series):
        """A column that is not of a time dtype, read as times (or durations)."""
        dtype = series.dtype
        if self.unit is not None and (getattr(dtype, "kind", "") in "iuf" or is_object(dtype)):
            numbers_ = float_axis(series)
            multiply, divide = _per_second(self.unit)
            return numbers_ * multiply / divide
        try:
            if self.duration:
                converted = pd.to_timedelta(series)
            else:
                converted = pd.to_datetime(series, utc=True, format="mixed")
        except (TypeError, ValueError, OverflowError):
            raise column_error(series.name, dtype,
                                f"holds values that are not {self._plural()}") from None
        return replace(self, cast=False).axis(converted)

    def _plural(self) -> str:
        return "durations" if self.duration else "dates or times"

    def bound(self, value, what):
        if is_number(value):
            # already seconds (e.g. released private bounds); a number beyond
            # +-1e11 s (3,000 years) is milliseconds or nanoseconds by mistake
            if abs(float(value)) > MAX_SECONDS:
                raise InvalidParameterError(
                    f"{what}: numbers for a {self.name} column are seconds (since the epoch, "
                    f"UTC); this one is beyond +-{MAX_SECONDS:.0e} s -- give dates and times, "
                    "or seconds")
            return value
        try:
            if self.duration:
                if not isinstance(value, (str, _dt.timedelta, np.timedelta64)):
                    raise TypeError
                delta = pd.Timedelta(value)
                if delta is pd.NaT:
                    raise ValueError
                return delta.value / 1e9  # Timedelta.value is in nanoseconds
            if not isinstance(value, (str, _dt.date, np.datetime64)):
                raise TypeError
            stamp = pd.Timestamp(value)
        except (TypeError, ValueError, OverflowError):
            raise InvalidParameterError(
                f"{what} must be a pair of {self._plural()} (or numbers of seconds) for "
                f"a {self.name} column") from None
        if stamp is pd.NaT:
            raise InvalidParameterError(f"{what} must not be missing")
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return _stamp_seconds(stamp)

    def format(self, number):
        if not np.isfinite(number):
            return float(number)
        if self.duration:  # to the millisecond: bounds print readably
            return pd.Timedelta(seconds=float(number)).round("ms")
        try:
            stamp = pd.Timestamp(float(number), unit="s", tz="UTC")
        except (OverflowError, ValueError):
            return float(number)
        if self.date:
            return stamp.date()
        return stamp.tz_convert(self.tz) if self.tz else stamp

    def describe(self) -> str:
        if self.duration:
            return "timedelta (seconds)"
        return "timestamp (seconds since the epoch, UTC)"


def _stamp_seconds(stamp: pd.Timestamp) -> float:
    ticks = stamp.as_unit("us").asm8.astype("datetime64[us]").view(np.int64)
    return float(seconds_of_ticks(np.array([ticks]), "us")[0])


def _parses_as_time(text: str) -> bool:
    try:
        return pd.Timestamp(text) is not pd.NaT
    except (TypeError, ValueError, OverflowError):
        return False
