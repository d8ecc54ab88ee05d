"""Mechanism objects: validated keyword-only construction, the registry, and each
mechanism's privacy map checked against the map of the OpenDP measurement that
samples its noise."""

import math
import warnings

import numpy as np
import opendp.prelude as dp
import pytest

from dpmic_dask.errors import InvalidParameterError, UnusedParameterWarning
from dpmic_dask.privacy.mechanisms import (
    LATTICE,
    GaussianMechanism,
    GeometricCountsMechanism,
    LaplaceMechanism,
    build_mechanism,
    mechanism_names,
)
from dpmic_dask.stats.statistics import MICr, get_statistic

dp.enable_features("contrib")
I64 = dp.vector_domain(dp.atom_domain(T="i64"))


@pytest.mark.parametrize("name,cls,statistic", [
    ("micr-lap", LaplaceMechanism, "micr"), ("micr-gauss", GaussianMechanism, "micr"),
    ("mice-lap", LaplaceMechanism, "mice"), ("micr-geom", GeometricCountsMechanism, "micr"),
])
def test_registry_pairs_a_statistic_with_a_noise(name, cls, statistic):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedParameterWarning)  # delta of a pure one
        mech = build_mechanism(name, eps=1.0, delta=1e-6, pairs=3)
    assert type(mech) is cls and mech.statistic.name == statistic and mech.label == name
    assert name in mechanism_names() and mechanism_names()[0] == "auto"


def test_auto_resolves_from_the_measure_delta_chooses():
    assert build_mechanism("auto", eps=1.0, delta=0.0, pairs=500).label == "micr-lap"
    assert build_mechanism("auto", eps=1.0, delta=0.0, pairs=500).cost.is_pure
    assert build_mechanism("auto", eps=1.0, delta=1e-6, pairs=2).label == "micr-gauss"
    assert not build_mechanism("auto", eps=1.0, delta=1e-6, pairs=2).cost.is_pure
    # a pure mechanism asked for by name with delta > 0 is charged as pure eps-DP,
    # and says that its delta is not used
    with pytest.warns(UnusedParameterWarning, match="delta = 1e-06 is not used"):
        assert build_mechanism("micr-lap", eps=1.0, delta=1e-6, pairs=2).cost.is_pure


def test_constructors_are_keyword_only_and_validated():
    with pytest.raises(TypeError):
        LaplaceMechanism(1.0)  # type: ignore[misc]  # positional: the point of the test
    with pytest.raises(InvalidParameterError, match="eps"):
        LaplaceMechanism(epsilon=-1, statistic=MICr(), label="x")
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        GaussianMechanism(epsilon=1.0, delta=0.0, statistic=MICr(), label="micr-gauss")
    with pytest.raises(InvalidParameterError, match="mechanism"):
        build_mechanism("laplace-ish", eps=1.0, delta=0.0, pairs=1)


def lattice_units(sensitivity: float) -> int:
    """Largest change of one value on the lattice: |round(v/g) - round(v'/g)|."""
    return math.floor((sensitivity + LATTICE) / LATTICE)


@pytest.mark.parametrize("n,pairs", [(100, 1), (5000, 3), (10**6, 45)])
def test_laplace_cost_matches_opendp_privacy_map(n, pairs):
    mech = build_mechanism("micr-lap", eps=0.7, delta=0.0, pairs=pairs)
    plan = mech.calibrate(n=n, pairs=pairs, B=40, c=5)
    measurement = dp.m.make_laplace(I64, dp.l1_distance(T="i64"), scale=plan.noise_scale / LATTICE)
    opendp_eps = measurement.map(pairs * lattice_units(plan.sensitivity))
    assert opendp_eps <= mech.cost.epsilon
    # equal up to the integer lattice distance (one unit in lattice_units)
    unit = 2.0 / lattice_units(plan.sensitivity)
    assert opendp_eps == pytest.approx(mech.cost.epsilon, rel=unit)


@pytest.mark.parametrize("n,pairs", [(100, 1), (5000, 4), (10**6, 49)])
def test_gaussian_cost_matches_opendp_privacy_map(n, pairs):
    mech = build_mechanism("micr-gauss", eps=0.7, delta=1e-7, pairs=pairs)
    plan = mech.calibrate(n=n, pairs=pairs, B=40, c=5)
    measurement = dp.m.make_gaussian(I64, dp.l2_distance(T="i64"), scale=plan.noise_scale / LATTICE)
    l2 = math.isqrt(pairs) * lattice_units(plan.sensitivity)  # pairs is a perfect square
    opendp_rho = measurement.map(l2)
    assert opendp_rho <= mech.cost.rho
    assert opendp_rho == pytest.approx(mech.cost.rho, rel=4.0 / lattice_units(plan.sensitivity))


