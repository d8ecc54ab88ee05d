import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmic_dask.stats import counting, grids
from dpmic_dask.stats.counting import bin_values
from dpmic_dask.stats.countspec import CountSpec
from dpmic_dask.stats.grids import master_grid_family
from tests import reference

finite = st.floats(allow_nan=False, allow_infinity=True, width=64)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(finite, min_size=1, max_size=50),
       lo=st.floats(-1e6, 1e6), width=st.floats(1e-6, 1e6), n_bins=st.integers(1, 5000))
def test_bins_match_integer_reference(values, lo, width, n_bins):
    hi = lo + width
    arr = np.array(values, dtype=np.float64)
    got = counting.bins(arr, (lo, hi), n_bins)
    want = [reference.equal_bin(v, lo, hi, n_bins) for v in values]
    assert got.tolist() == want


def test_upper_bound_lands_in_last_bin_and_lower_in_first():
    for n_bins in (1, 2, 3, 7, 150, 4096):
        got = counting.bins(np.array([-3.0, 5.0]), (-3.0, 5.0), n_bins)
        assert got.tolist() == [0, n_bins - 1]


def test_out_of_bounds_and_infinities_clamp():
    vals = np.array([-np.inf, -1e300, -4.0, 9.0, 1e300, np.inf])
    assert counting.bins(vals, (-3.0, 5.0), 10).tolist() == [0, 0, 0, 9, 9, 9]


@settings(max_examples=100, deadline=None)
@given(n_bins=st.integers(2, 3000), q=st.integers(0, 2**32 - 1))
def test_boundaries_are_exact_bin_starts(n_bins, q):
    bounds = grids.equipartition_boundaries(n_bins)
    assert bounds.size == n_bins - 1
    # q is in bin >= j exactly when q >= j-th boundary
    j = (q * n_bins) >> 32
    assert int(np.searchsorted(bounds, q, side="right")) == j


@pytest.mark.parametrize("B,c", [(4, 1), (10, 2), (40, 5), (150, 5), (400, 5), (1000, 5)])
def test_refinement_index_counts_boundaries(B, c):
    family = master_grid_family(B, c)
    # the look-up table is 16-bit where the joint cells fit (B = 1000: they do not)
    wide = family.joint.boundaries.size > 65535
    assert family.joint.table.dtype == (np.int64 if wide else np.uint16)
    assert wide == (B == 1000)
    rng = np.random.default_rng(B * 10 + c)
    values = np.concatenate([rng.random(20_000), [0.0, 1.0]])
    # include values that sit exactly on, and just below, boundaries of either
    # refinement (each value is binned once, into the joint refinement of both)
    edge = np.concatenate([family.fixed_boundaries[:: max(1, family.fixed_boundaries.size // 50)],
                           family.row_boundaries])
    values = np.concatenate([values, edge / 2.0**32, (edge - 1) / 2.0**32])
    cb = bin_values(values, (0.0, 1.0), family)
    assert family.joint.cells <= family.fixed_boundaries.size + family.row_boundaries.size + 1
    pos = counting.positions(values, (0.0, 1.0))
    np.testing.assert_array_equal(cb.fixed, np.searchsorted(family.fixed_boundaries, pos, side="right"))
    np.testing.assert_array_equal(cb.rows, np.searchsorted(family.row_boundaries, pos, side="right"))


def test_refinement_cuts_reject_missing_boundaries():
    bounds, _ = grids.refinement([2, 3])
    with pytest.raises(ValueError):
        grids.refinement_cuts(bounds, 5)
    cuts = grids.refinement_cuts(bounds, 3)
    assert cuts[0] == 0 and cuts[-1] == bounds.size + 1 and len(cuts) == 4


def test_position_is_bit_exact_double_arithmetic():
    # (x - lo) / (hi - lo) must be the division, not a multiplication by a reciprocal
    lo, hi = 0.1, 0.7
    xs = np.linspace(lo, hi, 10_001)
    got = counting.positions(xs, (lo, hi))
    want = [reference.position(float(v), lo, hi) for v in xs]
    assert got.tolist() == want
    assert math.isclose(got[-1], 2**32 - 1)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(finite, st.just(float("nan"))), min_size=1, max_size=1200),
       lo=st.floats(-1e6, 1e6), width=st.floats(1e-6, 1e6),
       fill=st.one_of(st.none(), st.floats(-2e6, 2e6)))
def test_binned_chunk_matches_the_reference_with_missing_values(values, lo, width, fill):
    # the kernel positions a block at a time in a branch-free form and finds the
    # missing values itself: the cells must be the scalar reference's, across
    # more than one block, with a fill value or none
    family = master_grid_family(40, 5)
    spec = CountSpec(("v",), ((lo, lo + width),),
                              None if fill is None else (fill,), family)
    arr = np.array(values, dtype=np.float64)
    chunk = counting.bin_chunk([arr], spec)
    nan = np.isnan(arr)
    assert bool(chunk.missing[0]) == bool(nan.any())
    filled = np.where(nan, lo if fill is None else fill, arr)
    pos = [reference.position(float(v), lo, lo + width) for v in filled]
    want = np.searchsorted(family.joint.boundaries, pos, side="right")
    np.testing.assert_array_equal(chunk.index[0], want)


def test_binning_positions_edges_like_the_scalar_kernel():
    family = master_grid_family(200, 5)
    edge = family.joint.boundaries
    lo, width = -4.0, 8.0
    values = np.concatenate([lo + width * (edge / 2.0**32), lo + width * ((edge - 1) / 2.0**32),
                             [np.inf, -np.inf, lo, lo + width, -0.0, 0.0, 1e308, -1e308, 5e-324,
                              np.nextafter(lo + width, 0.0), np.nextafter(lo, 0.0)]])
    cb = bin_values(values, (lo, lo + width), family)
    pos = counting.positions(values, (lo, lo + width))  # the scalar kernel
    np.testing.assert_array_equal(cb.fixed, np.searchsorted(family.fixed_boundaries, pos, side="right"))
    np.testing.assert_array_equal(cb.rows, np.searchsorted(family.row_boundaries, pos, side="right"))
