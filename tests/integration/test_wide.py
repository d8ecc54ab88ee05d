"""Wide tables: pairs counted in blocks sized from a public per-task memory budget
give exactly the counts and values of one block, on any backend and scheduler."""

import zlib

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.backends import backend_for
from dpmic_dask.counting import CountSpec
from dpmic_dask.grids import master_grid_family
from dpmic_dask.limits import micr_grid_cost, pairs_per_block

COLUMNS = [f"c{k:02d}" for k in range(12)]
BOUNDS = {name: (-3.0, 3.0) for name in COLUMNS}


@pytest.fixture(scope="module")
def wide():
    gen = np.random.default_rng(12)  # test data only
    base = gen.normal(size=5000)
    data = {name: (np.sin((k + 1) * base) if k % 3 else gen.normal(size=5000))
            for k, name in enumerate(COLUMNS)}
    return pd.DataFrame(data)


def fingerprint(counts) -> float:
    """A deterministic digest of a pair's exact counts (same in every process)."""
    return float(zlib.crc32(np.asarray(counts, dtype=np.int64).tobytes()))


def digests(frame, task_memory, B=40, c=5):
    spec = CountSpec(tuple(COLUMNS), tuple(BOUNDS[k] for k in COLUMNS), None,
                     master_grid_family(B, c))
    block = pairs_per_block(micr_grid_cost(B, c).cells_per_pair, 8, task_memory)
    result = backend_for(frame).evaluate(frame, spec, fingerprint, pairs_per_block=block,
                                         split_every=3, progress=False)
    return block, result


def test_block_size_follows_the_public_budget_only():
    cells = micr_grid_cost(40, 5).cells_per_pair
    assert pairs_per_block(cells, 8, 2**20) == 2**20 // (cells * 40)
    assert pairs_per_block(cells, 8, 1) == 1
    assert pairs_per_block(micr_grid_cost(200, 5).cells_per_pair) == 41  # default budget


@pytest.mark.parametrize("scheduler", ["synchronous", "threads", "processes"])
@pytest.mark.parametrize("partitions", [1, 4])
def test_tiny_budget_counts_equal_one_block(wide, scheduler, partitions):
    one_block, whole = digests(wide, 2**30)
    assert one_block >= 66  # everything in one block
    ddf = dd.from_pandas(wide, npartitions=partitions)
    with dask.config.set(scheduler=scheduler):
        small, blocked = digests(ddf, 2**20)
    assert small == 4  # 66 pairs in many blocks
    assert blocked.rows == whole.rows == len(wide)
    np.testing.assert_array_equal(blocked.values, whole.values)
    assert not blocked.missing.any()


def test_wide_release_values_do_not_depend_on_the_budget(wide):
    ddf = dd.from_pandas(wide, npartitions=3)
    exact = wide.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=5)
    blocked = ddf.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=40, c=5, task_memory=2**20)
    pd.testing.assert_frame_equal(exact, blocked)
    release = ddf.dpmic.pairwise(1e9, bounds=BOUNDS, B=40, c=5, task_memory=2**20,
                                 ledger=dm.InMemoryLedger(uncapped=True), progress=False)
    np.testing.assert_allclose(release.values, exact.micr.to_numpy(), atol=1e-6)
    assert release.pairs == tuple(zip(exact.x, exact.y))


def test_missing_values_are_found_in_every_block(wide):
    holey = wide.copy()
    holey.loc[17, "c11"] = np.nan
    with pytest.raises(dm.MissingValuesError, match="c11"):
        dd.from_pandas(holey, npartitions=2).dpmic.pairwise(
            1.0, bounds=BOUNDS, B=40, c=5, task_memory=2**20,
            ledger=dm.InMemoryLedger(uncapped=True), progress=False)


def test_task_memory_is_validated():
    with pytest.raises(dm.InvalidParameterError, match="task_memory"):
        pd.DataFrame({"a": [0.1], "b": [0.2]}).dpmic.pairwise(
            1.0, bounds={"a": (0, 1), "b": (0, 1)}, task_memory=10)
