"""Privacy parameters and their conversions (no state, no charging).

* Validation of ``eps`` and ``delta``.
* zCDP <-> ``(eps, delta)``-DP: the classic conversion (Bun & Steinke 2016) and
  the tight one (Canonne, Kamath & Steinke 2020) optimised over the Renyi order,
  always rounded in the safe direction.

:mod:`dpmic_dask.privacy.accounting` builds costs, budgets and ledgers on these; the
mechanisms calibrate with them.
"""

from __future__ import annotations

import functools
import math
import sys

from dpmic_dask.checks import finite_real
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.sensitivity import safe_down, safe_up


def check_epsilon(eps, name: str = "eps") -> float:
    """``eps`` must be a finite real number > 0."""
    value = finite_real(eps, name, "a finite number > 0")
    if value <= 0:
        raise InvalidParameterError(f"{name} must be a finite number > 0")
    return value


def check_delta(delta, name: str = "delta") -> float:
    """``delta`` must be 0 or a normal double in ``(0, 1)``.

    Subnormal values (below about ``2.2e-308``) are refused: ``1 / delta``
    overflows there, and no release needs a ``delta`` that small.
    """
    value = finite_real(delta, name, "a number in [0, 1)")
    if not (0.0 <= value < 1.0):
        raise InvalidParameterError(f"{name} must be a number in [0, 1)")
    if 0.0 < value < sys.float_info.min:
        raise InvalidParameterError(
            f"{name} must be 0 or at least {sys.float_info.min:.3g} (a normal double)")
    return value


def require_delta(delta: float, message: str) -> float:
    """``delta`` checked, refused with ``message`` when it is 0: what needs a
    ``delta > 0`` (zCDP, a Gaussian mechanism, categories chosen from the values
    that occur) says so through this, the one test of it."""
    delta = check_delta(delta)
    if delta == 0.0:
        raise InvalidParameterError(message)
    return delta


def rho_classic(eps: float, delta: float) -> float:
    """``rho`` of the classic conversion (Bun & Steinke 2016, Proposition 1.3):
    ``rho``-zCDP implies ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP, so
    ``(sqrt(L + eps) - sqrt(L))**2`` with ``L = ln(1/delta)``, rounded down.

    Evaluated as ``(eps / (sqrt(L + eps) + sqrt(L)))**2``, which neither cancels
    (small ``eps``) nor overflows (huge ``eps``); ``L`` is ``-log(delta)`` so that
    no ``1 / delta`` can overflow.
    """
    log_term = -math.log(delta)
    return safe_down((eps / (math.sqrt(log_term + eps) + math.sqrt(log_term))) ** 2)


#: Relative slack, in ``ln delta``, that the tight conversion keeps for rounding.
CONVERSION_MARGIN = 1e-9
#: Above this ``eps`` only the classic conversion is used (it is then as good).
TIGHT_EPS_MAX = 1e4


def cdp_log_delta(alpha: float, rho: float, eps: float) -> float:
    """``ln delta`` of the ``(eps, delta)``-DP guarantee that ``rho``-zCDP gives through
    Renyi order ``alpha > 1`` (Canonne, Kamath & Steinke 2020, Proposition 12, with
    ``(alpha, alpha rho)``-RDP): ``(alpha - 1)(alpha rho - eps) + (alpha - 1)
    ln(alpha - 1) - alpha ln(alpha)``. Valid for every ``alpha``; the best one
    gives the smallest ``delta``. The last two terms are evaluated as
    ``(alpha - 1) log1p(-1 / alpha) - ln(alpha)``, which does not cancel for large
    ``alpha``."""
    a1 = alpha - 1.0
    return a1 * (alpha * rho - eps) + a1 * math.log1p(-1.0 / alpha) - math.log(alpha)


def _best_alpha(objective) -> float:
    """Minimise a function of the Renyi order ``alpha`` over ``(1, 1 + e**40]`` by
    golden-section search in ``ln(alpha - 1)`` (both conversions are unimodal
    there). Any order is valid, so the search only affects tightness."""
    lo, hi = -40.0, 40.0
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    f = lambda t: objective(1.0 + math.exp(t))  # noqa: E731
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(200):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - ratio * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + ratio * (hi - lo)
            f2 = f(x2)
    return 1.0 + math.exp((lo + hi) / 2.0)


def _implies(rho: float, eps: float, log_delta: float) -> bool:
    """Whether ``rho``-zCDP implies ``(eps, delta)``-DP by the tight conversion,
    with :data:`CONVERSION_MARGIN` to spare."""
    try:
        alpha = _best_alpha(lambda a: cdp_log_delta(a, rho, eps))
        slack = max(CONVERSION_MARGIN * -log_delta, 1e-11)
        return cdp_log_delta(alpha, rho, eps) <= log_delta - slack
    except (OverflowError, ValueError):
        return False


