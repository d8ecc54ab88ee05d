"""The registry of public release names: which statistic each one releases and
the mechanism class that noises it, resolved from the arguments of a request.

The built-in mechanisms are registered in :mod:`dpmic_dask.privacy.mechanisms`
(the package imports them); see its table.
"""

from __future__ import annotations

import warnings

from dpmic_dask.errors import InvalidParameterError, UnusedParameterWarning, user_stacklevel
from dpmic_dask.privacy.conversion import check_delta, check_epsilon, require_delta
from dpmic_dask.privacy.costs import Measure, measure_for
from dpmic_dask.privacy.mechanisms.base import Mechanism, NoisePlan, check_law
from dpmic_dask.stats.defaults import grid_defaults
from dpmic_dask.stats.statistics.registry import get_statistic, public_statistics

#: public name -> (statistic name, mechanism class)
_RELEASES: dict[str, tuple[str, type[Mechanism]]] = {}
#: measure -> the mechanism that noises values with a part of that kind
_VALUE_MECHANISMS: dict[Measure, type[Mechanism]] = {}


def register(name: str, statistic: str, mechanism: type[Mechanism]) -> None:
    """Make ``name`` a public release: ``statistic`` noised by ``mechanism``."""
    get_statistic(statistic)  # must exist
    check_law(mechanism)  # must say which noise it draws
    _RELEASES[name] = (statistic, mechanism)


def register_value_mechanism(measure: Measure, mechanism: type[Mechanism]) -> None:
    """Make ``mechanism`` the value mechanism that spends parts of ``measure``'s kind
    (:func:`value_mechanism`)."""
    check_law(mechanism)
    _VALUE_MECHANISMS[measure] = mechanism


def mechanism_names() -> tuple[str, ...]:
    """Every accepted ``mechanism=`` value, ``"auto"`` first."""
    return ("auto", *_RELEASES)


def check_mechanism(mechanism) -> str:
    """``mechanism`` if it is a registered name or ``"auto"``."""
    if mechanism not in mechanism_names():
        raise InvalidParameterError(
            "mechanism must be one of " + ", ".join(repr(m) for m in mechanism_names()))
    return mechanism


def resolve_mechanism(mechanism: str, eps: float, delta: float, pairs: int) -> str:
    """``auto``: ``micr-lap`` when ``delta == 0`` (pure DP), ``micr-gauss`` when
    ``delta > 0``.

    ``delta > 0`` accounts the release in zCDP (:func:`~dpmic_dask.privacy.costs.measure_for`),
    where a release is charged its ``rho``. At equal ``rho`` the Gaussian always
    has less noise: Laplace spending ``rho`` has ``eps_L = sqrt(2 rho)``, so per
    pair a standard deviation ``sqrt(2) P Delta / eps_L = P Delta / sqrt(rho)``,
    against the Gaussian's ``Delta sqrt(P / (2 rho))``, a ratio of
    ``1 / sqrt(2 P) < 1`` for every ``P >= 1`` (``docs/mechanisms.md``). Comparing
    the two at the same ``(eps, delta)`` statement instead would pick Laplace for
    a few pairs and charge a zCDP budget ``eps^2 / 2``, many times the Gaussian's
    ``rho``."""
    mechanism = check_mechanism(mechanism)
    if mechanism != "auto":
        if _RELEASES[mechanism][1].needs_delta:
            require_delta(delta, f"mechanism {mechanism!r} needs delta > 0")
        return mechanism
    return auto_mechanism(delta)


def auto_mechanism(delta: float) -> str:
    """The release mechanism ``auto`` stands for: the value mechanism of the
    measure ``delta`` chooses (``micr-lap``, ``micr-gauss``)."""
    return f"micr-{measure_for(delta).noise}"


def mechanism_supports(mechanism: str, feature: str, delta: float = 0.0) -> bool:
    """Whether the release ``mechanism`` (a registered name or ``"auto"``) can hold
    ``feature`` (:meth:`Mechanism.supports`), decided from the mechanism's own
    declaration, never from its name."""
    name = resolve_mechanism(mechanism, 1.0, delta, 1) if mechanism == "auto" else \
        check_mechanism(mechanism)
    return _RELEASES[name][1].supports(feature)


def build_mechanism(mechanism: str, *, eps: float, delta: float, pairs: int) -> Mechanism:
    """The mechanism object of a release (``auto`` resolved from ``(eps, delta, P)``)."""
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    name = resolve_mechanism(mechanism, eps, delta, pairs)
    statistic, cls = _RELEASES[name]
    # A pure mechanism ignores delta: the release is then pure eps-DP (said, so
    # that a delta given for it is not silently dropped).
    if delta > 0 and not cls.needs_delta:
        warnings.warn(f"mechanism {name!r} is pure eps-DP: delta = {delta:g} is not used "
                      "(the release is (eps, 0)-DP, a stronger guarantee); leave delta at "
                      "0, or use micr-gauss to spend it", UnusedParameterWarning,
                      stacklevel=user_stacklevel())
    return cls(epsilon=eps, delta=delta if cls.needs_delta else 0.0,
               statistic=get_statistic(statistic), label=name)


