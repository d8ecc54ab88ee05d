"""Data-dependent partitions for MICe (Reshef et al. 2016, as in minepy's ``mic_e``)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def equipartition_sorted(sorted_values, n_parts, out):
    """Greedy mass equipartition of sorted values that never splits ties.

    Parameters
    ----------
    sorted_values : float64[n], non-decreasing
    n_parts : int, desired number of parts (>= 1)
    out : int64[n], filled with the part of each position

    Returns
    -------
    int
        The realised number of parts (at most ``n_parts``; fewer when ties force it).

    Notes
    -----
    Runs of equal values are placed whole. A new part starts before a run when the
    current part is non-empty and adding the run would not bring its size closer to
    the target; the target is then reset to the remaining mass over the remaining
    parts, so the last part takes everything left.
    """
    n = sorted_values.shape[0]
    target = n / n_parts
    i = 0
    size = 0
    part = 0
    while i < n:
        run = 1
        while i + run < n and sorted_values[i + run] == sorted_values[i]:
            run += 1
        if size != 0 and abs(size + run - target) >= abs(size - target):
            part += 1
            size = 0
            target = (n - i) / (n_parts - part)
        for j in range(i, i + run):
            out[j] = part
        i += run
        size += run
    return part + 1


@njit(nogil=True, cache=True)
def clump_ids(sorted_values, labels, out):
    """Clumps of the axis to be grouped, given the fixed axis' parts.

    Parameters
    ----------
    sorted_values : float64[n], the grouped axis' values in non-decreasing order
    labels : int64[n], fixed-axis part of each point, in the same order
    out : int64[n], filled with the clump of each point (0, 1, ...)

    Returns
    -------
    int
        The number of clumps. A clump is a maximal run of consecutive points with the
        same fixed-axis part; points tied on the grouped axis whose parts differ form
        one clump of their own, so a cut never separates tied values.
    """
    n = sorted_values.shape[0]
    key = labels.copy()
    fresh = -1
    i = 0
    while i < n:
        run = 1
        mixed = False
        while i + run < n and sorted_values[i + run] == sorted_values[i]:
            if labels[i + run] != labels[i]:
                mixed = True
            run += 1
        if mixed:
            for j in range(i, i + run):
                key[j] = fresh
            fresh -= 1
        i += run
    clump = 0
    out[0] = 0
    for j in range(1, n):
        if key[j] != key[j - 1]:
            clump += 1
        out[j] = clump
    return clump + 1


@njit(nogil=True, cache=True)
def contingency(row_ids, n_rows, col_ids, n_cols):
    """Count matrix int64[n_rows, n_cols] of ``(row_ids[i], col_ids[i])`` pairs."""
    out = np.zeros((n_rows, n_cols), dtype=np.int64)
    for i in range(row_ids.shape[0]):
        out[row_ids[i], col_ids[i]] += 1
    return out