def rho_from_eps_delta(eps: float, delta: float) -> float:
    """Largest ``rho`` (rounded down) with ``rho``-zCDP implying ``(eps, delta)``-DP.

    Uses the tightest of two proven conversions: the classic one
    (:func:`rho_classic`) and Canonne, Kamath & Steinke's (2020, Proposition 12;
    :func:`cdp_log_delta`), optimised over the Renyi order; the latter gives a
    larger ``rho`` (about 1.4x at ``eps = 1, delta = 1e-6``), so less noise for the
    same guarantee. The tight ``rho`` is found by bisection from the classic one,
    and each candidate is accepted only if the conversion holds with a relative
    margin of ``1e-9`` in ``ln delta``. Raises :class:`InvalidParameterError` when
    the result is not a positive finite number (``eps`` too small for ``delta``).
    """
    eps = check_epsilon(eps)
    delta = require_delta(delta, "a zCDP rho needs delta > 0")
    return _rho_from_eps_delta(float(eps), float(delta))


@functools.lru_cache(maxsize=4096)
def _rho_from_eps_delta(eps: float, delta: float) -> float:
    """:func:`rho_from_eps_delta` of checked arguments, remembered: a pure function
    of two public numbers, asked again by every plan of the same release (the
    searches take about 15 ms; a refusal raised here is not remembered)."""
    rho = rho_classic(eps, delta)
    if not (math.isfinite(rho) and rho > 0.0):
        raise InvalidParameterError(
            "eps is too small for this delta: the zCDP budget rho underflows to 0")
    if eps > TIGHT_EPS_MAX:
        return rho
    log_delta = math.log(delta)
    if not _implies(rho, eps, log_delta):  # the tight conversion is never looser
        return rho
    good, bad = rho, 2.0 * rho
    while _implies(bad, eps, log_delta):
        good, bad = bad, 2.0 * bad
    for _ in range(100):
        mid = (good + bad) / 2.0
        if mid in (good, bad):
            break
        if _implies(mid, eps, log_delta):
            good = mid
        else:
            bad = mid
    return safe_down(good)


def eps_from_rho(rho: float, delta: float) -> float:
    """``eps`` of the ``(eps, delta)``-DP guarantee implied by ``rho``-zCDP, rounded
    up: the smaller of the classic ``rho + 2 sqrt(rho ln(1/delta))`` and the tight
    conversion at the best Renyi order."""
    classic = safe_up(rho + 2.0 * math.sqrt(rho * -math.log(delta)))
    log_term = -math.log(delta)

    def eps_at(alpha: float) -> float:  # cdp_log_delta solved for eps
        return alpha * rho + math.log1p(-1.0 / alpha) + (log_term - math.log(alpha)) / (alpha - 1.0)

    try:
        alpha = _best_alpha(eps_at)
        tight = eps_at(alpha)
    except (OverflowError, ValueError):
        return classic
    # accept the tight value only once it converts back with the margin
    if not (math.isfinite(tight) and tight > 0):
        return classic
    bump = 1e-9 * (abs(tight) + 1.0)
    for _ in range(64):
        candidate = safe_up(tight + bump)
        if candidate >= classic:
            break
        if _implies(rho, candidate, math.log(delta)):
            return candidate
        bump *= 2.0
    return classic


def eps_within_rho(rho: float, delta: float) -> float:
    """The largest ``eps`` (to a relative ``1e-12``, never above) whose zCDP budget
    ``rho_from_eps_delta(eps, delta)`` is at most ``rho``: the guarantee to ask of a
    part of a release that must fit in ``rho``.

    :func:`eps_from_rho` is not its inverse (it rounds the other way, and below
    ``rho`` of about ``1e-11`` the two conversions differ by more than rounding),
    so the part is found by bisection on ``eps``, where ``rho_from_eps_delta`` is
    increasing. Raises :class:`InvalidParameterError` when no ``eps`` fits."""
    return _eps_within_rho(float(rho), float(delta))


@functools.lru_cache(maxsize=4096)
def _eps_within_rho(rho: float, delta: float) -> float:
    """:func:`eps_within_rho`, remembered (a pure function of public numbers)."""
    def fits(eps: float) -> bool:
        try:
            return rho_from_eps_delta(eps, delta) <= rho
        except InvalidParameterError:  # rho underflows: too small to be a budget
            return False

    high = eps_from_rho(rho, delta)
    if fits(high):
        return high
    low = high
    for _ in range(64):
        low /= 2.0
        if fits(low):
            break
    else:
        raise InvalidParameterError("this share of the budget is too small to release anything")
    for _ in range(200):
        if high - low <= 1e-12 * high:
            break
        mid = (low + high) / 2.0
        if fits(mid):
            low = mid
        else:
            high = mid
    return low


def rho_cap(eps: float, delta: float, approx: float = 0.0) -> float:
    """The zCDP ``rho`` an ``(eps, delta)`` budget holds once approximate parts
    whose bad events have chances adding up to ``approx`` are in it: ``rho`` must
    convert to ``(eps - ln(1 / (1 - approx)), delta - approx)``-DP (each rounded
    down; ``docs/privacy.md``, "Approximate parts"). ``approx = 0`` is exactly
    :func:`rho_from_eps_delta`. Returns 0.0 when nothing is left."""
    if approx == 0.0:
        return rho_from_eps_delta(eps, delta)
    if not 0.0 < approx < delta:
        return 0.0
    eps_left = safe_down(eps + math.log1p(-approx))
    delta_left = safe_down(delta - safe_up(approx))
    if not (eps_left > 0.0 and delta_left > 0.0):
        return 0.0
    try:
        return rho_from_eps_delta(eps_left, delta_left)
    except InvalidParameterError:
        return 0.0
