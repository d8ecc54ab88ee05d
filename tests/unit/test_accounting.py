import math
import threading
import time
from decimal import Decimal

import pytest

from dpmic_dask.errors import (
    BudgetExceededError,
    BudgetMismatchError,
    InvalidParameterError,
)
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger, PrivacyCost
from dpmic_dask.privacy.conversion import eps_from_rho, rho_from_eps_delta
from dpmic_dask.privacy.mechanisms import plan_noise, resolve_mechanism
from dpmic_dask.stats.sensitivity import f_gain, mice_sensitivity, micr_sensitivity


def test_sensitivity_formulas():
    # values worked by hand: f(1) = 2 log2 2 - 0 = 2; Delta(5) = 2 f(2) / 5 with
    # f(2) = 3 log2 3 - 2 log2 2 = 2.7548875; (precision: test_bounds_precision.py)
    n = 5000
    assert f_gain(0) == 0.0 and f_gain(1) == pytest.approx(2.0)
    assert micr_sensitivity(5) == pytest.approx(2 * 2.7548875021634682 / 5)
    assert mice_sensitivity(n, 100) == pytest.approx(100 * (2 * math.log2(n) + 4.8) / n)
    with pytest.raises(ValueError):
        micr_sensitivity(3)


@pytest.mark.parametrize("pairs", [1, 3, 45])
def test_laplace_plan_splits_eps_over_pairs(pairs):
    plan = plan_noise(mechanism="micr-lap", n=10_000, eps=0.5, delta=0.0, pairs=pairs, B=40, c=5)
    expected = pairs * (micr_sensitivity(10_000) + 2 ** -40) / 0.5
    assert plan.noise_scale == pytest.approx(expected, rel=1e-12)
    assert plan.noise_scale >= expected  # rounded up, never down
    assert plan.ci95 == pytest.approx(plan.noise_scale * math.log(20))
    assert plan.cost == PrivacyCost(0.5, 0.0, None)
    assert plan.epsilon_per_pair == pytest.approx(0.5 / pairs)


def test_gaussian_plan_uses_zcdp():
    eps, delta, pairs = 1.0, 1e-6, 10
    plan = plan_noise(mechanism="micr-gauss", n=1000, eps=eps, delta=delta, pairs=pairs, B=40, c=5)
    rho = rho_from_eps_delta(eps, delta)
    sens = micr_sensitivity(1000) + 2 ** -40
    assert plan.noise_scale == pytest.approx(sens * math.sqrt(pairs / (2 * rho)), rel=1e-12)
    assert plan.ci95 == pytest.approx(1.96 * plan.noise_scale, rel=1e-3)
    assert plan.cost.rho == pytest.approx(rho)
    assert eps_from_rho(rho, delta) == pytest.approx(eps)


def test_mice_lap_and_geom_plans():
    p = plan_noise(mechanism="mice-lap", n=5000, eps=1.0, delta=0.0, pairs=1, B=165.7, c=15)
    assert p.noise_scale == pytest.approx(mice_sensitivity(5000, 165.7) + 2 ** -40)
    g = plan_noise(mechanism="micr-geom", n=5000, eps=2.0, delta=0.0, pairs=3, B=150, c=1)
    assert math.isnan(g.ci95)  # count noise has no interval on the value's scale


def test_auto_is_laplace_for_pure_dp_and_gaussian_under_zcdp():
    assert resolve_mechanism("auto", 1.0, 0.0, 1) == "micr-lap"
    assert resolve_mechanism("auto", 1.0, 0.0, 10**4) == "micr-lap"
    for pairs in (1, 2, 10, 10**4):
        assert resolve_mechanism("auto", 1.0, 1e-6, pairs) == "micr-gauss"


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (1.0, 1e-6), (0.1, 1e-6), (3.0, 1e-9)])
@pytest.mark.parametrize("pairs", [1, 2, 3, 8, 100])
def test_under_zcdp_the_gaussian_has_less_noise_at_equal_charge(eps, delta, pairs):
    """What auto compares: at the rho a zCDP ledger charges, Laplace spending the
    same rho (eps_L = sqrt(2 rho)) has more noise per pair than the Gaussian, at
    every number of pairs; the ratio of standard deviations is 1 / sqrt(2 P)."""
    rho = rho_from_eps_delta(eps, delta)
    gauss = plan_noise(mechanism="micr-gauss", n=5000, eps=eps, delta=delta, pairs=pairs,
                         B=40, c=5)
    lap = plan_noise(mechanism="micr-lap", n=5000, eps=math.sqrt(2 * rho), delta=0.0,
                       pairs=pairs, B=40, c=5)
    ratio = gauss.noise_scale / (math.sqrt(2) * lap.noise_scale)
    assert ratio == pytest.approx(1 / math.sqrt(2 * pairs), rel=0.02)
    assert ratio < 1


