"""Integer noise never overflows or saturates in a value-dependent way.

OpenDP's samplers saturate at +-(2**63 - 1) for huge scales; added to a lattice
value in int64 that wrapped around, so the output revealed whether the exact
value was 0. Noise is now clipped to a range the final clamp makes lossless, and
plans whose scale cannot be sampled faithfully are refused before any charge.
"""

import numpy as np
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy import noise
from dpmic_dask.privacy.mechanisms import MAX_NOISE_UNITS, noisy_counts, noisy_values, plan_noise

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class SaturatedSampler:
    """Returns the extreme draws a saturating sampler produces."""

    secure = True

    def __init__(self, draws):
        self.draws = np.asarray(draws, dtype=np.int64)

    def _take(self, size):
        return np.resize(self.draws, size)

    def discrete_laplace(self, scale, size):
        return self._take(size)

    def discrete_gaussian(self, sigma, size):
        return self._take(size)


@pytest.fixture
def saturated(monkeypatch):
    def use(draws):
        monkeypatch.setattr("dpmic_dask.privacy.noise.active_sampler", lambda: SaturatedSampler(draws))
    return use


def test_saturated_value_noise_clamps_the_same_whatever_the_value(saturated):
    plan = plan_noise(mechanism="micr-lap", n=100, eps=1.0, delta=0.0, pairs=1, B=8, c=2)
    exact = np.array([0.0, 2.0 ** -40, 0.3, 1.0])
    saturated([INT64_MAX])
    assert noisy_values(exact, plan).tolist() == [1.0] * 4
    saturated([INT64_MIN])
    assert noisy_values(exact, plan).tolist() == [0.0] * 4


def test_saturated_count_noise_clamps_the_same_whatever_the_count(saturated):
    plan = plan_noise(mechanism="micr-geom", n=50, eps=1.0, delta=0.0, pairs=1, B=8, c=1)
    counts = np.array([[0, 1, 25, 50]])
    saturated([INT64_MAX])
    assert noisy_counts(counts, plan).tolist() == [[50] * 4]
    saturated([INT64_MIN])
    assert noisy_counts(counts, plan).tolist() == [[0] * 4]


def test_clipping_changes_no_output_inside_the_range(saturated):
    plan = plan_noise(mechanism="micr-lap", n=100, eps=1.0, delta=0.0, pairs=1, B=8, c=2)
    draws = [-(2 ** 40), -(2 ** 39), -5, 0, 7, 2 ** 39, 2 ** 40]
    saturated(draws)
    exact = np.full(len(draws), 0.5)
    expected = np.clip(0.5 + np.array(draws, dtype=float) * 2.0 ** -40, 0, 1)
    assert noisy_values(exact, plan).tolist() == expected.tolist()


@pytest.mark.parametrize("kw", [
    dict(mechanism="micr-lap", n=100, eps=1e-12, pairs=1),
    dict(mechanism="micr-lap", n=1000, eps=1e-8, pairs=3),
    dict(mechanism="micr-geom", n=1000, eps=1e-15, pairs=1),
])
def test_plans_beyond_the_sampling_limit_are_refused(kw):
    with pytest.raises(dm.InvalidParameterError, match="sampling limit"):
        plan_noise(delta=0.0, B=8, c=5, **kw)


def test_gaussian_plan_beyond_the_limit_is_refused():
    with pytest.raises(dm.InvalidParameterError, match="sampling limit"):
        plan_noise(mechanism="micr-gauss", n=1000, eps=1e-9, delta=1e-6, pairs=19900, B=8, c=5)


def test_largest_accepted_plan_samples_without_saturating():
    # eps chosen so that the scale is just under the limit
    probe = plan_noise(mechanism="micr-lap", n=100, eps=1.0, delta=0.0, pairs=1, B=8, c=5)
    eps = probe.noise_scale / 2.0 ** -40 / MAX_NOISE_UNITS * 1.001
    plan = plan_noise(mechanism="micr-lap", n=100, eps=eps, delta=0.0, pairs=1, B=8, c=5)
    assert plan.noise_scale / 2.0 ** -40 <= MAX_NOISE_UNITS
    z = noise.OpenDPSampler().discrete_laplace(plan.noise_scale / 2.0 ** -40, 2000)
    assert np.abs(z).max() < INT64_MAX  # far from saturation at the limit


def test_refused_release_charges_nothing():
    gen = np.random.default_rng(0)  # test data only
    x, y = gen.random(100), gen.random(100)
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match="nothing was charged"):
        dm.private_mic(x, y, eps=1e-12, x_bounds=(0, 1), y_bounds=(0, 1), B=8, c=5,
                       ledger=ledger, dataset="d")
    assert ledger.charges() == []


def test_count_noise_is_held_at_a_public_limit_not_one_read_from_the_counts():
    from dpmic_dask.privacy.noise import COUNT_NOISE_LIMIT, with_count_noise

    top = np.iinfo(np.int64).max
    draws = np.array([top, -top, 5, -5], dtype=np.int64)
    for counts in ([0, 0, 0, 0], [10**6, 3, 7, 0], [2**62 - 1, 2**62 - 1, 1, 1]):
        out = with_count_noise(np.array(counts, dtype=np.int64), draws)
        held = out - np.array(counts, dtype=np.int64)
        # the same hold whatever the counts: it says nothing about them
        assert held.tolist() == [COUNT_NOISE_LIMIT, -COUNT_NOISE_LIMIT, 5, -5]
        assert out.dtype == np.int64
