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
