"""Data-independent argument checks, run before any data is read.

Functions here look at types, shapes, dtypes and user-supplied parameters only.
The one exception is :func:`require_no_missing`, which scans for missing values;
its message reports *which argument* has them, never where or how many.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Mapping

import numpy as np

from dpmic_dask.errors import InvalidDataError, InvalidParameterError, MissingValuesError

MIN_ROWS = 4


def finite_real(value, name: str, what: str = "a finite number") -> float:
    """``value`` as a float if it is a finite real number (bools and strings are not);
    otherwise :class:`InvalidParameterError` naming ``name``, never the value."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        raise InvalidParameterError(f"{name} must be {what}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidParameterError(f"{name} must be {what}")
    return number


def check_bounds(bounds, name: str) -> tuple[float, float]:
    """Return public bounds ``(lo, hi)`` as floats after checking them.

    Bounds must be two finite real numbers with ``lo < hi`` and a finite width;
    a pair of booleans counts as 0 and 1, so ``(False, True)`` bounds a boolean
    column.
    """
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"{name} must be a pair (lo, hi) of public bounds"
        ) from None
    # (False, True) bounds a boolean column: a pair of booleans counts as 0 and 1
    # (a boolean beside a number, like (True, 2), is more likely a slip: refused)
    if all(isinstance(v, (bool, np.bool_)) for v in (lo, hi)):
        lo, hi = float(lo), float(hi)
    lo = finite_real(lo, name, "a pair of two finite real numbers")
    hi = finite_real(hi, name, "a pair of two finite real numbers")
    if not lo < hi:
        raise InvalidParameterError(f"{name} must satisfy lo < hi")
    if not math.isfinite(hi - lo):
        raise InvalidParameterError(f"{name} is too wide: hi - lo overflows a double")
    if hi - lo < RESOLVED_VALUES * math.ulp(max(abs(lo), abs(hi))):
        # values are read as doubles: near 2**64 the spacing of doubles is 4096, so
        # bounds 1000 apart there hold one or two of them and every value between
        # them rounds together (a related pair read as unrelated)
        raise InvalidParameterError(
            f"{name} is too narrow for its magnitude: fewer than {RESOLVED_VALUES:,} "
            "doubles lie between them, so the values they hold round together when "
            "read as doubles (integers beyond 2**53 do); subtract a public offset from "
            "the column first")
    return lo, hi


#: Bounds must hold at least this many distinct doubles (:func:`check_bounds`): as
#: many as a grid's finest equipartition has bins at the default B. A 10 ms window
#: of epoch seconds holds about 40,000; bounds 1000 wide near 2**64 hold none.
RESOLVED_VALUES = 2**10


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


#: What to do about missing values in a release's columns, by default.
FILL_HINT = ('fill them with public values (nulls="fill" and fill={column: value}; in a '
             'job file privacy.nulls = "fill" and columns.<name>.fill), or drop their rows '
             '(nulls="drop" with a public min_rows)')


def refuse_missing(columns, missing, hint: str = FILL_HINT) -> None:
    """Refuse, before the charge, the ``columns`` whose ``missing`` flag is set (a
    first pass found a null there), naming the columns only."""
    names = [c for c, m in zip(columns, np.asarray(missing, dtype=bool)) if m]
    if names:
        raise MissingValuesError(
            f"column(s) {names} contain missing values; {hint} (nothing was charged)")


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


NULL_POLICIES = ("raise", "fill")


def is_one_fill(fill) -> bool:
    """``fill=0.0``: one public number for every column (not a bool)."""
    return isinstance(fill, (int, float, np.integer, np.floating)) and not isinstance(
        fill, (bool, np.bool_))


def missing_fill_message(columns) -> str:
    """The refusal of ``nulls="fill"`` without a fill value for ``columns``."""
    return (f"nulls='fill' needs a public fill value for every column it reads; fill gives "
            f"none for column(s) {list(columns)} (a column without missing values needs one "
            "too: which columns have missing values is not public). Add them to fill (in a "
            "job file columns.<name>.fill), or pass one number for every column (fill=0.0)")


def _dtype_is_numeric(dtype) -> bool:
    kind = getattr(dtype, "kind", "O")
    return kind in "biuf"


