"""Which pairs a release publishes: the selection step of a release plan.

A release may publish every pair, or first select pairs and then publish only
those with fresh noise. A :class:`Selection` says which pairs it keeps and what
choosing costs; the pipeline calibrates the release's noise to the number of
values actually published -- never to "one value per pair" by assumption.
:class:`AllPairs` reads no data and costs nothing. :class:`NoisyTopK` and
:class:`AboveThreshold` read every pair's exact score and cost budget; the
pipeline charges their cost and the release's as one charge, before either
draws noise. :class:`Selection` itself and the rules that read no data are in
:mod:`dpmic_dask.privacy.selectionbase`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from opendp import domains, measurements, metrics
from opendp.mod import OpenDPException, enable_features

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import Measure, PrivacyCost, PureCost, measure_for
from dpmic_dask.privacy.mechanisms.base import LATTICE, Mechanism, check_noise_units
from dpmic_dask.privacy.mechanisms.registry import split_mechanism, value_mechanism
from dpmic_dask.privacy.selectionbase import (
    AllPairs,  # noqa: F401  (re-exported)
    EveryPairRanked,  # noqa: F401  (re-exported)
    Selection,
)
from dpmic_dask.stats.sensitivity import safe_down, safe_up

# ------------------------------------------------------------- private selection


def _opendp():
    enable_features("contrib")


def _top_k_measurement(k: int, scale: float, measure: Measure):
    """OpenDP's exact noisy top-k over float scores whose L-infinity distance is the
    input metric (not monotone: one row may move scores up and down at once),
    accounted in ``measure``'s divergence."""
    _opendp()
    return measurements.make_noisy_top_k(
        domains.vector_domain(domains.atom_domain(T=float, nan=False)),
        metrics.linf_distance(T=float, monotonic=False), measure.divergence(), k=k,
        scale=float(scale))


def _widened(sensitivity: float) -> float:
    """A value's sensitivity plus one lattice step (rounding), rounded up."""
    return safe_up(sensitivity + LATTICE)


def top_k_scale(k: int, sensitivity: float, budget: float, measure: Measure) -> float:
    """The smallest noise scale (found from OpenDP's own privacy map) at which noisy
    top-``k`` of scores with L-infinity sensitivity ``sensitivity`` costs at most
    ``budget`` (in ``measure``'s unit: ``epsilon``, or ``rho``).

    A closed form gives the start (:meth:`Measure.top_k_start`); the map then
    decides, and the scale only grows until it agrees."""
    scale = safe_up(measure.top_k_start(k, sensitivity, budget))
    for _ in range(64):
        if not math.isfinite(scale):  # a budget too small for any noise to express
            check_noise_units(math.inf, "selection")
        try:
            cost = _top_k_measurement(k, scale, measure).map(float(sensitivity))
        except OpenDPException:  # pragma: no cover - scales within the limit map
            raise InvalidParameterError("cannot calibrate the selection noise") from None
        if cost <= budget:
            return scale
        scale = safe_up(safe_up(scale))
    raise InvalidParameterError("cannot calibrate the selection noise")  # pragma: no cover


