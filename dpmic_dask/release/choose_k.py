"""Choosing ``max_rows_per_unit`` by the error of the release it is for.

:func:`~dpmic_dask.contribution_bound` releases a noisy histogram of rows per
unit on a fixed grid of candidates (pure ``eps``-DP per unit, charged once).
Everything here is post-processing of that histogram and of a public
:class:`~dpmic_dask.release.public_plan.Plan`: nothing reads the data.

For each candidate ``k`` (a grid value):

* ``kept(k)``, the rows a release bounded to ``k`` rows per unit would keep,
  ``sum over units of min(size, k)``: units in bins below ``k`` count at their
  bin's midpoint, units in bins from ``k`` up count ``k`` each (noisy counts,
  not clipped at zero, so that empty bins add no rows on average);
* ``n0(k) = kept(k) - margin(k)``: the public lower bound the release's row
  count would give (its margin grows with ``k``, the count's sensitivity);
* ``ci95(k)``: the ``ci95`` of each value of the plan, released per unit with
  ``k`` at ``n0(k)`` (``Plan.explain(rows=n0)`` with that ``k``); infinite where
  ``n0(k)`` is below the plan's floor (the release would then taper its values
  towards 0, an error the ``ci95`` does not show);
* the share of rows that bounding to ``k`` would drop, ``1 - kept(k) / kept(top)``,
  of the rows the histogram resolves: units in bins whose counts are lost in the
  noise (a few very large units) are counted at the last resolved bin's size, so
  this is a lower bound of the share dropped, and ``kept`` is flat beyond it.

The noise of a per-unit release grows with ``k`` (``k`` times the step of the
statistic at ``n0``, and ``n0`` grows more slowly than ``k`` once units run out
of rows), so the least noise is at a small ``k``; but a small ``k`` drops rows,
which may bias the statistic, and the histogram cannot say by how much. The
rule (:func:`choose_by_error`): the **largest** candidate whose predicted
``ci95`` is within ``tolerance`` (default 1.1) of the least one. It costs at
most 10% more noise than the best and keeps as many rows as that allows.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import DPMICError, InvalidParameterError
from dpmic_dask.release.plan import ReleasePlan
from dpmic_dask.release.rowcount import plan_row_count
from dpmic_dask.release.unitbase import noise_at as values_noise_at
from dpmic_dask.release.unitbase import passes_at

#: The default ``tolerance``: less clipping for at most 10% more noise.
DEFAULT_TOLERANCE = 1.1


@dataclass(frozen=True)
class KCandidate:
    """One candidate ``k`` as predicted from the released histogram (public)."""

    k: int
    kept: float  # rows kept, sum over units of min(size, k), predicted
    dropped: float  # share of the rows that bounding to k drops, predicted
    n0: int  # the release's public lower bound of its rows, predicted
    ci95: float  # the release's ci95 of each value at n0 (inf: refused there)


def check_tolerance(tolerance) -> float:
    """``tolerance``: a number >= 1."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not (
            1.0 <= tolerance < math.inf):
        raise InvalidParameterError("tolerance must be a number >= 1")
    return float(tolerance)


def release_of(release, unit: tuple[str, ...]):
    """The planned release behind ``release`` (a :class:`Plan` per ``unit``), checked
    before anything is read or charged."""
    planned = getattr(release, "planned", None)  # a public Plan's release plan
    if not isinstance(planned, ReleasePlan):
        raise InvalidParameterError(
            "release must be a plan: frame.dpmic.plan(eps, ..., privacy_unit=unit, "
            "max_rows_per_unit=any k), the release k is chosen for")
    if planned.units is None:
        raise InvalidParameterError("release must be planned per unit (privacy_unit=..., "
                                    "max_rows_per_unit=any k)")
    if tuple(planned.units.unit) != tuple(unit):
        raise InvalidParameterError(
            f"release is planned per {'+'.join(planned.units.unit)}, not per "
            f"{'+'.join(unit)}")
    return planned