@pytest.mark.parametrize("B,pairs", [(4, 1), (20, 3)])
def test_geometric_counts_cost_matches_opendp_privacy_map(B, pairs):
    mech = build_mechanism("micr-geom", eps=2.0, delta=0.0, pairs=pairs)
    plan = mech.calibrate(n=1000, pairs=pairs, B=B, c=1)
    grids = 2 * (B // 2 - 1)
    measurement = dp.m.make_laplace(I64, dp.l1_distance(T="i64"), scale=plan.noise_scale)
    # a replaced row moves one point in every grid of every pair: L1 change 2 per grid
    opendp_eps = measurement.map(2 * grids * pairs)
    assert opendp_eps <= mech.cost.epsilon
    assert opendp_eps == pytest.approx(mech.cost.epsilon, rel=1e-9)


def test_randomise_acts_on_values_or_counts():
    lap = build_mechanism("micr-lap", eps=1e6, delta=0.0, pairs=2)
    plan = lap.calibrate(n=10**6, pairs=2, B=8, c=1)
    values = lap.randomise(np.array([0.25, 0.75]), plan)
    assert values.shape == (2,) and np.allclose(values, [0.25, 0.75], atol=1e-6)
    geom = build_mechanism("micr-geom", eps=1e6, delta=0.0, pairs=1)
    plan = geom.calibrate(n=50, pairs=1, B=8, c=1)
    counts = geom.randomise(np.array([[0, 5, 50]]), plan)
    assert counts.dtype.kind == "i" and counts.min() >= 0 and counts.max() <= 50


def test_statistics_registry():
    assert get_statistic("micr").mergeable and not get_statistic("mice").mergeable
    with pytest.raises(KeyError, match="known"):
        get_statistic("pearson")


def test_a_mechanism_must_declare_the_noise_it_draws():
    """The sampler is chosen by the mechanism's noise law (a type), never by a name
    with a fall-through: a mechanism without one cannot be registered or built."""
    from dpmic_dask.privacy.mechanisms import register
    from dpmic_dask.privacy.mechanisms.base import Mechanism
    from dpmic_dask.privacy.noise import GAUSSIAN, DiscreteGaussian
    from dpmic_dask.stats.statistics import get_statistic

    class Nameless(Mechanism):
        distribution = "gaussian-counts"  # a name alone says nothing

        @property
        def cost(self):  # pragma: no cover - never built
            raise AssertionError

        def calibrate(self, *, n, pairs, B, c):  # pragma: no cover
            raise AssertionError

    with pytest.raises(TypeError, match="NoiseLaw"):
        register("micr-nameless", "micr", Nameless)
    with pytest.raises(TypeError, match="NoiseLaw"):
        Nameless(epsilon=1.0, statistic=get_statistic("micr"), label="micr-nameless")
    plan = build_mechanism("micr-gauss", eps=1.0, delta=1e-6, pairs=3).calibrate(
        n=1000, pairs=3, B=40, c=5)
    assert isinstance(plan.law, DiscreteGaussian) and plan.law is GAUSSIAN


def test_a_statistic_has_one_public_spelling_from_its_label():
    from dpmic_dask.privacy.mechanisms import check_statistics
    from dpmic_dask.release.results import output_name
    from dpmic_dask.stats.statistics import get_statistic, public_statistics

    tau = get_statistic("tau")
    assert tau.label == "tau_a" and tau.signed and not get_statistic("micr").signed
    assert check_statistics(("mic", "tau_a")) == check_statistics(["mic", "tau"]) == ("mic", "tau")
    assert output_name("tau") == tau.label
    assert public_statistics() == {"mic": "micr", "tau_a": "tau", "tau": "tau"}
    with pytest.raises(InvalidParameterError, match="tau_a"):
        check_statistics(("mic", "tau", "tau_a"))  # one statistic, two spellings


def test_what_a_mechanism_supports_is_its_own_declaration_not_its_name():
    """A count mechanism registered under a new name cannot hold a categorical
    axis or nulls="drop": both are refused before anything is read or charged
    (keyed on the name "micr-geom", such a release was accepted, charged, and
    failed with ReleaseIncompleteError)."""
    import pandas as pd

    import dpmic_dask  # noqa: F401
    from dpmic_dask.errors import InvalidParameterError
    from dpmic_dask.privacy.accounting import InMemoryLedger
    from dpmic_dask.privacy.mechanisms import (
        _RELEASES,
        GeometricCountsMechanism,
        mechanism_supports,
        register,
    )
    from dpmic_dask.release.charge import DEFAULT_DATASET

    class CountsAgain(GeometricCountsMechanism):
        pass

    class ValuesToo(GeometricCountsMechanism):
        features = frozenset({"drop"})

    register("micr-counts-again", "micr", CountsAgain)
    try:
        assert not mechanism_supports("micr-counts-again", "categorical")
        assert not mechanism_supports("micr-counts-again", "drop")
        assert not mechanism_supports("micr-geom", "categorical")
        assert mechanism_supports("micr-lap", "categorical")
        assert mechanism_supports("auto", "drop", delta=1e-6)
        assert ValuesToo.supports("drop") and not ValuesToo.supports("categorical")
        rng = np.random.default_rng(4)
        frame = pd.DataFrame({"x": rng.random(400), "y": rng.random(400),
                              "city": rng.choice(["a", "b"], 400)})
        ledger = InMemoryLedger(uncapped=True)
        with pytest.raises(InvalidParameterError, match="categorical"):
            frame.dpmic.pairwise(1.0, bounds={"x": (0, 1)}, columns=["x", "city"],
                                 categories={"city": ["a", "b"]},
                                 mechanism="micr-counts-again", ledger=ledger)
        with pytest.raises(InvalidParameterError, match="drop"):
            frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (0, 1)}, nulls="drop",
                                 min_rows=100, mechanism="micr-counts-again", ledger=ledger)
        assert ledger.spent(DEFAULT_DATASET) == 0
    finally:
        del _RELEASES["micr-counts-again"]