@dataclass(frozen=True)
class NoisyTopK(Selection):
    """The ``k`` pairs with the largest noisy scores, in order (OpenDP's exact
    report-noisy-top-k: exponential noise under pure DP, Gumbel noise -- the
    exponential mechanism -- under zCDP).

    ``budget`` is the selection's ``epsilon`` (pure) or ``rho`` (``zcdp``). The
    scores' L-infinity sensitivity is the statistic's replace-one sensitivity:
    one row moves every pair's value by at most that much at once.
    """

    k: int
    budget: float
    delta: float = 0.0
    statistic: str = "MICr"

    @property
    def measure(self) -> Measure:
        return measure_for(self.delta)

    @property
    def description(self) -> str:  # type: ignore[override]
        unit = self.measure.unit
        return f"top {self.k} by {self.statistic}, noisy top-k with {unit} {self.budget:.4g}"

    @property
    def cost(self) -> PrivacyCost | None:
        return self.measure.cost(self.budget, self.delta)

    def most(self, n_pairs: int) -> int:
        return min(self.k, n_pairs)

    def prepare(self, sensitivity: float) -> None:
        # scores in [0, 1] on the lattice: a scale beyond the sampling limit in
        # lattice steps is a choice by noise alone, refused before the charge
        check_noise_units(top_k_scale(self.k, _widened(sensitivity), self.budget,
                                      self.measure) / LATTICE, "selection")

    def noise_scale(self, n_pairs: int, sensitivity: float) -> float:
        """The scale of the noise :meth:`select` adds to ``n_pairs`` scores of this
        ``sensitivity`` (public quantities only)."""
        return top_k_scale(min(self.k, n_pairs), _widened(sensitivity), self.budget,
                           self.measure)

    def score_noise(self, n_pairs: int, sensitivity: float) -> float:
        return self.noise_scale(n_pairs, sensitivity)

    def select(self, n_pairs: int, scores=None, sensitivity: float | None = None):
        if scores is None or sensitivity is None:
            raise InvalidParameterError("noisy top-k needs the exact scores and their "
                                        "sensitivity")
        k = min(self.k, n_pairs)
        # Scores on the lattice, sensitivity widened by one step: floating-point
        # rounding of the exact values can then never exceed the bound used.
        scale = top_k_scale(k, _widened(sensitivity), self.budget, self.measure)
        on_lattice = np.rint(np.asarray(scores, dtype=np.float64) / LATTICE) * LATTICE
        # a float64 array: OpenDP reads it as the same vector, five times faster than
        # a list of Python floats (2 ms for 2049 scores)
        chosen = _top_k_measurement(k, scale, self.measure)(
            np.ascontiguousarray(on_lattice, dtype=np.float64))
        return tuple(int(i) for i in chosen)


def svt_split(epsilon: float, max_pairs: int) -> tuple[float, float]:
    """``(eps_threshold, eps_queries)`` of a sparse-vector budget: the ratio
    ``1 : (2 c)**(2/3)`` that minimises the error for ``c`` positive answers of
    non-monotone queries (Lyu, Su & Li 2017, Section 4.2), rounded down."""
    ratio = (2.0 * max_pairs) ** (2.0 / 3.0)
    eps_threshold = safe_down(epsilon / (1.0 + ratio))
    return eps_threshold, safe_down(epsilon - eps_threshold)


