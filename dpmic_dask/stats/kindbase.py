"""The column kind protocol (:class:`ColumnKind`), the helpers every kind shares,
and the simple built-in kinds: ``boolean`` and ``number``. The registry and the
conversion of a request's arguments and frames are :mod:`dpmic_dask.stats.kinds`
(its docstring documents every built-in kind); times and durations are
:mod:`dpmic_dask.stats.timekind`.
"""

from __future__ import annotations

import decimal
import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd

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
    """float64 with NaN for nulls; a float64 NumPy column is handed out as it is."""
    if series.dtype == FLOAT64:
        return series.to_numpy()
    try:
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError, decimal.InvalidOperation, ArithmeticError):
        raise column_error(series.name, series.dtype,
                            "holds values that are not numbers") from None


def arrow_type(dtype):
    """The pyarrow type of a pyarrow-backed dtype, else ``None``."""
    return getattr(dtype, "pyarrow_dtype", None)


class BooleanKind(ColumnKind):
    """Booleans: False -> 0, True -> 1, bounds ``(0, 1)`` implied by the type."""

    name = "boolean"
    implied_bounds = (0.0, 1.0)

    def detects(self, dtype) -> bool:
        return getattr(dtype, "kind", None) == "b"

    def axis(self, series):
        return float_axis(series)

    def format(self, number):
        return bool(number >= 0.5)


class NumberKind(ColumnKind):
    """Numbers of every dtype (and ``object`` columns of numbers): the value itself."""

    name = "number"

    def detects(self, dtype) -> bool:
        if getattr(dtype, "kind", None) in ("i", "u", "f"):
            return True
        arrow = arrow_type(dtype)
        if arrow is not None:
            import pyarrow as pa

            return bool(pa.types.is_decimal(arrow))
        return False

    def claims(self, dtype, bounds) -> bool:
        # a plain object column (Decimal from SQL numeric), never a string column
        return dtype == np.dtype(object) and all_bounds(bounds, is_number)

    def axis(self, series):
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
