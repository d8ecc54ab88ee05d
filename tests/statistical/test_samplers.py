"""Noise distributions: pass at the true scale, fail at 0.7x and 1.3x of it."""

import numpy as np
import pytest
from scipy import stats

import dpmic_dask.privacy.noise as noise_module
from dpmic_dask.privacy.noise import DRAW_PIECE, OpenDPSampler, _seeded_sampler
from tests.statistical.helpers import (
    ALPHA,
    chi_square_pvalue,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    ks_pvalue,
    rerun_once,
)

SAMPLES = 20_000


def _fit(pmf_family, samples, scale):
    return chi_square_pvalue(samples, lambda z: pmf_family(scale, z))


def _check_scale(pmf_family, samples, scale):
    assert _fit(pmf_family, samples, scale) > ALPHA
    assert _fit(pmf_family, samples, 0.7 * scale) < ALPHA
    assert _fit(pmf_family, samples, 1.3 * scale) < ALPHA


@pytest.mark.parametrize("scale", [0.8, 3.5, 12.0])
@rerun_once
def test_opendp_discrete_laplace(scale):
    _check_scale(discrete_laplace_pmf, OpenDPSampler().discrete_laplace(scale, SAMPLES), scale)


@pytest.mark.parametrize("sigma", [1.5, 6.0])
@rerun_once
def test_opendp_discrete_gaussian(sigma):
    _check_scale(discrete_gaussian_pmf, OpenDPSampler().discrete_gaussian(sigma, SAMPLES), sigma)


@pytest.mark.parametrize("law", ["discrete_laplace", "discrete_gaussian"])
def test_a_long_vector_is_drawn_in_independent_pieces(law):
    """SAMPLES (above) spans several pieces, so the fits above check the law of a
    long vector; here its pieces are not copies of one another: at scale 1,000
    two draws agree with probability about 1/4,000 (1/3,500 for the Gaussian),
    and the pieces' correlations are within 5 standard errors of 0."""
    draws = getattr(OpenDPSampler(), law)(1000.0, 4 * DRAW_PIECE)
    assert draws.shape == (4 * DRAW_PIECE,) and draws.dtype == np.int64
    pieces = draws.reshape(4, DRAW_PIECE)
    for a in range(4):
        for b in range(a + 1, 4):
            assert np.mean(pieces[a] == pieces[b]) < 0.01
            assert abs(np.corrcoef(pieces[a], pieces[b])[0, 1]) < 5 / np.sqrt(DRAW_PIECE)


@pytest.mark.parametrize("scale", [0.8, 3.5, 12.0])
def test_seeded_exact_discrete_laplace(scale):
    _check_scale(discrete_laplace_pmf, _seeded_sampler(11).discrete_laplace(scale, SAMPLES), scale)


@pytest.mark.parametrize("sigma", [1.5, 6.0])
def test_seeded_exact_discrete_gaussian(sigma):
    _check_scale(discrete_gaussian_pmf, _seeded_sampler(12).discrete_gaussian(sigma, SAMPLES), sigma)


def test_seeded_sampler_is_reproducible_and_seed_dependent():
    a = _seeded_sampler(5).discrete_laplace(4.0, 200)
    b = _seeded_sampler(5).discrete_laplace(4.0, 200)
    c = _seeded_sampler(6).discrete_laplace(4.0, 200)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_helper_has_power_against_a_wrong_family():
    # Gaussian draws must not pass as Laplace of the same standard deviation.
    sigma = 5.0
    draws = OpenDPSampler().discrete_gaussian(sigma, SAMPLES)
    laplace_scale = sigma / np.sqrt(2)
    assert chi_square_pvalue(draws, lambda z: discrete_laplace_pmf(laplace_scale, z)) < ALPHA


def test_helper_accepts_exact_pmf_draws_and_rejects_shifted_ones():
    # draws made by inverse-CDF from the exact pmf, independently of the samplers
    support = np.arange(-200, 201)
    pmf = discrete_laplace_pmf(4.0, support)
    cdf = np.cumsum(pmf) / pmf.sum()
    u = (np.arange(SAMPLES) + 0.5) / SAMPLES  # stratified, deterministic
    draws = support[np.searchsorted(cdf, u)]
    assert chi_square_pvalue(draws, lambda z: discrete_laplace_pmf(4.0, z)) > 0.5
    assert chi_square_pvalue(draws + 1, lambda z: discrete_laplace_pmf(4.0, z)) < ALPHA


def test_ks_helper_detects_scale():
    draws = stats.laplace(scale=2.0).ppf((np.arange(5000) + 0.5) / 5000)
    assert ks_pvalue(draws, stats.laplace(scale=2.0).cdf) > 0.5
    assert ks_pvalue(draws, stats.laplace(scale=1.4).cdf) < ALPHA


def test_rerun_once_forgives_one_failure_and_never_two():
    calls = []

    @rerun_once
    def flaky(fail_runs):
        calls.append(1)
        assert len(calls) > fail_runs

    flaky(1)
    assert len(calls) == 2
    calls.clear()
    with pytest.raises(AssertionError):
        flaky(2)
    assert len(calls) == 2


@rerun_once
def test_a_thread_that_cannot_start_draws_the_vector_in_this_thread(monkeypatch):
    """The sampler runs after the charge: a thread limit must not refuse it."""
    class NoThreads:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(noise_module, "ThreadPoolExecutor", NoThreads)
    monkeypatch.setattr(noise_module, "usable_cpus", lambda: 4)
    draws = OpenDPSampler().discrete_laplace(3.5, SAMPLES)
    assert draws.shape == (SAMPLES,)
    _check_scale(discrete_laplace_pmf, draws, 3.5)
