"""The accuracy benchmark's data generator follows the protocol it documents."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import relationships as rl  # noqa: E402


def _arc_lengths(f, xs):
    """Arc length of the graph of f between consecutive abscissae (fine quadrature)."""
    out = []
    for a, b in zip(xs[:-1], xs[1:]):
        t = np.linspace(a, b, 2001)
        out.append(float(np.sum(np.hypot(np.diff(t), np.diff(f(t))))))
    return np.array(out)


def test_line_generating_points_are_evenly_spaced():
    gx = rl.generating_x(rl.FUNCTIONS["F12"])
    assert gx.size == rl.GENERATING_POINTS
    np.testing.assert_allclose(gx, np.arange(100) / 100, atol=1e-6)


@pytest.mark.parametrize("name", ["F13", "F16", "F20"])
def test_generating_points_are_equal_arc_length_apart(name):
    f = rl.FUNCTIONS[name]
    gx = rl.generating_x(f)
    gaps = _arc_lengths(f, gx)
    np.testing.assert_allclose(gaps, gaps.mean(), rtol=2e-3)


def test_curve_is_cut_where_it_leaves_the_square():
    # F11 = 8**(x - 0.3) - 1 crosses 0 at x = 0.3 and 1 at x = 0.3 + 1/3.
    gx = rl.generating_x(rl.FUNCTIONS["F11"])
    assert gx[0] == pytest.approx(0.3, abs=1e-5)
    step = gx[-1] - gx[-2]
    assert gx[-1] + step == pytest.approx(0.3 + 1 / 3, abs=5e-3)


@pytest.mark.parametrize("name,r2", [("F12", 0.5), ("F5", 0.3), ("F17", 0.8)])
def test_tuned_sigma_gives_the_target_r2_on_fresh_draws(name, r2):
    f = rl.FUNCTIONS[name]
    gx = rl.generating_x(f)
    sigma = rl.tuned_sigma(name, r2)
    gen = np.random.default_rng(5)
    m = 400_000
    crn = (gen.integers(0, gx.size, m), gen.standard_normal(m), gen.standard_normal(m))
    assert rl.noisy_relationship_r2(f, gx, sigma, crn) == pytest.approx(r2, abs=0.01)
    # and the R^2 falls as the noise grows, so the bisection had one crossing to find
    assert rl.noisy_relationship_r2(f, gx, 1.5 * sigma, crn) < r2 - 0.02


def test_samples_lie_in_the_unit_square_and_follow_the_mixture():
    rel = rl.Relationship("F12", 0.9)
    x, y = rel.sample(50_000, np.random.default_rng(3))
    assert x.size == y.size == 50_000
    assert x.min() >= 0 and x.max() <= 1 and y.min() >= 0 and y.max() <= 1
    # For the line, y - x is the difference of two N(0, sigma^2) draws; at this noise
    # level truncation cannot reach the middle of the square.
    mid = (x > 0.3) & (x < 0.7)
    assert np.std(y[mid] - x[mid]) == pytest.approx(np.sqrt(2) * rel.sigma, rel=0.05)
    assert rel.x_bounds == rel.y_bounds == (0.0, 1.0)
