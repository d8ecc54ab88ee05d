import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmic_dask as dm
from dpmic_dask.stats.mice import mice_max_cells
from tests import reference

tie_heavy = st.one_of(
    st.integers(0, 1).map(float),
    st.integers(-3, 3).map(float),
    st.sampled_from([0.0, 0.5, 2.5, 100.0]),
    st.floats(-5, 5, allow_nan=False),
)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(4, 36), c=st.integers(1, 15), alpha=st.sampled_from([0.6, 0.8, 1.0, 4, 6]))
def test_mice_equals_slow_reference_on_tie_heavy_data(data, n, c, alpha):
    xs = data.draw(st.lists(tie_heavy, min_size=n, max_size=n))
    ys = data.draw(st.lists(tie_heavy, min_size=n, max_size=n))
    got = dm.mice(xs, ys, alpha=alpha, c=c)
    want = reference.mice(xs, ys, alpha, c)
    assert got == pytest.approx(want, abs=1e-9)


def test_binary_columns():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2, 3000).astype(float)
    p = x.mean()
    entropy = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))  # I(x; x) / log2(2)
    assert dm.mice(x, x) == pytest.approx(entropy, abs=1e-12)
    assert dm.mice(x, 1 - x) == pytest.approx(entropy, abs=1e-12)
    assert dm.mice(x, rng.integers(0, 2, 3000)) < 0.01
    balanced = rng.permutation(np.repeat([0.0, 1.0], 1500))
    assert dm.mice(balanced, balanced) == pytest.approx(1.0, abs=1e-12)


def test_discrete_function_of_discrete_column():
    rng = np.random.default_rng(6)
    x = rng.permutation(np.repeat([0.0, 1.0, 2.0, 3.0], 1000))
    y = np.array([3.0, -1.0, 7.0, 0.5])[x.astype(int)]  # a bijection of 4 levels
    assert dm.mice(x, y) == pytest.approx(1.0)


def test_mice_properties():
    rng = np.random.default_rng(8)
    x = rng.random(2000)
    assert dm.mice(x, x) == pytest.approx(1.0)
    assert dm.mice(x, rng.random(2000)) < 0.1
    y = (x - 0.5) ** 2
    assert dm.mice(x, y) == pytest.approx(dm.mice(y, x))
    assert dm.mice(np.full(100, 2.0), rng.random(100)) == 0.0
    v = dm.mice(x, np.sin(9 * x) + rng.normal(size=2000))
    assert 0.0 <= v <= 1.0


def test_mice_is_rank_based():
    rng = np.random.default_rng(9)
    x = rng.normal(size=500)
    y = x + rng.normal(size=500)
    assert dm.mice(x, y) == pytest.approx(dm.mice(np.exp(x), y ** 3), abs=1e-12)


def test_max_cells_rule():
    assert mice_max_cells(100, 0.6) == pytest.approx(100 ** 0.6)
    assert mice_max_cells(5, 0.6) == 4.0
    assert mice_max_cells(100, 10) == 10.0
    assert mice_max_cells(8, 10) == 8.0


def test_private_mice_breaks_ties_on_each_axis_independently():
    """``mice-lap`` at an eps so large its noise is negligible: rows tied on both
    axes take independent orders on each, as independent continuous data would.
    One key for both axes ordered them alike (a monotone run in every joint tie):
    two constant columns read 1.0, two independent 3-level columns about 0.27."""
    import warnings

    from dpmic_dask import private_mic

    gen = np.random.default_rng(3)  # test data only
    zero = np.zeros(400)
    x, y = (gen.integers(0, 3, 400).astype(float) for _ in range(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eps far beyond any use
        constant = [private_mic(zero, zero, eps=1e15, x_bounds=(-1, 1), y_bounds=(-1, 1),
                                mechanism="mice-lap").value for _ in range(5)]
        levels = [private_mic(x, y, eps=1e15, x_bounds=(0, 2), y_bounds=(0, 2),
                              mechanism="mice-lap").value for _ in range(10)]
        same = private_mic(x, x, eps=1e15, x_bounds=(0, 2), y_bounds=(0, 2),
                           mechanism="mice-lap").value
    assert max(constant) < 0.15
    assert np.mean(levels) < 0.12
    assert same > 0.8  # a real dependence survives the tie breaking
