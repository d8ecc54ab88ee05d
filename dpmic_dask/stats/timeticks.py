"""Time units and ticks: seconds per tick of each unit, and integer ticks (NumPy
or Arrow dates, time stamps, durations) as seconds, exactly where a double
allows. Used by :mod:`dpmic_dask.stats.timekind` and the row keys of
:mod:`dpmic_dask.release.rowhash`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Seconds per tick of a time unit (calendar units such as months have no fixed length).
_SECONDS = {"W": 604800, "D": 86400, "h": 3600, "m": 60, "s": 1}


_TICKS = {"ms": 10**3, "us": 10**6, "ns": 10**9}


UNITS = tuple(_SECONDS) + tuple(_TICKS)


#: Numbers given as time bounds are seconds; beyond this they are refused.
MAX_SECONDS = 1e11


def per_second(unit: str) -> tuple[int, int]:
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
    multiply, divide = per_second(unit)
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


def exact_seconds(ticks: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """int64 ``ticks`` of ``unit`` as int64 whole seconds and nanoseconds beyond
    them (floored), exact for every unit: an instant's own numbers, whatever
    unit holds it."""
    multiply, divide = per_second(unit)
    ticks = np.asarray(ticks, dtype=np.int64)
    if divide == 1:
        return ticks * multiply, np.zeros_like(ticks)
    whole, rest = np.divmod(ticks, divide)
    return whole, rest * (10**9 // divide)


def arrow_ticks(arr) -> tuple[np.ndarray, str, np.ndarray]:
    """An Arrow array (or chunked array) of dates, time stamps or durations as
    int64 ticks, their unit (``"D"`` for ``date32``) and where values are
    missing. Nulls are filled in Arrow before the NumPy view: with a null,
    pyarrow gives float64, which rounds tick counts past 2**53."""
    kind = arr.type
    null = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_date32(kind):
        ticks, unit = pc.cast(pc.cast(arr, pa.int32()), pa.int64()), "D"
    elif pa.types.is_date64(kind):
        ticks, unit = pc.cast(arr, pa.int64()), "ms"
    else:
        ticks, unit = pc.cast(arr, pa.int64()), kind.unit
    ints = np.asarray(pc.fill_null(ticks, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return ints, unit, null


__all__ = ["MAX_SECONDS", "UNITS", "arrow_ticks", "exact_seconds", "per_second",
           "seconds_of_ticks"]
