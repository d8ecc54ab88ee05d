"""Every computed privacy bound is on the safe side of its exact value.

Exact values come from 60-digit decimal arithmetic. Sensitivities and noise
scales must never be below the exact value; a zCDP ``rho`` (spent or used to set
the noise) must never be above it. Each must also be close (within 1e-10
relative), so the safety margin costs nothing measurable.
"""

import math
import sys
from decimal import Decimal, getcontext

import pytest

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger, PrivacyCost
from dpmic_dask.privacy.conversion import (
    _best_alpha,
    cdp_log_delta,
    check_delta,
    eps_from_rho,
    rho_from_eps_delta,
)
from dpmic_dask.privacy.mechanisms import plan_noise
from dpmic_dask.stats.sensitivity import f_gain, mice_sensitivity, micr_sensitivity

getcontext().prec = 60
LN2 = Decimal(2).ln()
CLOSE = 1e-10


def exact_f(x: Decimal) -> Decimal:
    if x == 0:
        return Decimal(0)
    return ((x + 1) * (x + 1).ln() - x * x.ln()) / LN2


def exact_micr_sensitivity(n: int) -> Decimal:
    return 2 * exact_f((Decimal(n) - 1) / 2) / n


def exact_rho(eps: float, delta: float) -> Decimal:
    """The classic conversion's rho (Bun & Steinke), exactly."""
    log_term = -Decimal(delta).ln()
    return ((log_term + Decimal(eps)).sqrt() - log_term.sqrt()) ** 2


def exact_log_delta(alpha: float, rho: float, eps: float) -> Decimal:
    """Canonne-Kamath-Steinke's ln(delta) at Renyi order alpha, in 60 digits."""
    a, r, e = Decimal(alpha), Decimal(rho), Decimal(eps)
    return (a - 1) * (a * r - e) + (a - 1) * (a - 1).ln() - a * a.ln()


def converts(rho: float, eps: float, delta: float) -> bool:
    """rho-zCDP implies (eps, delta)-DP, checked exactly: by the classic bound, or
    at the Renyi order the implementation would pick (any order is a valid proof)."""
    if Decimal(rho) <= exact_rho(eps, delta):
        return True
    alpha = _best_alpha(lambda a: cdp_log_delta(a, rho, eps))
    return exact_log_delta(alpha, rho, eps) <= Decimal(delta).ln()


NS = [4, 5, 7, 10, 99, 1000, 4097, 10**5, 123_457, 10**6, 10**7, 10**8, 10**9, 10**10,
      10**11, 10**12]


@pytest.mark.parametrize("n", NS)
def test_micr_sensitivity_is_rounded_up(n):
    exact = exact_micr_sensitivity(n)
    got = Decimal(micr_sensitivity(n))
    assert got >= exact
    assert (got - exact) / exact < Decimal(CLOSE)


def test_f_gain_has_no_cancellation():
    for x in [0.5, 1.0, 3.0, 1e3, 1e6, 1e9, 4.99e11, 1e15]:
        exact = exact_f(Decimal(x))
        assert abs(Decimal(f_gain(x)) - exact) / exact < Decimal(1e-14)


@pytest.mark.parametrize("n,B", [(6, 4), (1000, 4), (5000, 165.7), (10**9, 200)])
def test_mice_sensitivity_is_rounded_up(n, B):
    exact = Decimal(B) * (2 * Decimal(n).ln() / LN2 + Decimal("4.8")) / n
    got = Decimal(mice_sensitivity(n, B))
    assert got >= exact and (got - exact) / exact < Decimal(CLOSE)


EPS_DELTA = [(1e-8, 1e-10), (1e-6, 1e-6), (0.01, 1e-5), (0.1, 1e-6), (1.0, 1e-6), (1.0, 0.5),
             (10.0, 1e-12), (1e3, 1e-9), (1e200, 1e-6), (1.0, sys.float_info.min)]


@pytest.mark.parametrize("eps,delta", EPS_DELTA)
def test_rho_converts_exactly_and_is_never_below_the_classic_one(eps, delta):
    rho = rho_from_eps_delta(eps, delta)
    assert converts(rho, eps, delta)  # the guarantee holds in exact arithmetic
    assert (exact_rho(eps, delta) - Decimal(rho)) / exact_rho(eps, delta) < Decimal(CLOSE)