def value_mechanism(cost, statistic, name: str) -> Mechanism:
    """The value mechanism that spends ``cost`` on ``statistic``, chosen by the
    cost's measure: Laplace for a pure part, Gaussian for a zCDP part (labelled
    ``name-lap`` / ``name-gauss``)."""
    label = f"{name}-{cost.measure.noise}"
    return _VALUE_MECHANISMS[cost.measure].for_cost(cost, statistic=statistic, label=label)


def split_mechanism(mechanism: Mechanism, statistics: tuple[str, ...]) -> tuple[Mechanism, ...]:
    """One mechanism per released statistic, each with an equal share of
    ``mechanism``'s budget (``eps / k`` under pure DP, ``rho / k`` under zCDP, both
    rounded down so the shares never add up to more), of the same noise kind.

    ``statistics`` as :func:`check_statistics` returns them (``"mic"`` first, then
    companions' registry names); ``mechanism`` must add noise to values.
    """
    if mechanism.acts_on != "values":
        raise InvalidParameterError(
            f"mechanism {mechanism.label!r} adds noise to counts; a second statistic needs "
            "value noise (micr-lap or micr-gauss)")
    cost = mechanism.cost
    parts = cost.measure.split(cost, [1.0 / len(statistics)] * len(statistics))
    out = []
    for name, part in zip(statistics, parts):
        statistic = get_statistic(public_statistics().get(name, name))
        out.append(value_mechanism(part, statistic, statistic.name))
    return tuple(out)


def check_statistics(statistics) -> tuple[str, ...]:
    """``("mic",)`` or ``("mic", "tau_a")`` (a list or tuple; a string is one name;
    ``"tau"`` is the older spelling of ``"tau_a"``). Returns ``"mic"`` and the
    companions' registry names, one spelling each."""
    if isinstance(statistics, str):
        statistics = (statistics,)
    try:
        names = tuple(statistics)
    except TypeError:
        names = ()
    known = public_statistics()
    canonical = tuple(known.get(n, "") if isinstance(n, str) else "" for n in names)
    if not names or names[0] != "mic" or "" in canonical or len(set(canonical)) != len(names):
        raise InvalidParameterError(
            "statistics must start with 'mic' and may add 'tau_a': ('mic',) or "
            "('mic', 'tau_a')")
    return ("mic", *canonical[1:])


#: Older spellings of ``statistics=(...)`` names, still accepted with a warning
#: (``FutureWarning``: it is meant for the people who call the library).
DEPRECATED_STATISTICS = {"tau": "tau_a"}


def deprecated_spellings(statistics) -> list[str]:
    """The names in ``statistics`` (as a caller wrote them) that are older
    spellings (:data:`DEPRECATED_STATISTICS`), in order; ``[]`` for anything else."""
    if isinstance(statistics, str):
        statistics = (statistics,)
    try:
        names = list(statistics)
    except TypeError:
        return []
    return [n for n in names if isinstance(n, str) and n in DEPRECATED_STATISTICS]


def deprecation_message(old: str, where: str = "statistics") -> str:
    """The one-line notice for the old spelling ``old``."""
    return (f"{where}: {old!r} is deprecated and will be removed; write "
            f"{DEPRECATED_STATISTICS[old]!r} (the same binned Kendall's tau-a)")


def plan_noise(*, mechanism: str, n: int, eps: float, delta: float, pairs: int,
               B: float, c: int) -> NoisePlan:
    """Split a total ``(eps, delta)`` over ``pairs`` values and calibrate the noise.

    (Not :func:`dpmic_dask.release.plan.plan_release`, which plans a whole
    release of a frame: this one only sizes a mechanism's noise.)"""
    return build_mechanism(mechanism, eps=eps, delta=delta, pairs=pairs).calibrate(
        n=n, pairs=pairs, B=B, c=c)


def default_parameters(mechanism: str, n: int, eps: float) -> tuple[float, int]:
    """``(B, c)`` for a registered mechanism name (``micr-lap``, ...): the defaults
    of the kind of grid that mechanism declares (``Mechanism.grid_kind``), from
    ``(n, eps)`` per value. A release lowers this ``B`` further where its own
    noise on each value is wide (:func:`dpmic_dask.stats.defaults.noisy_grid_cap`;
    ``Plan.explain()`` shows the ``B`` a release will use)."""
    name = resolve_mechanism(mechanism, 1.0, 1e-6, 1)
    needs = _RELEASES[name][1].needs_delta  # a delta only for one that uses it
    built = build_mechanism(name, eps=1.0, delta=1e-6 if needs else 0.0, pairs=1)
    return grid_defaults(built.grid_kind, n, eps)