@pytest.mark.parametrize("kw,match", [
    (dict(eps=0), "eps"), (dict(eps=-1), "eps"), (dict(eps=math.nan), "eps"),
    (dict(eps=math.inf), "eps"), (dict(eps="1"), "eps"), (dict(delta=1.0), "delta"),
    (dict(delta=-0.1), "delta"), (dict(mechanism="laplace"), "mechanism"),
    (dict(mechanism="micr-gauss", delta=0.0), "delta > 0"),
])
def test_plan_rejects_bad_parameters(kw, match):
    args = dict(mechanism="micr-lap", n=100, eps=1.0, delta=0.0, pairs=1, B=10, c=1)
    args.update(kw)
    with pytest.raises(InvalidParameterError, match=match):
        plan_noise(**args)


def test_ledger_refuses_overspending_and_never_refunds():
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(0.6))
    for _ in range(6):
        ledger.charge("d", PrivacyCost(0.1))
    assert ledger.remaining("d") == 0
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        ledger.charge("d", PrivacyCost(0.1))
    assert len(ledger.charges("d")) == 6
    assert ledger.spent("d") == Decimal("0.6")  # exact: 6 x 0.1 is 0.6 as typed


def test_ledger_approximate_budget_counts_rho():
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, 1e-6))
    cap = rho_from_eps_delta(1.0, 1e-6)
    pure_eps = math.sqrt(2 * cap / 2)  # each pure release costs eps**2 / 2 = cap / 2
    ledger.charge("d", PrivacyCost(pure_eps))
    ledger.charge("d", PrivacyCost(pure_eps * 0.999))
    with pytest.raises(BudgetExceededError):
        ledger.charge("d", PrivacyCost(0.01))
    pure = InMemoryLedger()
    pure.set_budget("p", Budget(1.0))
    with pytest.raises(BudgetMismatchError, match="approximate-DP"):
        pure.charge("p", PrivacyCost(0.5, 1e-6, 0.01))


def test_ledger_charges_are_atomic_under_threads(monkeypatch):
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(3.0))
    # Widen the window between reading what was spent and recording the charge:
    # without the ledger's lock every thread would read 0 spent and all 16 would pass.
    real_spent = InMemoryLedger._spent_locked

    def slow_spent(self, dataset):
        spent = real_spent(self, dataset)
        time.sleep(0.005)
        return spent

    monkeypatch.setattr(InMemoryLedger, "_spent_locked", slow_spent)
    ok, refused = [], []
    barrier = threading.Barrier(16)

    def worker():
        barrier.wait()
        try:
            ok.append(ledger.charge("d", PrivacyCost(1.0)))
        except BudgetExceededError:
            refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 3 and len(refused) == 13


def test_race_check_detects_a_ledger_without_its_lock(monkeypatch):
    # the test above has power: with the lock replaced by a no-op it sees overspending
    import contextlib

    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(3.0))
    ledger._lock = contextlib.nullcontext()
    real_spent = InMemoryLedger._spent_locked
    monkeypatch.setattr(InMemoryLedger, "_spent_locked",
                        lambda self, d: (real_spent(self, d), time.sleep(0.005))[0])
    barrier = threading.Barrier(16)
    ok = []

    def worker():
        barrier.wait()
        with contextlib.suppress(BudgetExceededError):
            ok.append(ledger.charge("d", PrivacyCost(1.0)))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) > 3


def test_budget_validation():
    with pytest.raises(InvalidParameterError):
        Budget(0)
    with pytest.raises(InvalidParameterError):
        Budget(1.0, 1.5)
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0))
    with pytest.raises(InvalidParameterError, match="already"):
        ledger.set_budget("d", Budget(2.0))
