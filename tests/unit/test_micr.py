import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmic_dask as dm
from tests import reference

values = st.floats(-10, 10, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(4, 40), B=st.integers(4, 14), c=st.integers(1, 2))
def test_micr_equals_slow_reference(data, n, B, c):
    xs = data.draw(st.lists(values, min_size=n, max_size=n))
    ys = data.draw(st.lists(values, min_size=n, max_size=n))
    xlo = data.draw(st.floats(-12, 0))
    ylo = data.draw(st.floats(-12, 0))
    xb = (xlo, xlo + data.draw(st.floats(0.5, 25)))
    yb = (ylo, ylo + data.draw(st.floats(0.5, 25)))
    got = dm.micr(xs, ys, x_bounds=xb, y_bounds=yb, B=B, c=c)
    want = reference.micr(xs, ys, xb, yb, B, c)
    assert got == pytest.approx(want, abs=1e-9)


def test_micr_on_random_data_matches_reference_at_moderate_size():
    rng = np.random.default_rng(11)
    x = rng.normal(size=300)
    y = np.sin(3 * x) + 0.3 * rng.normal(size=300)
    got = dm.micr(x, y, x_bounds=(-3, 3), y_bounds=(-2, 2), B=16, c=2)
    want = reference.micr(x.tolist(), y.tolist(), (-3, 3), (-2, 2), 16, 2)
    assert got == pytest.approx(want, abs=1e-9)


def test_identity_gives_one():
    x = np.linspace(-1, 1, 2000)
    for B, c in [(4, 1), (40, 5), (150, 5)]:
        assert dm.micr(x, x, x_bounds=(-1, 1), y_bounds=(-1, 1), B=B, c=c) == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(1)
    u = rng.random(100_000)
    assert dm.micr(u, u, x_bounds=(0, 1), y_bounds=(0, 1), B=40, c=5) > 0.999


def test_independent_uniform_is_near_zero():
    rng = np.random.default_rng(2)
    x, y = rng.random(200_000), rng.random(200_000)
    assert dm.micr(x, y, x_bounds=(0, 1), y_bounds=(0, 1), B=40, c=5) < 0.005


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(4, 60), c=st.integers(1, 6))
def test_range_and_symmetry(seed, B, c):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 400))
    x = rng.normal(size=n) * rng.random() * 3
    y = x ** 2 * rng.random() + rng.normal(size=n)
    xb, yb = (-2.0, 2.5), (-1.0, 4.0)
    a = dm.micr(x, y, x_bounds=xb, y_bounds=yb, B=B, c=c)
    b = dm.micr(y, x, x_bounds=yb, y_bounds=xb, B=B, c=c)
    assert 0.0 <= a <= 1.0
    assert a == b


def test_constant_column_and_single_cell_give_zero():
    rng = np.random.default_rng(3)
    y = rng.random(500)
    assert dm.micr(np.full(500, 0.3), y, x_bounds=(0, 1), y_bounds=(0, 1), B=40, c=5) == 0.0
    # every point in one cell of every grid
    x = np.full(100, 0.001)
    assert dm.micr(x, x, x_bounds=(0, 1), y_bounds=(0, 1), B=40, c=5) == 0.0


def test_values_outside_bounds_are_clamped():
    rng = np.random.default_rng(4)
    x = rng.normal(size=3000) * 2
    y = np.abs(x) + rng.normal(size=3000) * 0.2
    x[:50] = np.inf
    x[50:100] = -np.inf
    bounds = dict(x_bounds=(-1.5, 1.5), y_bounds=(0, 2), B=40, c=5)
    clipped = dm.micr(np.clip(x, -1.5, 1.5), np.clip(y, 0, 2), **bounds)
    assert dm.micr(x, y, **bounds) == clipped


def test_characteristic_matrix_reports_attaining_entry():
    x = np.linspace(0, 1, 5000)
    y = np.where(x < 0.5, 0.0, 1.0)
    r = dm.micr_characteristic(x, y, x_bounds=(0, 1), y_bounds=(0, 1), B=40, c=5)
    assert r.mic == pytest.approx(1.0)
    assert r.matrix[r.x_bins, r.y_bins] == r.mic
    assert np.nanmax(r.matrix) == r.mic
    assert r.orientation in ("x", "y")
    assert r.x_bins * r.y_bins <= 40
    # entries exist exactly for grid sizes with k * l <= B and both sizes >= 2
    defined = ~np.isnan(r.matrix)
    kx, ky = np.nonzero(defined)
    assert np.all(kx * ky <= 40) and kx.min() == 2 and ky.min() == 2