@dataclass(frozen=True)
class AboveThreshold(Selection):
    """The sparse vector technique: the pairs, in the request's (public) order,
    whose noisy score passes a noisy public ``threshold``, stopping after
    ``max_pairs`` of them -- pure ``epsilon``-DP for non-monotone queries.

    Scores and threshold are put on the lattice ``gamma`` (as released values are)
    and compared in integer units, with exact discrete Laplace noise: threshold
    noise of scale ``Delta_u / eps_1``, query noise of scale ``2 c Delta_u / eps_2``,
    where ``Delta_u = ceil(Delta / gamma) + 1`` lattice units covers the sensitivity
    after rounding. The proof is in ``docs/privacy.md``.
    """

    threshold: float
    max_pairs: int
    epsilon: float
    statistic: str = "MICr"

    @property
    def description(self) -> str:  # type: ignore[override]
        return (f"{self.statistic} above {self.threshold:g} (at most {self.max_pairs}), "
                f"sparse vector with epsilon {self.epsilon:.4g}")

    @property
    def cost(self) -> PrivacyCost:
        return PureCost(self.epsilon)

    def most(self, n_pairs: int) -> int:
        return min(self.max_pairs, n_pairs)

    def prepare(self, sensitivity: float) -> None:
        self.noise_units(sensitivity)

    def noise_units(self, sensitivity: float) -> tuple[int, float, float]:
        """``(Delta_u, threshold scale, query scale)`` in lattice units."""
        units = int(math.ceil(sensitivity / LATTICE)) + 1
        eps_threshold, eps_queries = svt_split(self.epsilon, self.max_pairs)
        threshold_scale = safe_up(units / eps_threshold)
        query_scale = safe_up(2.0 * self.max_pairs * units / eps_queries)
        check_noise_units(query_scale, "sparse-vector")
        return units, threshold_scale, query_scale

    def score_noise(self, n_pairs: int, sensitivity: float) -> float:
        return self.noise_units(sensitivity)[2] * LATTICE  # each query's noise

    def select(self, n_pairs: int, scores=None, sensitivity: float | None = None):
        if scores is None or sensitivity is None:
            raise InvalidParameterError("the sparse vector needs the exact scores and their "
                                        "sensitivity")
        _, threshold_scale, query_scale = self.noise_units(sensitivity)
        law = self.cost.law  # pure epsilon: discrete Laplace
        # Exact integer arithmetic (Python ints): no clipping, no overflow, even for
        # a sampler that saturates at +-(2**63 - 1).
        scores_units = np.rint(np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
                               / LATTICE).astype(np.int64).tolist()
        noisy_threshold = (int(round(self.threshold / LATTICE))
                           + int(law.draw(threshold_scale, 1)[0]))
        nu = [int(v) for v in law.draw(query_scale, n_pairs)]
        above = []
        for i in range(n_pairs):
            if scores_units[i] + nu[i] >= noisy_threshold:
                above.append(i)
                if len(above) == self.max_pairs:
                    break
        return tuple(above)


@dataclass(frozen=True)
class SelectionPlan:
    """One budget split between choosing pairs and releasing the chosen ones.

    ``total`` is what the ledger is charged, once; ``selection`` and ``release``
    (a value mechanism) each spend a part of it, and the parts never add up to
    more: under pure DP their epsilons add, under zCDP (``delta > 0``) their rhos.
    """

    total: PrivacyCost
    selection: Selection
    release: object  # a Mechanism acting on values
    screen_B: int | str | None = None
    companions: tuple = ()  # further statistics' mechanisms (equal shares of the release)

    def parts(self, chosen: int | None = None) -> str:
        """The parts in words, for the ledger and the report. A threshold's selection
        says that the whole budget is charged whatever passes; with ``chosen = 0``
        (nothing passed), that the release's share was charged but not spent."""
        def spent(mechanism) -> str:
            return f"{mechanism.label} with {mechanism.cost.describe()}"

        released = ", ".join(spent(m) for m in (self.release, *self.companions))
        if chosen == 0:
            released += (" -- no pair was chosen, so nothing was released, and the whole "
                         f"budget ({self.total.describe()}) was charged all the same: this "
                         "share was "
                         "charged with the selection (one charge, made before the outcome "
                         "was known) but not spent")
        elif isinstance(self.selection, AboveThreshold):
            released += (f" (the whole budget, {self.total.describe()}, is charged whatever "
                         "passes the threshold, even if nothing does)")
        return f"selection: {self.selection.description}; release: {released}"


