"""Where a private causal graph spends its budget and draws its noise.

The budget is split once, from public quantities only (the number of columns
``p``, hence ``P = p (p - 1) / 2`` pairs, and ``max_condition_size``): one part
per PC level ``0 .. max_condition_size`` (``level_shares``, equal by default).
Each level pays for ``P`` edges -- the most that can be present when it starts --
whatever the data make PC do. Within a level ``>= 1``, ``select_share`` of the
part chooses separating sets, the rest decides.

* **Decision** (every edge tested at the level): the smallest margin
  ``statistic - threshold`` over the edge's candidate sets, plus Laplace noise of
  scale ``P Delta / eps_d`` (pure) or Gaussian noise of ``sigma = sqrt(P) Delta /
  sqrt(2 rho_d)`` (zCDP), exact integer noise on a lattice. The edge is removed
  when the noisy margin is negative. A minimum of ``Delta``-sensitive margins is
  ``Delta``-sensitive, so the cost does not grow with the number of candidate sets,
  and no "best of many" noise pushes towards removal. The noisy margin of a kept
  edge's last decision is its released statistic (post-processing).
* **Separating set** (every removed edge with more than one candidate): OpenDP's
  exact report-noisy-max over ``-margin`` of the candidates, ``eps_s / P``-DP
  (exponential noise) or ``rho_s / P``-zCDP (Gumbel noise).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dpmic_dask.causal.citests import g_sensitivity, g_threshold, tau_sensitivity, tau_threshold
from dpmic_dask.causal.request import check_shares  # noqa: F401  (re-exported)
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PrivacyCost, measure_for
from dpmic_dask.privacy.mechanisms.base import LATTICE, MAX_NOISE_UNITS
from dpmic_dask.privacy.selection import NoisyTopK, top_k_scale
from dpmic_dask.stats.sensitivity import safe_down, safe_up


def sensitivity(test: str, n: int, level: int) -> float:
    """Replace-one sensitivity of a level's statistic (and of its margins)."""
    if test == "tau":
        return tau_sensitivity(n, conditional=level > 0)
    return g_sensitivity(n)


def lattice_for(high: float) -> float:
    """The lattice of noisy values in ``[-high, high]``: ``2**-40`` times the
    smallest power of two at least ``high`` (at most ``2**41`` steps, exact in
    integers)."""
    return LATTICE * 2.0 ** max(0, math.ceil(math.log2(max(high, 1.0))))


#: The detection probability at which :func:`smallest_visible_decision` reads what
#: a per-decision test's noise hides (at 1/2 symmetric noise would hide nothing).
VISIBLE_POWER = 0.9