@pytest.mark.parametrize("eps,delta", EPS_DELTA[:-2])
def test_rho_is_tight(eps, delta):
    """A rho 1e-6 larger would no longer be proven by either conversion."""
    rho = rho_from_eps_delta(eps, delta)
    if eps > 1e4:  # classic only: just above it the classic proof fails
        assert Decimal(rho * (1 + 1e-6)) > exact_rho(eps, delta)
        return
    alpha = _best_alpha(lambda a: cdp_log_delta(a, rho * (1 + 1e-6), eps))
    assert exact_log_delta(alpha, rho * (1 + 1e-6), eps) > Decimal(delta).ln() \
        or rho * (1 + 1e-6) <= rho  # (no larger float)


@pytest.mark.parametrize("eps,delta", EPS_DELTA[:-2])
def test_eps_from_rho_is_safe_and_no_looser_than_the_classic_bound(eps, delta):
    rho = rho_from_eps_delta(eps, delta)
    got = eps_from_rho(rho, delta)
    assert converts(rho, got, delta)
    classic = Decimal(rho) + 2 * (Decimal(rho) * -Decimal(delta).ln()).sqrt()
    assert Decimal(got) <= classic * (1 + Decimal(CLOSE))
    assert got <= eps * 1.1  # the round trip loses little


@pytest.mark.parametrize("eps,delta", [(0.01, 1e-5), (0.1, 1e-6), (1.0, 1e-6), (1.0, 1e-9),
                                       (3.0, 1e-12), (10.0, 1e-5)])
def test_rho_agrees_with_opendps_conversion(eps, delta):
    """OpenDP's zCDP-to-approximate-DP map, applied to the rho used, gives at most eps."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    gaussian = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                                  scale=1.0)  # rho = d_in**2 / 2
    profile = dp.c.make_zCDP_to_approxDP(gaussian).map(math.sqrt(2 * rho_from_eps_delta(eps, delta)))
    assert profile.epsilon(delta) <= eps * (1 + 1e-9)


@pytest.mark.parametrize("n,pairs", [(1000, 1), (10**6, 45), (10**12, 4950)])
def test_noise_scales_are_rounded_up(n, pairs):
    lattice = Decimal(2) ** -40
    widened = exact_micr_sensitivity(n) + lattice
    lap = plan_noise(mechanism="micr-lap", n=n, eps=0.3, delta=0.0, pairs=pairs, B=40, c=5)
    assert Decimal(lap.noise_scale) >= pairs * widened / Decimal(0.3)
    gauss = plan_noise(mechanism="micr-gauss", n=n, eps=0.3, delta=1e-7, pairs=pairs, B=40, c=5)
    rho = Decimal(rho_from_eps_delta(0.3, 1e-7))  # proven by the tests above
    exact_sigma = Decimal(pairs).sqrt() * widened / (2 * rho).sqrt()
    assert Decimal(gauss.noise_scale) >= exact_sigma
    assert (Decimal(gauss.noise_scale) - exact_sigma) / exact_sigma < Decimal(CLOSE)


@pytest.mark.parametrize("delta", [5e-309, 1e-310, 5e-324])
def test_subnormal_delta_is_refused(delta):
    with pytest.raises(InvalidParameterError, match="normal double"):
        check_delta(delta)
    with pytest.raises(InvalidParameterError, match="delta"):
        Budget(1.0, delta)
    with pytest.raises(InvalidParameterError, match="delta"):
        plan_noise(mechanism="micr-gauss", n=1000, eps=1.0, delta=delta, pairs=3, B=8, c=1)


def test_rho_that_underflows_is_refused_before_any_charge():
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidParameterError, match="underflows"):
        plan_noise(mechanism="micr-gauss", n=1000, eps=1e-170, delta=1e-10, pairs=3, B=8, c=1)
    with pytest.raises(InvalidParameterError, match="underflows"):
        Budget(1e-170, 1e-10)
    assert ledger.charges() == []
    for bad in (math.nan, -1.0, 0.0, math.inf):
        with pytest.raises(InvalidParameterError):
            PrivacyCost(1.0, 1e-6, bad)
