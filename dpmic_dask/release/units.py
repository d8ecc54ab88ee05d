"""Privacy per unit: contribution bounding, a private row count, then the release.

With ``privacy_unit="customer_id"`` and ``max_rows_per_unit=k`` neighbouring
tables differ by **adding or removing every row of one unit**. A release then
runs ``[contribution bounding] -> [row count] -> [private bounds] -> [selection]
-> values``:

1. *Bounding* (:func:`bound_contributions`): at most ``k`` rows per unit survive,
   the ``k`` whose keyed hash of their own content is smallest, with a fresh
   secret key per release. Which rows of a unit survive depends on that unit's
   rows and the key only, so after bounding the two neighbours still differ by
   the rows of one unit, now at most ``k`` of them. On Dask no kept row moves:
   each unit's threshold (its ``k``-th smallest priority) is found from the unit
   columns and priorities alone (at most ``k + 1`` per unit and partition), and
   every partition is filtered where it is against the thresholds.
2. *Row count* (:mod:`dpmic_dask.release.rowcount`): the bounded row count is
   private; a noisy count (sensitivity ``k``) with a small share of the budget
   gives a public lower bound ``n0``.
3. *The release*, run by the row-level code on the bounded frame, which it sees
   with ``n0`` rows: every statistic is tapered, ``min(1, rows / n0) * M``, with
   sensitivity ``k * tapered_step(n0)`` valid at every size
   (:mod:`dpmic_dask.stats.group_sensitivity`), so the whole release is pure
   ``eps``-DP per unit (zCDP with ``delta > 0``) whatever the bound's luck.

Everything that can refuse runs before the one charge: the plan is checked at
the smallest ``n0`` it can be given (``floor``, found before anything is read) and
at a very large one; the pass before the charge reads and converts every column
of the bounded frame.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.config import engine
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import check_epsilon
from dpmic_dask.privacy.noise import with_count_noise
from dpmic_dask.release.bounding import (
    ContributionBound,
    check_unit_columns,
    check_unit_dtypes,
    refuse_mixed_units,
    unit_label,
)
from dpmic_dask.release.charge import (
    Bill,
    check_ledger_unit,  # noqa: F401 (re-exported)
    precheck_budget,
)
from dpmic_dask.release.choose_k import (
    DEFAULT_TOLERANCE,
    KCandidate,
    check_tolerance,
    choose_by_error,
    predict,
    release_of,
)
from dpmic_dask.release.executor import Staged, run_charged, run_release
from dpmic_dask.release.report import Release
from dpmic_dask.release.unitplan import (
    plan_unit_release,
    unit_privacy_statement,  # noqa: F401 (re-exported)
)
from dpmic_dask.stats.sensitivity import safe_up


def private_mic_per_unit(x, y, units, *, eps, x_bounds, y_bounds, privacy_unit="unit",
                         max_rows_per_unit=None, mechanism="auto", delta=0.0, B=None, c=None,
                         ledger=None, dataset=None):
    """:func:`dpmic_dask.private_mic` per unit: ``units[i]`` identifies the unit of
    row ``i`` (named ``privacy_unit`` in the statement and the ledger); at most
    ``max_rows_per_unit`` rows per unit are used. The same plan as ``pairwise``
    with one pair."""
    if units is None or max_rows_per_unit is None:
        raise InvalidParameterError("privacy per unit needs both units=[...] (one value per "
                                    "row) and max_rows_per_unit")
    if not isinstance(privacy_unit, str) or not privacy_unit or privacy_unit in ("x", "y"):
        raise InvalidParameterError("privacy_unit must name the unit (not 'x' or 'y')")
    xs, ys, us = np.asarray(x), np.asarray(y), np.asarray(units)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.shape != us.shape:
        raise InvalidParameterError("x, y and units must be one-dimensional and of one length")
    frame = pd.DataFrame({privacy_unit: us, "x": xs, "y": ys})
    plan = plan_unit_release(frame.dtypes, eps, privacy_unit=privacy_unit,
                             max_rows_per_unit=max_rows_per_unit,
                             bounds={"x": x_bounds, "y": y_bounds}, delta=delta,
                             mechanism=mechanism, B=B, c=c)
    result = run_release(frame, plan, ledger=ledger, dataset=dataset)
    return Release(value=float(result.values[0]), privacy=result.privacy)


# ------------------------------------------------------------------- choosing k


def _unit_sizes(frame, unit):
    """Rows per unit (a pandas Series or a Dask Series)."""
    return frame.dropna(subset=list(unit)).groupby(list(unit)).size()  # no unit: dropped


def size_grid(top: int = 2**20) -> np.ndarray:
    """Candidate values of ``k``: 1..16, then about 2^(1/4) apart up to ``top``."""
    small = list(range(1, 17))
    e = 4 * 4  # 2^(16/4) = 16
    while True:
        e += 1
        v = int(math.floor(2 ** (e / 4)))
        if v > top:
            break
        if v > small[-1]:
            small.append(v)
    return np.array(small, dtype=np.int64)


def contribution_bound(frame, unit, eps, *, release=None, quantile=None,
                       tolerance=DEFAULT_TOLERANCE, ledger=None, dataset=None,
                       top: int = 2**20, label=None):
    """A private choice of ``max_rows_per_unit`` for ``frame`` per ``unit``.

    ``release``: the release ``k`` is for, as a plan per the same unit,
    ``frame.dpmic.plan(release_eps, bounds=..., privacy_unit=unit,
    max_rows_per_unit=1)`` (its ``k`` is replaced by each candidate; its own
    budget is charged when it is released, not here). ``k`` is then chosen by the
    error of that release: for each candidate, the rows it keeps and its ``ci95``
    at the row count's lower bound are predicted from the released histogram,
    and the largest ``k`` whose ``ci95`` is within ``tolerance`` of the least is
    returned (:mod:`dpmic_dask.release.choose_k`), with ``predicted_ci95`` and
    the table of candidates.

    ``quantile``: the smallest ``k`` that keeps every row of about that share of
    the units instead (the rule without ``release``: 0.9 by default). With a
    ``release`` too, its ``ci95`` at that ``k`` is still predicted.

    Pure ``eps``-DP per unit: each unit's row count falls in one bin of a fixed
    grid of candidates (:func:`size_grid`, up to ``top``; larger counts in the last
    bin); adding or removing a unit changes one bin by one, so exact discrete
    Laplace noise of scale ``1 / eps`` on every bin is ``eps``-DP. Either rule is
    post-processing of the noisy counts (and of the public plan). Charged once;
    nothing else reads the data."""
    return run_charged(_bound(frame, unit, eps, release, quantile, tolerance, ledger, dataset,
                              top, label), ledger=ledger, dataset=dataset)


def _bound(frame, unit, eps, release, quantile, tolerance, ledger, dataset, top,
           label) -> Staged[ContributionBound]:
    """:func:`contribution_bound`, staged: the checks, the precheck and the pass
    (the exact histogram of unit sizes), the bill, then the noise and the choice."""
    unit = check_unit_columns(unit)
    eps = check_epsilon(eps)
    if quantile is not None and (isinstance(quantile, bool) or not isinstance(
            quantile, (int, float)) or not (0 < quantile < 1)):
        raise InvalidParameterError("quantile must be a number in (0, 1)")
    tolerance = check_tolerance(tolerance)
    planned = None if release is None else release_of(release, unit)
    rule = "quantile" if planned is None or quantile is not None else "error"
    if quantile is None and rule == "quantile":
        quantile = 0.9
    backend = backend_for(frame)
    schema = backend.schema(frame)
    if any(u not in schema for u in unit):
        raise InvalidParameterError("privacy_unit column(s) are not in the frame")
    check_unit_dtypes(schema, unit)
    grid = size_grid(int(top))
    cost = PrivacyCost(eps)
    precheck_budget(ledger, dataset, cost, privacy_unit=unit)
    knobs = engine()  # the engine's knobs, read once (dpmic_dask.config)
    refuse_mixed_units(frame, unit, split_every=knobs.split_every, progress=knobs.progress)
    sizes = _unit_sizes(frame, unit)
    edges = np.append(grid, np.iinfo(np.int64).max)

    def histogram(s) -> np.ndarray:
        bins = np.searchsorted(edges, np.asarray(s, dtype=np.int64), side="right") - 1
        return np.bincount(np.clip(bins, 0, len(grid) - 1), minlength=len(grid))

    counts = backend.tree_sum(sizes, histogram, np.add, split_every=knobs.split_every,
                              columns=unit)
    scale = safe_up(1.0 / eps)
    charge = yield Bill(cost, label or "contribution bound", "unit-size-hist", unit)
    noisy = with_count_noise(counts, cost.law.draw(scale, len(grid)))
    # from here on: post-processing of the released ``noisy`` only
    return choose_from_histogram(noisy, grid, planned, rule=rule, quantile=quantile,
                                 tolerance=tolerance, epsilon=eps, noise_scale=scale,
                                 privacy_unit=unit_label(unit), charge_id=charge.charge_id)


def quantile_k(noisy: np.ndarray, grid: np.ndarray, quantile: float) -> int:
    """The smallest grid value whose noisy cumulative count (negative bins as zero)
    reaches ``quantile`` of the noisy total."""
    cumulative = np.cumsum(np.maximum(noisy, 0))
    total = cumulative[-1]
    where = int(np.searchsorted(cumulative, quantile * total, side="left")) if total > 0 else 0
    return int(grid[min(where, len(grid) - 1)])


def choose_from_histogram(noisy, grid, planned, *, rule, quantile, tolerance, epsilon,
                          noise_scale, privacy_unit, charge_id) -> ContributionBound:
    """The released choice from the noisy histogram ``noisy`` (post-processing)."""
    candidates: tuple = ()
    predicted = None
    if planned is not None:
        candidates = predict(noisy, grid, planned, scale=noise_scale)
    if rule == "error":
        k = choose_by_error(candidates, tolerance).k
    else:
        k = min(quantile_k(noisy, grid, quantile), 2**20)
    if candidates:
        by_k = {c.k: c for c in candidates}
        predicted = by_k[k].ci95 if k in by_k else None
    return ContributionBound(k, None if rule == "error" else float(quantile), epsilon,
                             noise_scale, privacy_unit, charge_id, rule=rule,
                             tolerance=tolerance if rule == "error" else None,
                             predicted_ci95=predicted, candidates=candidates)


__all__ = ["ContributionBound", "KCandidate", "check_ledger_unit", "choose_from_histogram",
           "contribution_bound", "private_mic_per_unit", "quantile_k", "size_grid",
           "unit_privacy_statement"]
