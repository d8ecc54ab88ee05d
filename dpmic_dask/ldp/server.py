"""The server side: sum the reports' support counts, estimate every pair.

Counting is exact integer arithmetic per partition (support counts ``int64[P, k]``
and reports per pair ``int64[P]``), merged by addition in any order, like the
central engine's master grids. Everything after the counts is post-processing of
eps-LDP reports: nothing is charged to any ledger (the guarantee is each client's).
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import check_clump_factor, check_max_cells
from dpmic_dask.errors import (
    BoundsWarning,
    InvalidDataError,
    InvalidParameterError,
    NoiseWarning,
    shown,
)
from dpmic_dask.ldp.client import (
    DESIGN_COLUMN,
    check_design,
    design_fingerprint,
    design_protocol,
)
from dpmic_dask.ldp.estimate import estimate_pair
from dpmic_dask.ldp.protocols import Protocol
from dpmic_dask.ldp.result import LocalPairwiseResult, LocalReport
from dpmic_dask.ldp.storage import design_of
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.limits import check_micr_grid

#: bootstrap replicates per pair when not given
DEFAULT_REPLICATES = 200
#: ... and the fewest that make a ci95 (0 makes none): the bootstrap's standard
#: deviation from 20 draws is within about 16% of the true one (one sd of it)
MIN_REPLICATES = 20
#: reports handled at once when counting a pandas frame
CHUNK = 1 << 20


def partition_supports(frame: pd.DataFrame, design: dict) -> tuple[np.ndarray, np.ndarray]:
    """Support counts ``int64[P, k]`` and reports per pair ``int64[P]`` of one partition."""
    proto = design_protocol(design)
    n_pairs = len(design["pairs"])
    supports = np.zeros((n_pairs, proto.k), dtype=np.int64)
    counts = np.zeros(n_pairs, dtype=np.int64)
    fingerprint = design_fingerprint(design)
    for start in range(0, len(frame), CHUNK):
        part = frame.iloc[start:start + CHUNK]
        pair, fields = _checked_fields(part, proto, n_pairs, fingerprint)
        supports += proto.supports(fields, pair, n_pairs)
        counts += np.bincount(pair, minlength=n_pairs)
    return supports, counts


def _checked_fields(frame: pd.DataFrame, proto: Protocol, n_pairs: int, fingerprint: int):
    missing = [f for f in ("pair",) + proto.fields() if f not in frame.columns]
    if missing:
        raise InvalidDataError(f"the reports lack the design's fields {missing}")
    # reports written before the fingerprint was kept have no such column
    if DESIGN_COLUMN in frame.columns and (
            frame[DESIGN_COLUMN].to_numpy(dtype=np.int64) != fingerprint).any():
        raise InvalidDataError(
            "some reports were made under another design than the one they are read "
            "with (their design fingerprint differs): read each design's reports apart")
    for name in ("pair",) + proto.fields():
        column = frame[name]
        if not pd.api.types.is_integer_dtype(column.dtype) and not (
                pd.api.types.is_float_dtype(column.dtype)
                and np.array_equal(column.to_numpy(), np.floor(column.to_numpy()))):
            raise InvalidDataError(f"the reports' field {name!r} holds values that are not "
                                   "whole numbers: reports are made of integers")
        if pd.api.types.is_float_dtype(column.dtype) and (
                np.abs(column.to_numpy(dtype=np.float64)) > 2.0 ** 53).any():
            # a float holds integers exactly only up to 2**53: a wider word (OUE's bits
            # past 53 cells) read from floats has lost its low bits
            raise InvalidDataError(f"the reports' field {name!r} is held as floats, which "
                                   "cannot hold its larger words exactly (beyond 2**53): "
                                   "keep the reports' integer types (write_reports does)")
    pair = frame["pair"].to_numpy(dtype=np.int64)
    fields = {f: frame[f].to_numpy() for f in proto.fields()}
    bad = (pair < 0) | (pair >= n_pairs)
    if proto.name == "grr":
        y = fields["y"].astype(np.int64)
        bad |= (y < 0) | (y >= proto.k)
    elif proto.name == "olh":
        y, seed = fields["y"].astype(np.int64), fields["seed"].astype(np.int64)
        bad |= (y < 0) | (y >= proto.g) | (seed < 0) | (seed >= proto.g ** proto.w)
    if bad.any():
        raise InvalidDataError("some reports are malformed for this design (out of range)")
    return pair, fields


def _add(a, b):
    return a[0] + b[0], a[1] + b[1]


def count_reports(reports, design: dict) -> tuple[np.ndarray, np.ndarray]:
    """Total support counts and reports per pair of a pandas or Dask frame (a tree
    of exact integer additions over the partitions)."""
    return backend_for(reports).tree_sum(reports, partial(partition_supports, design=design),
                                         _add, split_every=2, progress=False)


def pairwise(reports, *, design: dict | None = None, replicates: int = DEFAULT_REPLICATES,
             B: int | None = None, c: int | None = None) -> LocalPairwiseResult:
    """MIC of every pair of the design from local-model reports (the server side).

    Parameters
    ----------
    reports : pandas or Dask DataFrame
        Reports made by :func:`dpmic_dask.ldp.randomize` (any number of partitions).
    design : dict, optional
        The public report design (default: the one the reports carry in
        ``.attrs["dpmic_ldp"]``; a Dask frame read from Parquet needs
        ``design=read_design(path)``).
    replicates : int
        Parametric bootstrap replicates per pair (bias correction and ``ci95``).
    B, c : int, optional
        MICr grid parameters (default: the design's).

    Returns
    -------
    LocalPairwiseResult
        ``to_pandas()`` with ``x, y, mic, ci95`` (and ``raw_mic``, ``bias``,
        ``reports``), ``report()``, ``plot()``. Nothing is charged: the privacy
        guarantee is the clients' (each report is eps-LDP).
    """
    design = check_design(design_of(reports) if design is None else design)
    proto = design_protocol(design)
    if isinstance(replicates, bool) or not isinstance(replicates, (int, np.integer)) \
            or not (replicates == 0 or replicates >= MIN_REPLICATES):
        raise InvalidParameterError(
            f"replicates must be 0 (no bias correction and no ci95) or an integer >= "
            f"{MIN_REPLICATES} (a 95% interval from fewer bootstrap draws is not one)")
    grid_b = check_max_cells(design["B"] if B is None else B)
    grid_c = check_clump_factor(design["c"] if c is None else c)
    check_micr_grid(grid_b, grid_c, len(design["pairs"]))
    family = master_grid_family(grid_b, grid_c)
    if DESIGN_COLUMN not in reports.columns:
        warnings.warn(
            "the reports carry no design fingerprint (written before it was kept): that "
            "they were made under this design cannot be checked, only that each field "
            "lies in its range", UserWarning, stacklevel=2)
    supports, counts = count_reports(reports, design)
    population = int(counts.sum())
    m = int(design["bins"])
    estimates = tuple(
        estimate_pair(supports[j], int(counts[j]), population, proto, m, family,
                      int(replicates))
        for j in range(len(design["pairs"])))
    privacy = LocalReport(
        epsilon=float(design["epsilon"]), protocol=proto.name, k=proto.k, bins=m,
        g=proto.g, n=population, B=family.B, c=family.c, replicates=int(replicates),
        seeded=bool(design.get("seeded", False)), pairs_per_person=1,
        design_pairs=len(design["pairs"]))
    result = LocalPairwiseResult(
        columns=tuple(design["columns"]),
        pairs=tuple(tuple(p) for p in design["pairs"]),
        estimates=estimates,
        privacy=privacy,
    )
    if result.unreported():
        warnings.warn(result.unreported_note(), NoiseWarning, stacklevel=2)
    for line in result.one_bin_notes():  # post-processing of the estimates; never raised
        shown(line, BoundsWarning, stacklevel=2)
    swamped = sum(1 for e in estimates if e.ci95 >= 1.0)
    if swamped:
        warnings.warn(f"{swamped} of {len(estimates)} pairs' estimates are swamped by the "
                      "reports' randomization (their ci95 spans the whole range [0, 1]): "
                      "more people or a larger eps give them meaning", NoiseWarning,
                      stacklevel=2)
    return result
