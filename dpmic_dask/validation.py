"""Data-independent argument checks, run before any data is read.

Functions here look at types, shapes, dtypes and user-supplied parameters only.
The one exception is :func:`require_no_missing`, which scans for missing values;
its message reports *which argument* has them, never where or how many.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InvalidDataError, InvalidParameterError, MissingValuesError

MIN_ROWS = 4


def check_bounds(bounds, name: str) -> tuple[float, float]:
    """Return public bounds ``(lo, hi)`` as floats after checking them.

    Bounds must be two finite real numbers with ``lo < hi`` and a finite width.
    """
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"{name} must be a pair (lo, hi) of public bounds"
        ) from None
    for value in (lo, hi):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidParameterError(f"{name} must hold two real numbers")
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InvalidParameterError(f"{name} must be finite")
    if not lo < hi:
        raise InvalidParameterError(f"{name} must satisfy lo < hi")
    if not math.isfinite(hi - lo):
        raise InvalidParameterError(f"{name} is too wide: hi - lo overflows a double")
    return lo, hi


def check_max_cells(B, name: str = "B") -> int:
    """Check the maximum grid size ``B`` (an integer >= 4)."""
    if isinstance(B, bool) or not isinstance(B, numbers.Integral):
        raise InvalidParameterError(f"{name} must be an integer >= 4")
    if B < 4:
        raise InvalidParameterError(f"{name} must be an integer >= 4")
    return int(B)


def check_clump_factor(c, name: str = "c") -> int:
    """Check the master-grid factor ``c`` (an integer >= 1)."""
    if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1")
    return int(c)


def as_numeric_array(values, name: str) -> np.ndarray:
    """Return ``values`` as a one-dimensional float64 array.

    Accepts NumPy arrays, pandas Series and sequences of real numbers, judged by
    dtype: booleans and integers are widened, objects and strings are refused.
    """
    array = np.asarray(values)
    if array.ndim != 1:
        raise InvalidDataError(f"{name} must be one-dimensional")
    kind = array.dtype.kind
    if kind not in "biuf":
        raise InvalidDataError(
            f"{name} must be numeric (got dtype kind {kind!r}); "
            "convert or encode it before computing MIC"
        )
    return np.ascontiguousarray(array, dtype=np.float64)


def require_no_missing(array: np.ndarray, name: str) -> None:
    """Refuse NaN in ``array`` (the non-private functions have no null policy)."""
    if np.isnan(array).any():
        raise MissingValuesError(
            f"{name} contains missing values (NaN); drop or fill them first"
        )


def check_pair(x, y, names=("x", "y")) -> tuple[np.ndarray, np.ndarray]:
    """Convert and check a pair of columns of equal length with at least 4 rows."""
    xa = as_numeric_array(x, names[0])
    ya = as_numeric_array(y, names[1])
    if xa.shape[0] != ya.shape[0]:
        raise InvalidDataError(
            f"{names[0]} and {names[1]} must have the same length"
        )
    if xa.shape[0] < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    require_no_missing(xa, names[0])
    require_no_missing(ya, names[1])
    return xa, ya