def check_unique_labels(names, selected) -> None:
    """Refuse a selected column whose label appears more than once in the frame."""
    names = list(names)
    repeated = sorted({str(c) for c in selected if names.count(c) > 1})
    if repeated:
        raise InvalidDataError(
            f"column label(s) {repeated} appear more than once in the frame; rename the "
            "duplicates so that each selected column is one column")


def check_column_list(columns, names) -> list:
    """``columns`` as a list: a list of column names of the frame (``names``),
    none repeated."""
    if isinstance(columns, str) or not hasattr(columns, "__iter__"):
        raise InvalidParameterError("columns must be a list of column names")
    selected = list(columns)
    missing = [c for c in selected if c not in names]
    if missing:
        raise InvalidParameterError(f"unknown column(s) selected: {missing}")
    if len(set(selected)) != len(selected):
        raise InvalidParameterError("columns must not repeat a column")
    return selected


def check_frame_request(dtypes, *, bounds, columns=None, nulls="raise", fill=None, names=None,
                        min_columns=2):
    """Validate a pairwise request against a frame's schema (no data is read).

    Parameters
    ----------
    dtypes : mapping column -> dtype (``frame.dtypes``)
    bounds : mapping column -> (lo, hi)
    columns : sequence of column names, or None for every column named in ``bounds``
        (in the frame's order)
    nulls : "raise" or "fill"
    fill : mapping column -> public fill value, or one number for every column
        (required with ``nulls="fill"``, for every column)

    names : how messages spell ``bounds[col]`` and ``fill[col]`` (an object with
        ``bounds(col)`` and ``fill(col)`` methods; default: the Python API's)

    Returns
    -------
    (columns, bounds, fill) as tuples aligned with ``columns``; ``fill`` is None
    for ``nulls="raise"``.
    """
    bounds_name = names.bounds if names is not None else (lambda col: f"bounds[{col!r}]")
    fill_name = names.fill if names is not None else (lambda col: f"fill[{col!r}]")

    names = list(dtypes.index) if hasattr(dtypes, "index") else list(dtypes)
    if not isinstance(bounds, Mapping):
        raise InvalidParameterError("bounds must be a mapping {column: (lo, hi)}")
    unknown = [c for c in bounds if c not in names]
    if unknown:
        raise InvalidParameterError(f"bounds given for unknown column(s): {unknown}")
    if columns is None:
        selected = [c for c in names if c in bounds]
    else:
        selected = check_column_list(columns, names)
        no_bounds = [c for c in selected if c not in bounds]
        if no_bounds:
            raise InvalidParameterError(
                f"public bounds are missing for column(s) {no_bounds}; bounds must come "
                "from domain knowledge, never from the data"
            )
    if len(selected) < min_columns:
        raise InvalidParameterError("at least two columns with bounds are needed"
                                    if min_columns == 2 else "no columns were named")
    check_unique_labels(names, selected)
    non_numeric = [c for c in selected if not _dtype_is_numeric(dtypes[c])]
    if non_numeric:
        raise InvalidDataError(f"column(s) {non_numeric} are not numeric")
    checked = tuple(check_bounds(bounds[c], bounds_name(c)) for c in selected)
    if nulls not in NULL_POLICIES:
        raise InvalidParameterError("nulls must be 'raise' or 'fill'")
    fills: tuple[float, ...] | None = None
    if nulls == "fill":
        if is_one_fill(fill):
            fill = dict.fromkeys(selected, fill)
        if not isinstance(fill, Mapping):
            raise InvalidParameterError(
                "nulls='fill' needs fill={column: public value inside its bounds} or one "
                "number for every column (fill=0.0)"
            )
        no_fill = [c for c in selected if c not in fill]
        if no_fill:
            raise InvalidParameterError(missing_fill_message(no_fill))
        values = []
        for c, (lo, hi) in zip(selected, checked):
            what = f"a finite number (or a boolean) inside {bounds_name(c)}"
            given = fill[c]
            # a boolean column's fill may be False or True (0 or 1, as its bounds are)
            value = (float(given) if isinstance(given, (bool, np.bool_))
                     else finite_real(given, fill_name(c), what))
            if not lo <= value <= hi:
                raise InvalidParameterError(f"{fill_name(c)} must be {what}")
            values.append(value)
        fills = tuple(values)
    elif fill is not None:
        raise InvalidParameterError("fill is only used with nulls='fill'")
    return tuple(selected), checked, fills
