"""Choosing a column's categories privately (DP partition selection).

Two mechanisms; the proofs are in ``docs/privacy.md`` ("Private categories").

:func:`select_candidates` -- **pure** ``eps``-DP, over a *public candidate list*.
Every candidate's count gets exact discrete Laplace noise of scale ``2 / eps``
(replacing one row moves at most one count down and one up: L1 sensitivity 2),
and the candidates whose noisy count reaches a public threshold are kept. The
output depends on the data only through the noisy counts
(``categories={"region": {"private": [...]}}``).

:func:`select_partitions` -- over an *unknown* domain: only values that occur
are considered, so a value held by one row could appear in the output. With the
threshold of :func:`bad_event_threshold` that happens with probability at most
``p`` (the *bad event*); without it the choice is pure ``eps``-DP. Such a part
is charged as ``eps**2 / 2``-zCDP plus a bad-event ``delta`` of ``p``
(an *approximate part*, ``docs/privacy.md``, "Approximate parts"), which needs a
budget with ``delta > 0`` (``categories={"region": "private"}``).
:func:`unknown_domain_threshold` is the same choice stated as one
``(eps, delta)``-DP guarantee.

Noise is drawn only through :data:`CANDIDATE_LAW`, the law of a pure part (discrete
Laplace, :class:`~dpmic_dask.privacy.noise.NoiseLaw`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import require_delta
from dpmic_dask.privacy.costs import PureCost
from dpmic_dask.privacy.noise import with_count_noise
from dpmic_dask.stats.sensitivity import safe_up

#: Probability that some candidate with no rows at all is kept (sets the pure
#: mechanism's default threshold; post-processing, any value is private).
FALSE_KEEP = 0.05


#: L1 sensitivity of a column's counts when neighbours replace one row (one
#: count down, one up). Per privacy unit it is ``k``: adding or removing a unit's
#: at most ``k`` bounded rows moves the counts by at most ``k`` in all.
ROW_SENSITIVITY = 2


#: The noise of a choice of categories: each count's is a pure ``eps``-DP part
#: (discrete Laplace), whatever the measure of the release it is part of.
CANDIDATE_LAW = PureCost.law

def candidate_scale(eps_column: float, sensitivity: int = ROW_SENSITIVITY) -> float:
    """Noise scale ``sensitivity / eps_column`` of each candidate's count (rounded up)."""
    if not eps_column > 0 or not math.isfinite(eps_column):
        raise InvalidParameterError("eps is too small to split over these columns")
    scale = safe_up(sensitivity / eps_column)
    if not math.isfinite(scale):
        raise InvalidParameterError("eps is too small to split over these columns")
    return scale


def candidate_threshold(scale: float, candidates: int, false_keep: float = FALSE_KEEP) -> int:
    """The smallest integer ``T >= 1`` at which a candidate with no rows passes with
    probability at most ``false_keep / candidates`` (discrete Laplace tail
    ``P(Z >= T) = r^T / (1 + r)``, ``r = exp(-1 / scale)``): with probability at
    least ``1 - false_keep`` no empty candidate is kept. Public."""
    target = false_keep / max(1, candidates)
    return max(1, math.ceil(scale * math.log(1.0 / target)))


def select_candidates(counts, eps_column: float, threshold: int | None = None, *,
                      sensitivity: int = ROW_SENSITIVITY):
    """Pure ``eps_column``-DP choice among public candidates (call after the charge).

    ``counts``: exact int counts of each candidate (rows whose value is not a
    candidate are not counted); ``sensitivity``: their L1 sensitivity (2 per row,
    ``k`` per unit). Returns ``(kept, scale, threshold)``: the boolean mask of kept
    candidates, the noise scale, and the threshold used."""
    counts = np.asarray(counts, dtype=np.int64)
    scale = candidate_scale(eps_column, sensitivity)
    if threshold is None:
        threshold = candidate_threshold(scale, counts.size)
    noisy = with_count_noise(counts, CANDIDATE_LAW.draw(scale, counts.size))
    return noisy >= threshold, scale, int(threshold)


def unknown_domain_threshold(eps: float, delta: float) -> int:
    """``T = 1 + ceil(b (ln(2 / delta) + eps / 2))`` for the noise scale ``b`` used
    (``2 / eps`` rounded up; ``T = 2 + ceil(2 ln(2 / delta) / eps)`` at exactly
    ``2 / eps``): a value held by one row reaches it with probability
    ``P(Z >= T - 1) = r^(T-1) / (1 + r) <= delta e^(-eps/2) / 2``, ``r = e^(-1/b)``."""
    check_unknown_domain(eps, delta)
    scale = safe_up(2.0 / eps)
    return 1 + math.ceil(scale * (math.log(2.0 / delta) + eps / 2.0))


