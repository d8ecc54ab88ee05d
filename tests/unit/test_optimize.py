import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpmic_dask.stats.kernels.optimize import optimize_axis
from tests import reference


@st.composite
def count_matrices(draw):
    rows = draw(st.integers(1, 7))
    cols = draw(st.integers(1, 4))
    return draw(arrays(np.int64, (rows, cols), elements=st.integers(0, 6)))


@settings(max_examples=300, deadline=None)
@given(matrix=count_matrices(), kmax=st.integers(2, 8))
def test_optimize_axis_equals_brute_force(matrix, kmax):
    got = optimize_axis(matrix, kmax)
    rows = matrix.tolist()
    assert got.shape == (kmax + 1,)
    for k in range(2, kmax + 1):
        kk = min(k, len(rows))
        want = reference.best_grouping(rows, kk) if kk >= 2 else 0.0
        assert abs(got[k] - want) <= 1e-9, (k, got[k], want)


def test_optimize_axis_empty_and_single_cell():
    assert optimize_axis(np.zeros((4, 3), np.int64), 3).tolist() == [0.0] * 4
    single = np.zeros((4, 3), np.int64)
    single[2, 1] = 50
    assert optimize_axis(single, 3).tolist() == [0.0] * 4


def test_optimize_axis_is_monotone_in_k():
    rng = np.random.default_rng(7)
    m = rng.integers(0, 30, size=(25, 6)).astype(np.int64)
    out = optimize_axis(m, 10)
    assert np.all(np.diff(out[2:]) >= -1e-12)