def _noise_grid(scale: float, pure: bool) -> tuple[np.ndarray, np.ndarray]:
    """Points and weights (summing to 1) of a Laplace (``pure``) or Gaussian noise of
    ``scale``, for expectations over it."""
    if not scale > 0:
        return np.zeros(1), np.ones(1)
    e = np.linspace(-30.0 * scale, 30.0 * scale, 2_001)
    w = np.exp(-np.abs(e) / scale) if pure else np.exp(-0.5 * (e / scale) ** 2)
    return e, w / w.sum()


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal distribution function, elementwise, to about 1e-7
    (``erf`` by Abramowitz and Stegun's formula 7.1.26): enough for a report's
    figure, and vectorised (a release computes it on a grid, many times)."""
    z = np.abs(np.asarray(x, dtype=np.float64)) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                                                       + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * (1.0 + np.sign(x) * erf)


@functools.lru_cache(maxsize=256)
def smallest_visible_decision(test: str, n: int, scale: float, pure: bool, alpha: float,
                              df: int, most: float) -> float:
    """What a level-0 decision's noise hides, from public quantities: the smallest
    dependence a test without conditioning detects with probability
    :data:`VISIBLE_POWER` (sampling and noise together; the statistic by its normal
    approximation). ``"tau"``: ``|tau|`` of untied columns (``|Z| = 1.5 |tau|
    sqrt(n)``, ``Z`` standard normal under independence); ``"g"``: Cohen's ``w``
    on a table of ``df`` degrees of freedom (``G`` about ``df + n w^2``, variance
    ``2 (df + 2 n w^2)``). ``inf`` above ``most``, the largest dependence there is
    (1 for tau; for ``w``, ``sqrt(min(kx, ky) - 1)``): the noise hides every one."""
    e, weight = _noise_grid(scale, pure)
    normal = _normal_cdf
    if test == "tau":
        threshold = tau_threshold(alpha)

        def power(shift: float) -> float:  # P(|N(shift, 1)| + noise > threshold)
            c = threshold - e
            return float((weight * np.where(c <= 0, 1.0, normal(shift - c)
                                            + normal(-shift - c))).sum())
    else:
        threshold = g_threshold(alpha, df)

        def power(shift: float) -> float:  # P(G + noise > threshold), G ~ N(df + s, 2(df + 2s))
            sd = math.sqrt(2.0 * (df + 2.0 * shift))
            return float((weight * normal((df + shift + e - threshold) / sd)).sum())

    lo, hi = 0.0, 1.0
    while power(hi) < VISIBLE_POWER:
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            return math.inf  # beyond any test statistic
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if power(mid) < VISIBLE_POWER else (lo, mid)
    found = hi / (1.5 * math.sqrt(n)) if test == "tau" else math.sqrt(hi / n)
    return found if found <= most else math.inf


@dataclass(frozen=True)
class CausalBudget:
    """The one charge of a causal graph and its parts (public quantities only).

    ``decision_parts[l]`` pays the decisions of level ``l``,
    ``select_parts[l]`` its separating sets (``None`` at level 0, where the
    only candidate is the empty set).
    """

    total: PrivacyCost
    decision_parts: tuple[PrivacyCost, ...]
    select_parts: tuple[PrivacyCost | None, ...]
    pairs: int
    test: str
    n: int
    high: float

    @classmethod
    def plan(cls, eps: float, delta: float, *, shares, pairs: int, test: str, n: int,
             high: float):
        """Split ``(eps, delta)`` by ``shares`` (from :func:`check_shares`), every
        part rounded down, for ``pairs`` pairs and ``n`` rows (public); margins are
        clipped to ``[-high, high]``."""
        measure = measure_for(delta)
        total = measure.total(eps, delta)
        level_shares, select = shares
        decisions: list[PrivacyCost] = []
        selects: list[PrivacyCost | None] = []
        for level, share in enumerate(level_shares):
            if level == 0:
                (part,) = measure.split(total, [share])
                decisions.append(part)
                selects.append(None)
            else:
                decide_part, select_part = measure.split(
                    total, [share * (1.0 - select), share * select])
                decisions.append(decide_part)
                selects.append(select_part)
        return cls(total, tuple(decisions), tuple(selects), pairs, test, n, high)

    @property
    def lattice(self) -> float:
        return lattice_for(self.high)

    def decision_scale(self, level: int) -> float:
        """Laplace scale or Gaussian sigma of one decision's noisy margin at ``level``
        (``P`` values of sensitivity ``Delta`` widened by one lattice step)."""
        delta_l = safe_up(sensitivity(self.test, self.n, level) + self.lattice)
        return self.decision_parts[level].noise_scale(self.pairs * delta_l,
                                                      math.sqrt(self.pairs) * delta_l)

    def select_budget(self, level: int) -> float:
        """The budget of one separating-set choice at ``level`` (epsilon, or rho)."""
        part = self.select_parts[level]
        return 0.0 if part is None else safe_down(part.amount() / self.pairs)

    def select_scale(self, level: int) -> float:
        """The noise scale of one separating-set choice (OpenDP's calibration)."""
        return top_k_scale(1, safe_up(sensitivity(self.test, self.n, level) + LATTICE),
                           self.select_budget(level), self.total.measure)

    def check(self) -> None:
        """Refuse (before the charge) a plan whose noise cannot be sampled faithfully."""
        for level in range(len(self.decision_parts)):
            if self.decision_scale(level) / self.lattice > MAX_NOISE_UNITS:
                raise InvalidParameterError(
                    "the decisions' noise is too large to sample; raise eps")
            if self.select_parts[level] is not None:
                if not self.select_budget(level) > 0:
                    raise InvalidParameterError("the budget per separating set rounds to zero")
                self.select_scale(level)

    def noisy_margins(self, level: int, margins) -> list[float]:
        """Each of ``margins`` (clipped to ``[-high, high]``) plus the level's noise, on
        the lattice, in exact integer arithmetic; the noisy sum is then clamped to
        ``+-2 high``, which changes no sign.

        The clamp acts on the noisy sum, never on the noise: clipping the noise
        alone would publish ``u + 3 high`` whenever a draw is large, and so the
        exact margin ``u`` (post-processing must come after the noise)."""
        gamma = self.lattice
        units = [int(np.rint(min(max(m, -self.high), self.high) / gamma)) for m in margins]
        law = self.decision_parts[level].law
        limit = 2 * math.ceil(self.high / gamma)
        if not units:
            return []
        draws = law.draw(self.decision_scale(level) / gamma, len(units))
        return [max(-limit, min(limit, u + int(z))) * gamma for u, z in zip(units, draws)]

    def decide(self, level: int, margins_per_edge) -> list[tuple[int | None, float]]:
        """The private decisions of one level, an edge per list of margins: ``(index
        of the separating set or None (keep), the noisy smallest margin)``."""
        noisy = self.noisy_margins(level, [float(min(m)) for m in margins_per_edge])
        out: list[tuple[int | None, float]] = []
        for margins, value in zip(margins_per_edge, noisy):
            if value >= 0:
                out.append((None, value))
            elif len(margins) == 1:  # the only candidate: nothing to choose
                out.append((0, value))
            else:
                out.append((self.choose(level, margins), value))
        return out

    def choose(self, level: int, margins) -> int:
        """The separating set of a removed edge: report-noisy-max of ``-margin``."""
        scores = [float(min(max(-m, -self.high), self.high)) for m in margins]
        selector = NoisyTopK(k=1, budget=self.select_budget(level), delta=self.total.delta,
                             statistic=self.test)
        (chosen,) = selector.select(len(scores), scores, sensitivity(self.test, self.n, level))
        return chosen
