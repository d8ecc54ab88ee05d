"""The 21 functional relationships of the DP-MIC paper's synthetic protocol.

Appendix E.2.1 with the noise model of Reshef et al. (2016, 2018) that it cites:

* Support: every distribution lives on the unit square ``[0, 1] x [0, 1]``, which
  is also the public bounds handed to the mechanisms.
* Generating points: ``k = 100`` points spaced at equal *arc length* along the
  part of the graph ``(x, f(x))`` that enters the unit square (from the first
  ``x`` with ``f(x) >= 0`` when ``f(0) < 0``, to the last ``x`` with ``f(x) <= 1``
  when ``f(1) > 1``).
* A sample point is a generating point ``(x_i, f(x_i))`` picked uniformly plus
  independent ``N(0, sigma^2)`` noise on both coordinates, kept only if it falls
  in the unit square (rejection, so the law is the mixture truncated to it).
* ``sigma`` is set from the target ``R2`` of the *noisy functional relationship*:
  the squared Pearson correlation between ``f(x_i + e1)`` and ``f(x_i) + e2``
  (both kept in ``[0, 1]``) equals ``R2``. It is found by bisection on a fixed
  common-random-number sample (2 * 10**5 draws), so it is deterministic.

Superscripts lost in the paper's text are read as exponents: F10 = 2**x - 1,
F11 = 8**(x - 0.3) - 1, F20/F21 end in ``-x/9 + 1/9`` and ``-x/99 + 1/99``.

Benchmark data only: this module never produces privacy noise.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

PI = np.pi


def _piecewise(x, cuts, pieces):
    return np.select([c(x) for c in cuts], [p(x) for p in pieces[:-1]], pieces[-1](x))


FUNCTIONS = {
    "F1": lambda x: 0.2 * np.sin(12 * x - 6) + 1.1 * (x - 1) + 1,
    "F2": lambda x: 0.15 * np.sin(11 * x * PI) + (x + 0.05),
    "F3": lambda x: 0.1 * np.sin(48 * x) + 2 * (x - 0.05),
    "F4": lambda x: 0.2 * np.sin(48 * x) + 2 * (x - 0.05),
    "F5": lambda x: 0.4 * np.cos(7 * x * PI) + 0.5,
    "F6": lambda x: 0.4 * np.cos(14 * x * PI) + 0.5,
    "F7": lambda x: 10 * (x - 0.6) ** 3 + 2 * x ** 2 + (1.5 - 3 * x),
    "F8": lambda x: 4 * (10 * (x - 0.6) ** 3 + 2 * x ** 2 + (1.5 - 3 * x)) - 1.4,
    "F9": lambda x: np.where(x <= 0.99, x / 99, 99 * x - 98),
    "F10": lambda x: 2.0 ** x - 1,
    "F11": lambda x: 8.0 ** (x - 0.3) - 1,
    "F12": lambda x: x,
    "F13": lambda x: 4 * (x - 0.5) ** 2 + 0.1,
    "F14": lambda x: 0.4 * np.sin(9 * x * PI) + 0.5,
    "F15": lambda x: 0.4 * np.sin(8 * x * PI) + 0.5,
    "F16": lambda x: 0.4 * np.sin(16 * x * PI) + 0.5,
    "F17": lambda x: _piecewise(x, [lambda v: v < 0.491, lambda v: v > 0.509],
                                [lambda v: 0.05 + 0 * v, lambda v: 0.95 + 0 * v,
                                 lambda v: 50 * (v - 0.5) + 0.5]),
    "F18": lambda x: 0.4 * np.cos(5 * x * PI * (1 + x)) + 0.5,
    "F19": lambda x: 0.4 * np.sin(6 * x * PI * (1 + x)) + 0.5,
    "F20": lambda x: _piecewise(x, [lambda v: v <= 0.0528, lambda v: v >= 0.1],
                                [lambda v: 18 * v, lambda v: -v / 9 + 1 / 9,
                                 lambda v: -18 * v + 1.9]),
    "F21": lambda x: _piecewise(x, [lambda v: v <= 0.0051, lambda v: v >= 0.01],
                                [lambda v: 190 * v, lambda v: -v / 99 + 1 / 99,
                                 lambda v: -198 * v + 1.99]),
}
GENERATING_POINTS = 100
PAPER_LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
UNIT = (0.0, 1.0)
_FINE = 2_000_001  # resolution of the arc-length and end-point searches
_TUNE_SAMPLES = 200_000


def generating_x(f, k: int = GENERATING_POINTS) -> np.ndarray:
    """``k`` abscissae at equal arc length along the graph of ``f`` inside the square."""
    x = np.linspace(0.0, 1.0, _FINE)
    y = f(x)
    start, stop = 0, _FINE - 1
    if y[0] < 0:
        start = int(np.argmax(y >= 0))
    if y[-1] > 1:
        stop = int(_FINE - 1 - np.argmax(y[::-1] <= 1))
    x, y = x[start:stop + 1], y[start:stop + 1]
    arc = np.concatenate(([0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))))
    targets = arc[-1] * np.arange(k) / k
    return np.interp(targets, arc, x)


def _in_unit(*coords):
    keep = np.ones(coords[0].shape, dtype=bool)
    for v in coords:
        keep &= (v >= 0.0) & (v <= 1.0)
    return keep


def noisy_relationship_r2(f, gx: np.ndarray, sigma: float, crn) -> float:
    """Squared correlation of ``f(x_i + e1)`` and ``f(x_i) + e2`` within the square."""
    idx, z1, z2 = crn
    u = f(gx[idx] + sigma * z1)
    v = f(gx[idx]) + sigma * z2
    keep = _in_unit(u, v)
    u, v = u[keep], v[keep]
    if u.size < 1000 or np.std(u) == 0 or np.std(v) == 0:
        return 0.0
    return float(np.corrcoef(u, v)[0, 1] ** 2)


@lru_cache(maxsize=None)
def tuned_sigma(name: str, r2: float) -> float:
    """Noise level whose noisy-relationship R^2 is ``r2`` (bisection, deterministic)."""
    f = FUNCTIONS[name]
    gx = generating_x(f)
    gen = np.random.default_rng([31, int(round(r2 * 1000)), int(name[1:])])
    crn = (gen.integers(0, gx.size, _TUNE_SAMPLES),
           gen.standard_normal(_TUNE_SAMPLES), gen.standard_normal(_TUNE_SAMPLES))
    lo, hi = 0.0, 1.0
    while noisy_relationship_r2(f, gx, hi, crn) > r2 and hi < 64:
        lo, hi = hi, 2 * hi
    for _ in range(30):
        mid = (lo + hi) / 2
        if noisy_relationship_r2(f, gx, mid, crn) > r2:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


class Relationship:
    """One noisy functional relationship: ``name`` at noise level ``r2``."""

    x_bounds = UNIT
    y_bounds = UNIT

    def __init__(self, name: str, r2: float):
        self.name, self.r2 = name, r2
        f = FUNCTIONS[name]
        gx = generating_x(f)
        self.centres = np.column_stack([gx, f(gx)])

    @property
    def sigma(self) -> float:
        # Tuned on first use, so a process pool tunes in its workers.
        return tuned_sigma(self.name, self.r2)

    @property
    def label(self) -> str:
        return f"{self.name}@R2={self.r2:g}"

    def sample(self, n: int, gen: np.random.Generator):
        """``n`` points from the mixture truncated to the unit square."""
        xs, ys, have = [], [], 0
        while have < n:
            m = max(2 * (n - have), 1024)
            pts = self.centres[gen.integers(0, GENERATING_POINTS, size=m)]
            pts = pts + gen.normal(scale=self.sigma, size=(m, 2))
            pts = pts[_in_unit(pts[:, 0], pts[:, 1])]
            xs.append(pts[:, 0])
            ys.append(pts[:, 1])
            have += len(pts)
        return np.concatenate(xs)[:n], np.concatenate(ys)[:n]


def all_relationships(levels=PAPER_LEVELS):
    return [Relationship(name, r2) for name in FUNCTIONS for r2 in levels]
