"""The mechanism protocol, the noise plan, and the shared output lattice.

A mechanism is an object with a validated keyword-only constructor (its total
``epsilon`` and ``delta``). Like an OpenDP measurement that carries its privacy
map, it answers its own privacy cost (:attr:`Mechanism.cost`): the budget
precheck and the charge both read that one property, so they cannot disagree.
:meth:`Mechanism.calibrate` turns the cost into noise for a release of ``P``
values (or counts) from public quantities only, and :meth:`Mechanism.randomise`
draws that noise -- after the charge.

Real values are rounded to the lattice ``gamma``, get ``gamma`` times an exact
integer draw, and are clamped to the statistic's range (``[0, 1]`` for MIC,
``[-1, 1]`` for tau); counts get exact two-sided
geometric noise and are clamped to ``[0, n]`` (TruncGeom). The integer draw is
clipped (the noise, never the value) to a data-independent range that the final
clamp makes lossless: ``+-2 (high - low) / gamma`` lattice units for values in
``[low, high]``, ``+-(n + 1)`` for counts in ``[0, n]``. Any draw beyond it clamps to the same end
whatever the exact value, so clipping changes no output -- but it keeps the sum
inside int64 when a sampler saturates at ``+-(2**63 - 1)``, which would otherwise
wrap around and reveal whether the exact value is 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import check_delta, check_epsilon, require_delta
from dpmic_dask.privacy.noise import GAUSSIAN, LAPLACE, NoiseLaw
from dpmic_dask.stats.defaults import grid_defaults

if TYPE_CHECKING:
    from dpmic_dask.privacy.costs import PrivacyCost

#: Real outputs are rounded to multiples of this before integer noise is added.
LATTICE = 2.0 ** -40
#: Largest noise scale, in integer units (lattice steps or counts), that is sampled.
#: Beyond it a release is noise only, and the exact integer samplers underneath
#: saturate at +-(2**63 - 1); such plans are refused before anything is charged.
MAX_NOISE_UNITS = 2.0 ** 52
#: Half-width multipliers of the central 95% interval of the noise alone.
LAPLACE_CI95 = LAPLACE.ci95
GAUSS_CI95 = GAUSSIAN.ci95


@dataclass(frozen=True)
class NoisePlan:
    """Noise for one release of ``pairs`` values, from public quantities only.

    ``law`` is the integer noise the mechanism draws (its type picks the sampler).
    ``noise_scale`` is per value: the Laplace scale ``b`` or Gaussian ``sigma`` on
    the statistic's scale, or for count noise the per-cell two-sided geometric
    scale in counts. ``ci95`` is the half-width of the central 95% interval of the
    noise alone (NaN for count noise). ``mechanism`` is the public name of the
    release (``micr-lap``, ...), ``statistic`` the statistic's registry name.
    """

    mechanism: str
    law: NoiseLaw
    n: int
    pairs: int
    B: float
    c: int
    epsilon: float
    delta: float
    sensitivity: float
    noise_scale: float
    ci95: float
    lattice: float
    cost: PrivacyCost
    statistic: str = "micr"
    low: float = 0.0
    high: float = 1.0

    @property
    def epsilon_per_pair(self) -> float:
        return self.epsilon / self.pairs


def check_noise_units(units: float, what: str) -> None:
    """Refuse a plan whose noise scale, in integer units, cannot be sampled faithfully."""
    if not units <= MAX_NOISE_UNITS:  # also NaN
        raise InvalidParameterError(
            f"the {what} noise would have scale {units:.3g} units, above the sampling limit "
            f"of {MAX_NOISE_UNITS:.3g}; such a release would be noise only: raise eps, "
            "release fewer pairs or use more rows (nothing was charged)"
        )


def noisy_values(exact: np.ndarray, plan: NoisePlan) -> np.ndarray:
    """Noisy, clamped releases of exact values in ``[plan.low, plan.high]`` (``[0, 1]``
    for MIC, ``[-1, 1]`` for a correlation), one per pair."""
    exact = np.clip(np.asarray(exact, dtype=np.float64), plan.low, plan.high)
    gamma = plan.lattice
    on_lattice = np.rint(exact / gamma).astype(np.int64)  # in [low / gamma, high / gamma]
    # lossless: |z| >= (high - low) / gamma clamps to the same end anyway
    limit = 2 * int(round((plan.high - plan.low) / gamma))
    z = np.clip(plan.law.draw(plan.noise_scale / gamma, exact.size), -limit, limit)
    return np.clip((on_lattice + z) * gamma, plan.low, plan.high)


def noisy_counts(counts: np.ndarray, plan: NoisePlan) -> np.ndarray:
    """TruncGeom counts: ``clamp(a + Z, 0, n)`` independently for every cell."""
    counts = np.asarray(counts, dtype=np.int64)
    limit = plan.n + 1  # lossless: |z| >= n clamps anyway for counts in [0, n]
    z = np.clip(plan.law.draw(plan.noise_scale, counts.size), -limit, limit)
    return np.clip(counts + z.reshape(counts.shape), 0, plan.n)


def check_law(cls) -> None:
    """A mechanism class must declare the noise it draws as a :class:`NoiseLaw`
    (never a name that could fall through to another sampler)."""
    if not isinstance(getattr(cls, "law", None), NoiseLaw):
        raise TypeError(f"{cls.__name__} must declare law = a NoiseLaw instance")


class Mechanism(ABC):
    """A noise mechanism for a release of ``P`` values of one statistic.

    Parameters (keyword-only, validated at construction)
    ----------------------------------------------------
    epsilon : float > 0
        Total privacy budget of the release.
    delta : float in [0, 1)
        ``> 0`` only for approximate-DP mechanisms.
    statistic : PairStatistic
        What is released (its sensitivity calibrates value noise).
    label : str
        The public name of the release (``micr-lap``, ...).
    """

    #: The integer noise law the mechanism draws (its type decides the sampler),
    #: and whether it noises values or counts.
    law: NoiseLaw
    acts_on: str = "values"
    needs_delta: bool = False
    #: What a release with this mechanism can hold beyond ordered numeric pairs,
    #: checked before any charge (:meth:`supports`): ``"categorical"`` (a pair with
    #: a categorical axis) and ``"drop"`` (``nulls="drop"``, calibrated to a public
    #: ``min_rows``). ``None``: from what the mechanism noises -- a mechanism on
    #: values supports both; one on counts neither (its values are read off noisy
    #: counts by the plain statistic, which knows no categorical axis, and its
    #: noise is calibrated to the exact row count).
    features: frozenset[str] | None = None

    @classmethod
    def supports(cls, feature: str) -> bool:
        """Whether a release with this mechanism can hold ``feature``."""
        if cls.features is not None:
            return feature in cls.features
        return cls.acts_on == "values"


    def __init__(self, *, epsilon, delta=0.0, statistic, label: str):
        check_law(type(self))
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        if self.needs_delta:
            require_delta(self.delta, f"mechanism {label!r} needs delta > 0")
        self.statistic = statistic
        self.label = label

    @classmethod
    def for_cost(cls, cost: PrivacyCost, *, statistic, label: str) -> Mechanism:
        """The mechanism that spends ``cost`` (a part of a larger budget) on
        ``statistic``'s values."""
        return cls(epsilon=cost.epsilon, statistic=statistic, label=label)

    @property
    @abstractmethod
    def cost(self) -> PrivacyCost:
        """The privacy cost of a release with this mechanism (its privacy map)."""

    @abstractmethod
    def calibrate(self, *, n: int, pairs: int, B: float, c: int) -> NoisePlan:
        """The noise for ``pairs`` values from ``n`` rows (public quantities only)."""

    @property
    def grid_kind(self) -> str:
        """The kind of default grid this mechanism needs (``dpmic_dask.stats.defaults``),
        from what it is, not from its name: MICe's ranks, noise on counts, or
        noise on values."""
        if not self.statistic.mergeable:
            return "ranks"
        return "counts" if self.acts_on == "counts" else "values"

    def default_grid(self, n: int, eps_per_value: float) -> tuple[float, int]:
        """Default ``(B, c)`` for ``n`` rows and ``eps`` per released value."""
        return grid_defaults(self.grid_kind, n, eps_per_value)

    def randomise(self, data: np.ndarray, plan: NoisePlan) -> np.ndarray:
        """Draw the noise of ``plan`` on exact ``data`` (values, or counts for count
        mechanisms). Call only after the release has been charged."""
        return noisy_counts(data, plan) if self.acts_on == "counts" else noisy_values(data, plan)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(label={self.label!r}, epsilon={self.epsilon!r}, " \
               f"delta={self.delta!r})"