def check_share(share, name: str = "select_share") -> float:
    """The fraction of the budget spent on selection: a number in (0, 1)."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise InvalidParameterError(f"{name} must be a number between 0 and 1 (exclusive)")
    return float(share)


# ------------------------------------------------------------- the rule registry


def check_count(value, name: str) -> int:
    """A positive integer argument (``k``, ``max_pairs``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1")
    return int(value)


def check_threshold(value, name: str = "threshold") -> float:
    """A public threshold on MICr, in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidParameterError(f"{name} must be a number in [0, 1]")
    return float(value)


def pure_epsilon(part: PrivacyCost) -> float:
    """The epsilon a pure-DP rule may use inside ``part``: its epsilon, or inside
    zCDP ``sqrt(2 rho)`` (pure ``eps``-DP is ``eps**2 / 2``-zCDP), rounded down."""
    return part.pure_epsilon()


@dataclass(frozen=True)
class SelectionRule:
    """A selection rule as the planner knows it: its public ``name``, the options
    it takes (checked by ``check``, which names them as the caller spells them),
    and ``build``, which makes the :class:`Selection` that spends a budget part.
    ``free(options, n_pairs)``: when the rule would publish every pair, what was
    asked in words (choosing then reads no data and costs nothing: the whole
    budget goes to the values); else ``None``."""

    name: str
    options: tuple[str, ...]
    check: Callable[[dict, object], dict]
    build: Callable[[PrivacyCost, dict], Selection]
    free: Callable[[dict, int], str | None] = lambda options, n_pairs: None


_RULES: dict[str, SelectionRule] = {}


def register_rule(rule: SelectionRule) -> None:
    """Make ``rule`` available to releases by its name (``select={"rule": name}``)."""
    _RULES[rule.name] = rule


def selection_rule(name) -> SelectionRule:
    """The registered rule called ``name``."""
    if name not in _RULES:
        raise InvalidParameterError(
            "the selection rule must be one of " + ", ".join(repr(r) for r in _RULES))
    return _RULES[name]


def rule_names() -> tuple[str, ...]:
    """Every registered selection rule's name."""
    return tuple(_RULES)


register_rule(SelectionRule(
    "top-k", ("k",),
    check=lambda o, names: {"k": check_count(o.get("k"), names.k)},  # type: ignore[attr-defined]
    build=lambda part, o: NoisyTopK(o["k"], part.amount(), part.delta),
    free=lambda o, n_pairs: f"top {o['k']}" if o["k"] >= n_pairs else None))
register_rule(SelectionRule(
    "above", ("threshold", "max_pairs"),
    check=lambda o, names: {
        "threshold": check_threshold(o.get("threshold"), names.threshold),  # type: ignore[attr-defined]
        "max_pairs": check_count(o.get("max_pairs"), names.max_pairs)},  # type: ignore[attr-defined]
    build=lambda part, o: AboveThreshold(o["threshold"], o["max_pairs"], pure_epsilon(part))))


def plan_selection(rule: str, *, eps: float, delta: float, share: float, statistic,
                   screen_B: int | str | None = None, statistics: tuple[str, ...] = ("mic",),
                   **options) -> SelectionPlan:
    """Split ``(eps, delta)``: ``share`` to the selection ``rule`` (a registered
    name: ``"top-k"`` with ``k``, ``"above"`` with ``threshold`` and
    ``max_pairs``), the rest to releasing the chosen pairs with fresh noise.

    ``delta == 0``: pure DP; selection by noisy top-k with exponential noise or by
    the sparse vector, release with Laplace noise; epsilons add. ``delta > 0``:
    zCDP with ``rho = rho_from_eps_delta(eps, delta)``; top-k with Gumbel noise (the
    exponential mechanism, ``eps**2 / 8``-zCDP per pick at ``eps = 2 Delta / scale``),
    the sparse vector at ``epsilon = sqrt(2 rho_s)`` (pure DP is ``eps**2 / 2``-zCDP),
    release with Gaussian noise; rhos add. Every part is rounded down, so the
    parts never exceed the total charged. ``screen_B``: score the candidates on
    that grid instead of the release's (``"auto"``: a small one; ``None``: the
    release's). ``statistics=("mic", "tau_a")``: the release
    part is split equally between MIC and Kendall's tau of the chosen pairs.
    """
    chosen_rule = selection_rule(rule)
    share = check_share(share)
    measure = measure_for(delta)
    total = measure.total(eps, delta)
    (choosing,) = measure.split(total, (share,))
    release: Mechanism = value_mechanism(measure.rest(total, choosing.amount()), statistic,
                                         "micr")
    selection = chosen_rule.build(choosing, options)
    companions: tuple = ()
    if len(statistics) > 1:
        release, *others = split_mechanism(release, statistics)
        companions = tuple(others)
    return SelectionPlan(total, selection, release, screen_B, companions)