def check_unknown_domain(eps: float, delta: float) -> None:
    """Refuse (before anything is read) an unknown-domain selection with
    ``delta = 0``: a value held by a single row cannot be kept with probability 0
    on one table and more than 0 on its neighbour under pure DP."""
    require_delta(
        delta,
        "choosing categories privately from values that occur (an unknown domain) "
        "needs delta > 0: a value held by one row is kept with probability at most "
        "delta. Give public candidates instead ({'private': [candidates]}, pure DP)")
    if not (eps > 0 and math.isfinite(eps)):
        raise InvalidParameterError("eps must be a finite number > 0")


def bad_event_threshold(eps: float, bad_event: float, *,
                        sensitivity: int = ROW_SENSITIVITY, held: int = 1) -> int:
    """The smallest ``T`` at which a value held by one row (per unit: by the at
    most ``held = k`` rows of one unit) is kept with probability at most
    ``bad_event``: with ``Z`` discrete Laplace of scale ``b`` (``sensitivity / eps``
    rounded up) and ``r = e^(-1/b)``, ``P(held + Z >= T) = r^(T-held) / (1 + r)``,
    so ``T = held + ceil(b ln(1 / (bad_event (1 + r))))``. Public."""
    if not (eps > 0 and math.isfinite(eps)):
        raise InvalidParameterError("eps is too small to split over these columns")
    if not 0.0 < bad_event < 1.0:
        raise InvalidParameterError("the bad-event delta must be in (0, 1)")
    scale = candidate_scale(eps, sensitivity)
    r = math.exp(-1.0 / scale)
    threshold = held + max(0, math.ceil(scale * math.log(1.0 / (bad_event * (1.0 + r)))))
    # the float logarithm can land one short at an integer boundary: step up until
    # the tail itself is within the bound (with a margin for the float error)
    while r ** (threshold - held) / (1.0 + r) > bad_event * (1.0 - 1e-9):
        threshold += 1
    return threshold


def select_partitions(counts: Mapping, eps: float, delta: float | None = None, *,
                      threshold: int | None = None, limit: int | None = None) -> list:
    """Choice of the values that occur (replace-one neighbours; call only after a
    charge): :func:`select_sorted` over ``counts`` (value -> exact count; values
    counted 0 are never considered) in ``repr`` order, at ``threshold`` (default
    :func:`unknown_domain_threshold` of ``(eps, delta)``)."""
    if threshold is None:
        threshold = unknown_domain_threshold(eps, 0.0 if delta is None else delta)
    values = sorted((v for v in counts if int(counts[v]) > 0), key=repr)
    exact = np.array([int(counts[v]) for v in values], dtype=np.int64)
    return select_sorted(values, exact, eps, threshold, limit=limit)


def select_sorted(values: list, exact: np.ndarray, eps: float, threshold: int, *,
                  limit: int | None = None, sensitivity: int = ROW_SENSITIVITY) -> list:
    """The choice itself, over ``values`` already in a data-independent order with
    their exact counts ``exact`` (each > 0). Each count gets discrete Laplace
    noise of scale ``2 / eps``; a value is kept when its noisy count reaches
    ``threshold``. With ``limit`` at most that many are kept: those with the
    largest noisy counts (ties in the given order), post-processing. Returns the
    kept values in the given order. Only noise and comparisons: nothing here can
    fail on the data."""
    if len(values) == 0:
        return []
    scale = candidate_scale(eps, sensitivity)
    noisy = with_count_noise(exact, CANDIDATE_LAW.draw(scale, exact.size))
    kept = [k for k in range(len(values)) if noisy[k] >= threshold]
    if limit is not None and len(kept) > limit:
        kept = sorted(sorted(kept, key=lambda k: -int(noisy[k]))[:limit])
    return [values[k] for k in kept]


__all__ = ["FALSE_KEEP", "ROW_SENSITIVITY", "bad_event_threshold", "candidate_scale",
           "candidate_threshold",
           "check_unknown_domain", "select_candidates", "select_partitions", "select_sorted",
           "unknown_domain_threshold"]
