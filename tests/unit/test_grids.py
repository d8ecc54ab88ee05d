import math

import numpy as np
import pytest

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.grids import equipartition_boundaries, master_grid_family, max_groups


@pytest.mark.parametrize("B", [4, 5, 9, 16, 40, 150, 151])
@pytest.mark.parametrize("c", [1, 3, 5])
def test_family_shape(B, c):
    family = master_grid_family(B, c)
    assert family.n_grids == 2 * (B // 2 - 1)
    offset = 0
    for grid in family.grids:
        l, k = grid.fixed_bins, grid.max_groups
        assert k == (l if l <= math.sqrt(B) else B // l)
        assert 2 <= k <= l and k * l <= B
        assert grid.master_rows == c * k
        assert grid.offset == offset
        offset += grid.n_cells
    assert family.n_cells == offset
    for orientation in ("x", "y"):
        sizes = [g.fixed_bins for g in family.grids if g.orientation == orientation]
        assert sizes == list(range(2, B // 2 + 1))


@pytest.mark.parametrize("B,c", [(12, 2), (150, 5)])
def test_refinements_contain_every_master_boundary(B, c):
    family = master_grid_family(B, c)
    fixed = set(family.fixed_boundaries.tolist())
    rows = set(family.row_boundaries.tolist())
    for grid in family.grids:
        assert set(equipartition_boundaries(grid.fixed_bins).tolist()) <= fixed
        assert set(equipartition_boundaries(grid.master_rows).tolist()) <= rows


def test_max_groups_switches_at_sqrt_b():
    assert [max_groups(l, 16) for l in range(2, 9)] == [2, 3, 4, 3, 2, 2, 2]


@pytest.mark.parametrize("B", [3, 0, -5, 4.0, "10", True, None])
def test_invalid_B(B):
    with pytest.raises(InvalidParameterError, match="B must be an integer >= 4"):
        master_grid_family(B, 1)


@pytest.mark.parametrize("c", [0, -1, 1.5, 2.0, "2", False])
def test_invalid_c(c):
    with pytest.raises(InvalidParameterError, match="c must be an integer >= 1"):
        master_grid_family(10, c)


def test_numpy_integers_are_accepted():
    family = master_grid_family(np.int64(10), np.int32(2))
    assert (family.B, family.c) == (10, 2)


def test_a_grid_too_large_names_where_its_c_came_from():
    """B = 5000 alone was refused as "B = 5000, c = 1 needs about 103 GiB": a c the
    caller never gave. The message says c was not given and is taken at the
    smallest its default can be, before anything is read or charged."""
    import pandas as pd

    import dpmic_dask as dm

    frame = pd.DataFrame({"a": np.arange(100.0), "b": np.arange(100.0)})
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match=r"c = 1 \(c not given: even at the "
                                                       "smallest value the default can take"
                                                       "\\) needs about"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 100), "b": (0, 100)}, B=5000,
                             ledger=ledger)
    assert ledger.charges() == []
