"""Privacy costs as types: parts of a budget never add up to more than it, and a
release's noise and composition follow its cost's measure, not a test on delta."""

import math

import pytest

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from dpmic_dask.privacy.costs import PURE_DP, ZCDP, PrivacyCost, measure_for, split_front
from dpmic_dask.privacy.mechanisms import GaussianMechanism, LaplaceMechanism, value_mechanism
from dpmic_dask.stats.statistics import get_statistic


def test_delta_chooses_the_measure_in_one_place():
    assert measure_for(0.0) is PURE_DP and measure_for(1e-9) is ZCDP
    assert PrivacyCost(1.0).measure is PURE_DP
    assert PrivacyCost(1.0, 1e-6, 0.02).measure is ZCDP
    with pytest.raises(InvalidParameterError):
        measure_for(-1.0)


@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (0.3, 0.0), (1e-6, 1e-6), (1.0, 1e-6),
                                        (50.0, 1e-5), (1e300, 0.0)])
@pytest.mark.parametrize("shares", [(0.5,), (0.1, 0.9), (1 / 3, 1 / 3, 1 / 3), (0.25,) * 4,
                                    (0.999999,)])
def test_parts_never_add_up_to_more_than_the_whole(eps, delta, shares):
    measure = measure_for(delta)
    total = measure.total(eps, delta)
    parts = measure.split(total, shares)
    assert sum(p.amount() for p in parts) <= total.amount()
    for part, share in zip(parts, shares):
        assert part.measure is measure
        assert part.amount() == pytest.approx(share * total.amount(), rel=1e-9)
    rest = measure.rest(total, parts[0].amount())
    assert parts[0].amount() + rest.amount() <= total.amount()
    assert measure.fits(rest, total) and measure.fits(parts[0], total)


def test_a_part_of_the_other_kind_does_not_fit():
    pure, zcdp = PrivacyCost(0.5), PrivacyCost(0.5, 1e-6, 0.01)
    assert not PURE_DP.fits(zcdp, PrivacyCost(10.0))
    assert not ZCDP.fits(pure, PrivacyCost(10.0, 1e-6, 1.0))  # the release's own kind only
    assert not PURE_DP.fits(PrivacyCost(0.6), pure)
    with pytest.raises(InvalidParameterError, match="no budget"):
        PURE_DP.rest(pure, 0.5)


def test_zcdp_amounts_and_words():
    total = ZCDP.total(1.0, 1e-6)
    assert total.rho == rho_from_eps_delta(1.0, 1e-6) and total.amount() == total.rho
    assert PURE_DP.total(0.5, 0.0).describe() == "epsilon 0.5"
    assert total.describe().startswith("rho ")
    # a pure part inside zCDP costs eps**2 / 2
    assert ZCDP.amount(PrivacyCost(0.2)) == pytest.approx(0.02)
    eps = ZCDP.within(0.5 * total.rho, 1e-6)
    assert rho_from_eps_delta(eps, 1e-6) <= 0.5 * total.rho


def test_the_value_mechanism_follows_the_measure():
    micr = get_statistic("micr")
    lap = value_mechanism(PrivacyCost(0.5), micr, "micr")
    gauss = value_mechanism(ZCDP.total(1.0, 1e-6), micr, "micr")
    assert isinstance(lap, LaplaceMechanism) and lap.label == "micr-lap"
    assert isinstance(gauss, GaussianMechanism) and gauss.label == "micr-gauss"
    assert gauss.cost.rho == ZCDP.total(1.0, 1e-6).rho
    assert math.isclose(lap.cost.epsilon, 0.5)


@pytest.mark.parametrize("columns", [1, 3, 7, 100])
def test_column_epsilon_never_spends_more_than_its_part(columns):
    from dpmic_dask.privacy.costs import PURE_DP, ZCDP, column_epsilon

    pure = PURE_DP.total(0.7, 0.0)
    assert column_epsilon(pure, columns) * columns <= 0.7
    assert column_epsilon(pure, columns) == pytest.approx(0.7 / columns, rel=1e-12)
    z = ZCDP.total(1.0, 1e-6)
    eps_c = column_epsilon(z, columns)
    assert columns * eps_c ** 2 / 2 <= z.amount()
    assert columns * (eps_c * (1 + 1e-9)) ** 2 / 2 > z.amount()  # the largest that fits


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_a_front_step_and_its_release_share_the_budget(delta):
    total = measure_for(delta).total(2.0, delta)
    part, rest, release_eps, mechanism = split_front(total, 0.1, "auto", "a step")
    assert part.amount() + rest.amount() <= total.amount()
    assert part.amount() == pytest.approx(0.1 * total.amount(), rel=1e-9)
    if delta == 0:
        assert (release_eps, mechanism) == (rest.epsilon, "auto")
    else:
        assert mechanism == "micr-gauss"
        assert rho_from_eps_delta(release_eps, delta) <= rest.amount()
        with pytest.raises(InvalidParameterError, match="with a step and delta > 0"):
            split_front(total, 0.1, "micr-lap", "a step")