def resolved_top(noisy: np.ndarray, scale: float, *, beta: float = 0.05) -> int:
    """The last bin the noisy histogram resolves: the largest ``j`` whose noisy
    count of the units in bins ``j`` and up, a sum of ``m`` noisy bins, exceeds
    ``sqrt(2 m) scale sqrt(2 L) + scale L`` with ``L = ln(bins / beta)`` (the
    Gaussian and the exponential part of a Bernstein bound on the noise of the
    sum, over every ``j`` at once; and at least 1). Above it the counts are noise;
    units there are counted in bin ``j``. Post-processing only."""
    counts = np.asarray(noisy, dtype=np.float64)
    suffix = np.cumsum(counts[::-1])[::-1]
    bins_from = np.arange(counts.size, 0, -1, dtype=np.float64)
    level = math.log(counts.size / beta)
    threshold = float(scale) * (np.sqrt(2.0 * bins_from) * math.sqrt(2.0 * level) + level)
    resolved = np.flatnonzero(suffix >= np.maximum(1.0, threshold))
    return int(resolved[-1]) if resolved.size else 0


def kept_rows(noisy: np.ndarray, grid: np.ndarray, scale: float) -> np.ndarray:
    """``kept(k)`` for every grid value ``k``, from noisy counts of units per bin
    (bin ``i`` holds sizes ``grid[i] .. grid[i+1] - 1``; the last bin is open) with
    noise of scale ``scale``. Units in bins below ``k`` count at their bin's
    midpoint, units in bins from ``k`` up count ``k`` each; counts are not clipped
    at zero (empty bins add no rows on average). Units above the last resolved bin
    (:func:`resolved_top`) count as if they were in it, so ``kept`` is flat beyond
    it. Post-processing only. Never negative, never decreasing in ``k``."""
    counts = np.asarray(noisy, dtype=np.float64).copy()
    grid = np.asarray(grid, dtype=np.float64)
    top = resolved_top(counts, scale)
    counts[top] = counts[top:].sum()
    counts[top + 1:] = 0.0
    upper = np.append(grid[1:] - 1.0, grid[-1])
    middle = (grid + upper) / 2.0  # a unit in bin i has about this many rows
    middle[top] = grid[top]
    below = np.concatenate(([0.0], np.cumsum(counts * middle)[:-1]))  # bins under k
    at_least = np.maximum(np.cumsum(counts[::-1])[::-1], 0.0)  # units with >= k rows
    return np.maximum.accumulate(np.maximum(below + grid * at_least, 0.0))


def noise_at(planned, k: int, n0: int):
    """The values' noise plan of ``planned`` released per unit with ``k`` rows per
    unit at ``n0`` public rows (what ``Plan.explain(rows=n0)`` says at that ``k``)."""
    units = dataclasses.replace(planned.units, k=int(k))
    return values_noise_at(dataclasses.replace(planned, units=units), int(n0))


def predict(noisy: np.ndarray, grid: np.ndarray, planned, *, scale: float,
            top_k: int = 2**20) -> tuple[KCandidate, ...]:
    """Every grid candidate up to ``top_k``, predicted for the release ``planned``
    from the noisy histogram ``noisy`` (noise of scale ``scale``). Post-processing
    only."""
    kept = kept_rows(noisy, grid, scale)
    total = kept[-1]
    count = planned.units.rowcount
    out = []
    for k, rows in zip(grid, kept):
        k = int(k)
        if k > top_k:
            break
        margin = plan_row_count(count.cost, sensitivity=k, beta=count.beta).margin
        n0 = int(math.floor(rows)) - margin
        ci95 = math.inf  # below the plan's floor the values would be tapered to 0
        if n0 >= MIN_ROWS and passes_at(planned, k, n0):
            try:
                ci95 = float(noise_at(planned, k, n0).ci95)
            except DPMICError:  # pragma: no cover - passes_at said it passes
                pass
        n0 = max(n0, 0)
        dropped = 1.0 - rows / total if total > 0 else 0.0
        out.append(KCandidate(k, float(rows), min(1.0, max(0.0, dropped)), n0, ci95))
    return tuple(out)


def choose_by_error(candidates, tolerance: float = DEFAULT_TOLERANCE) -> KCandidate:
    """The largest candidate whose predicted ``ci95`` is at most ``tolerance`` times
    the least one; where every candidate would be refused, the one with the largest
    predicted ``n0``."""
    finite = [c for c in candidates if math.isfinite(c.ci95)]
    if not finite:
        return max(candidates, key=lambda c: (c.n0, -c.k))
    best = min(c.ci95 for c in finite)
    return max((c for c in finite if c.ci95 <= tolerance * best), key=lambda c: c.k)


__all__ = ["DEFAULT_TOLERANCE", "KCandidate", "check_tolerance", "choose_by_error",
           "kept_rows", "noise_at", "predict", "release_of", "resolved_top"]
