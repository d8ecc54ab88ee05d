"""What a result's report and page say that is read off the result alone: the
order of columns on a map (related columns side by side) and the lines about
public bounds. Shared by the text report and the HTML page."""

from __future__ import annotations

import numpy as np


def spectral_order(matrix: np.ndarray) -> np.ndarray:
    """Column order that places strongly related columns next to each other: the
    Fiedler vector of the graph whose weights are the released values (NaN as 0)."""
    weights = np.nan_to_num(np.asarray(matrix, dtype=float), nan=0.0)
    weights = (weights + weights.T) / 2.0
    np.fill_diagonal(weights, 0.0)
    laplacian = np.diag(weights.sum(axis=1)) - weights
    _, vectors = np.linalg.eigh(laplacian)
    fiedler = vectors[:, 1] if vectors.shape[1] > 1 else vectors[:, 0]
    return np.argsort(fiedler, kind="stable")


#: The report's line when public bounds were not checked.
UNCHECKED = ("Public bounds: used as given, not checked against the data (bounds_check="
             "<share> checks them privately, inside the same charge).")


def said_bounds(given) -> str:
    """Public bounds ``(lo, hi)`` as ``[lo, hi]``, or a list's first values and its
    length (the whole list is in ``public_bounds``)."""
    if isinstance(given, list):
        shown = ", ".join(repr(v) for v in given[:8])
        more = f", ... ({len(given)} in all)" if len(given) > 8 else ""
        return f"[{shown}{more}] (others: 'other')"
    lo, hi = (_exactly(v) if isinstance(v, float) else str(v) for v in given)
    return f"[{lo}, {hi}]"


def _exactly(value: float) -> str:
    """The shortest text of ``value`` that reads back as it (``0.1``, ``1234567``)."""
    if value.is_integer() and abs(value) < 2.0 ** 53:
        return str(int(value))
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def report_lines(result) -> list[str]:
    """What ``result.report()`` says about public bounds: the check's lines, or that
    the public bounds were used as given (no line when every column with bounds
    had them released privately: categorical columns have lists, not bounds)."""
    found = getattr(result, "bounds_check", None)
    note = getattr(result, "bounds_note", None)
    if found is not None:  # and what it left out, if anything
        return [*found.lines(), *([note] if note else [])]
    if note:
        return [note]
    if "not checked (per unit" in getattr(result.privacy, "statement", ""):
        return []  # said once, by the plan's note in the statement
    private = result.private_bounds
    bounded = set(result.columns) - set(getattr(result, "private_categories", None) or {})
    if private is not None and bounded <= set(private.bounds):
        return []
    return [UNCHECKED]


__all__ = ["UNCHECKED", "report_lines", "said_bounds", "spectral_order"]
