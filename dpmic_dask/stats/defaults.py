"""Default ``B`` and ``c`` from ``(n, eps)`` only (SPEC section 7).

For ``n <= 10**4`` the values interpolate the DP-MIC paper's Table 2 (Appendix
E.2.3): linearly in ``n`` between its rows and linearly in ``log10(eps)`` between
its two columns (``eps`` outside ``[0.1, 1]`` uses the nearest column). Above
``10**4`` rows, ``B`` grows like ``n**0.4`` from its ``n = 10**4`` value -- MICr is
consistent for ``B = O(n**alpha)``, ``alpha < 0.5`` -- and is capped where the
per-pair compute and memory of the grid family stop being worth it: at
``c = 5`` one pair's OptimizeAxis takes about 13 ms at ``B = 150``, 23 ms at
``B = 200`` and 56 ms at ``B = 300`` on one core, and the per-partition read-off
grows with the refinement (230 x 1,736 cells at ``B = 150``, 480 x 6,858 at
``B = 300``). Where the planned noise on each value is wide (many pairs, few
rows), a lower cap applies (:func:`noisy_grid_cap`): the error no longer falls
with ``B`` there.
"""

from __future__ import annotations

import math

import numpy as np

# (n, (c, B) at eps=1, (c, B) at eps=0.1), from Table 2, by the kind of grid a
# mechanism needs: ``"values"`` (noise on the released value: MICr-Lap, and
# MICr-Gauss by the same table), ``"counts"`` (noise on every count: MICr-Geom).
TABLE2 = {
    "values": [
        (25, (5, 8), (5, 6)),
        (250, (5, 40), (5, 40)),
        (500, (5, 60), (5, 80)),
        (1000, (5, 80), (5, 100)),
        (5000, (5, 150), (5, 125)),
        (10000, (5, 150), (5, 150)),
    ],
    "counts": [
        (25, (2, 12), (2, 6)),
        (250, (1, 40), (2, 10)),
        (500, (1, 40), (2, 20)),
        (1000, (1, 60), (2, 40)),
        (5000, (1, 150), (1, 40)),
        (10000, (1, 150), (1, 80)),
    ],
}
#: Largest default B per kind (compute and memory per pair grow like B**2).
B_CAP = {"values": 200, "counts": 150}
#: The kinds of default grid: ``"ranks"`` is MICe's (the rows in memory).
GRID_KINDS = ("values", "counts", "ranks")
#: Where the noise on each released value is at least this wide (the half-width
#: of its central 95% interval), the default ``B`` of noise-on-values mechanisms
#: is capped at the paired value: finer grids no longer lower the error there
#: (``benchmarks/tune_defaults.py --mechanism micr-gauss --pairs P``, weighted
#: error against the MIC* proxy at ``n = 10**5``; docs/parameters.md), and cost
#: 2x (``B = 150``) or 3.4x (``B = 120``) less per pair than ``B = 200``.
NOISY_B_CAPS = ((0.3, 120), (0.2, 150))
GROWTH_EXPONENT = 0.4
MICE_ALPHA = 0.6
MICE_C = 15


def _interpolate(kind: str, n: int, eps: float) -> tuple[float, float]:
    table = TABLE2[kind]
    ns = np.array([row[0] for row in table], dtype=float)
    weight = min(max(math.log10(eps) + 1.0, 0.0), 1.0)  # 0 at eps=0.1, 1 at eps=1
    c_col = [(1 - weight) * row[2][0] + weight * row[1][0] for row in table]
    b_col = [(1 - weight) * row[2][1] + weight * row[1][1] for row in table]
    n_clamped = min(max(float(n), ns[0]), ns[-1])
    return float(np.interp(n_clamped, ns, c_col)), float(np.interp(n_clamped, ns, b_col))


def grid_defaults(kind: str, n: int, eps: float) -> tuple[float, int]:
    """``(B, c)`` for a kind of grid (:data:`GRID_KINDS`), from public ``n`` and
    per-value ``eps``. ``"ranks"`` (MICe) uses the paper's MICe settings:
    ``B = max(n**0.6, 4)``, ``c = 15``."""
    if kind == "ranks":
        return max(n ** MICE_ALPHA, 4.0), MICE_C
    c, B = _interpolate(kind, n, eps)
    if n > 10_000:
        B = B * (n / 10_000) ** GROWTH_EXPONENT
    B = min(B, B_CAP[kind])
    return max(4, int(round(B))), max(1, int(round(c)))


def noisy_grid_cap(ci95: float) -> int | None:
    """The largest default ``B`` worth its cost when each released value's noise has
    a central 95% interval of half-width ``ci95`` (:data:`NOISY_B_CAPS`), or None
    when the noise is narrow enough for the usual default."""
    for width, cap in NOISY_B_CAPS:
        if ci95 >= width:
            return cap
    return None


def capped_at(ci95: float, B: float) -> int | None:
    """The cap of :func:`noisy_grid_cap` when ``B`` is that cap (what a plan and a
    report name as the reason for ``B``), else None."""
    cap = noisy_grid_cap(ci95)
    return cap if cap is not None and B == cap else None