def test_privacy_cost_builds_the_kind_its_amounts_make_and_round_trips():
    import pickle

    from dpmic_dask.privacy.costs import PureCost, ZCDPCost

    pure, zcdp = PrivacyCost(0.5), PrivacyCost(1.0, 1e-6, 0.02, 1e-7)
    assert type(pure) is PureCost and type(zcdp) is ZCDPCost
    assert pure == PureCost(0.5) and zcdp == ZCDPCost(1.0, 1e-6, 0.02, 1e-7)
    assert PrivacyCost(epsilon=1.0, delta=1e-6, rho=0.02) == ZCDPCost(1.0, 1e-6, 0.02)
    for cost in (pure, zcdp, PrivacyCost.checked(0.3), PrivacyCost.checked(1.0, 1e-6, 0.1)):
        assert isinstance(cost, PrivacyCost)
        assert pickle.loads(pickle.dumps(cost)) == cost
        # as a ledger stores and reads it back: the four amounts
        again = PrivacyCost(cost.epsilon, cost.delta, cost.rho, cost.approx_delta)
        assert again == cost and type(again) is type(cost)
    assert PrivacyCost.checked(0.3).measure is PURE_DP
    assert PrivacyCost.checked(1.0, 1e-6, 0.1).measure is ZCDP
    with pytest.raises(InvalidParameterError, match="no rho"):
        PureCost(1.0, 0.0, 0.1)
    with pytest.raises(InvalidParameterError, match="rho"):
        ZCDPCost(1.0, 1e-6)
    with pytest.raises(InvalidParameterError, match="approximate"):
        PrivacyCost(1.0, 0.0, None, 1e-9)


def test_each_kind_says_its_law_scale_and_words():
    from dpmic_dask.privacy.noise import GAUSSIAN, LAPLACE

    pure, zcdp = PrivacyCost(0.5), ZCDP.total(1.0, 1e-6)
    assert pure.law is LAPLACE and zcdp.law is GAUSSIAN
    assert (pure.norm, zcdp.norm) == ("L1", "L2")
    assert pure.sensitivity(3.0, 2.0) == 3.0 and zcdp.sensitivity(3.0, 2.0) == 2.0
    assert pure.noise_scale(3.0, 2.0) >= 3.0 / 0.5
    assert pure.noise_scale(3.0, 2.0) == pytest.approx(6.0, rel=1e-9)
    sigma = zcdp.noise_scale(3.0, 2.0)
    assert sigma >= 2.0 / math.sqrt(2.0 * zcdp.rho)
    assert sigma == pytest.approx(2.0 / math.sqrt(2.0 * zcdp.rho), rel=1e-9)
    assert pure.pure_epsilon() == 0.5
    assert zcdp.pure_epsilon() ** 2 / 2 <= zcdp.rho
    assert pure.pure_part() == PrivacyCost(0.5) and zcdp.pure_part() is zcdp
    assert PrivacyCost(0.5, 1e-6).pure_part() == PrivacyCost(0.5)  # a pure step states no delta
    assert pure.statement(2).startswith("This release is 0.5-differentially private")
    assert "zCDP" in zcdp.statement(2)
    assert pure.value_unit() == "epsilon" and zcdp.value_unit() == "rho (zCDP)"
    assert pure.spent_by_columns(3) == 0.5
    assert zcdp.spent_by_columns(3) >= 3 * zcdp.per_column(3)


def test_laws_say_their_tails():
    from dpmic_dask.privacy.noise import GAUSSIAN, LAPLACE

    # discrete Laplace: P(Z > t) <= exp(-(t + 1) / b); discrete Gaussian: exp(-t^2 / 2s^2)
    for scale in (0.5, 3.0, 40.0):
        t = LAPLACE.margin(scale, 1e-3)
        assert math.exp(-(t + 1) / scale) <= 1e-3 < math.exp(-t / scale) or t == 0
        t = GAUSSIAN.margin(scale, 1e-3)
        assert math.exp(-t * t / (2 * scale * scale)) <= 1e-3
        assert math.exp(-(t - 1) ** 2 / (2 * scale * scale)) > 1e-3
    assert LAPLACE.variance(2.0) == 8.0 and GAUSSIAN.variance(2.0) == 4.0
    assert LAPLACE.ci95 == pytest.approx(math.log(20)) and GAUSSIAN.ci95 == pytest.approx(1.96,
                                                                                          abs=1e-3)
