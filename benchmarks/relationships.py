"""The 21 functional relationships of the DP-MIC paper's synthetic protocol.

Appendix E.2.1: for each function, 100 generating points are placed at evenly
spaced ``t`` on ``[0, 1]`` along the graph ``(t, f(t))``; a sample point is one
generating point picked uniformly plus isotropic Gaussian noise. The noise level
is set by a target ``R2``: ``sigma**2 = Var(f(t_i)) (1 / R2 - 1)``, applied to both
coordinates. (The paper sets the variance "by the method of Reshef et al. 2018";
this rule is our stated stand-in.) Superscripts lost in the paper's text are read
as exponents: F10 = 2**x - 1, F11 = 8**(x - 0.3) - 1, F20/F21 end in
``-x/9 + 1/9`` and ``-x/99 + 1/99``.

Benchmark data only: the generator here never produces privacy noise.
"""

from __future__ import annotations

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


class Relationship:
    """One noisy functional relationship: ``name`` at noise level ``r2``."""

    def __init__(self, name: str, r2: float):
        self.name, self.r2 = name, r2
        t = np.linspace(0, 1, GENERATING_POINTS)
        self.centres = np.column_stack([t, FUNCTIONS[name](t)])
        var = float(np.var(self.centres[:, 1]))
        self.sigma = float(np.sqrt(var * (1 / r2 - 1)))
        lo = self.centres.min(axis=0) - 4 * self.sigma
        hi = self.centres.max(axis=0) + 4 * self.sigma
        # Public bounds: fixed by the design of the distribution, not by a sample.
        self.x_bounds = (float(lo[0]), float(hi[0]))
        self.y_bounds = (float(lo[1]), float(hi[1]))

    @property
    def label(self) -> str:
        return f"{self.name}@R2={self.r2:g}"

    def sample(self, n: int, gen: np.random.Generator):
        pick = self.centres[gen.integers(0, GENERATING_POINTS, size=n)]
        pts = pick + gen.normal(scale=self.sigma, size=(n, 2))
        return pts[:, 0], pts[:, 1]


def all_relationships(levels=(0.9, 0.6, 0.3)):
    return [Relationship(name, r2) for name in FUNCTIONS for r2 in levels]
