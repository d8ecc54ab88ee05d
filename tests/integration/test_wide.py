"""Wide tables: pairs counted in blocks sized from a public per-task memory budget
give exactly the counts and values of one block, on any backend and scheduler."""

import sys
import zlib

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.backends import backend_for
from dpmic_dask.stats.counting import bin_chunk, count_binned, count_chunks
from dpmic_dask.stats.countspec import BinnedChunk, CountSpec
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.limits import (
    even_blocks,
    micr_grid_cost,
    pairs_per_block,
    task_spans,
    tasks_per_block,
)
from tests.probes import recorded

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


def digests(frame, task_memory, B=40, c=5, rows=None):
    spec = CountSpec(tuple(COLUMNS), tuple(BOUNDS[k] for k in COLUMNS), None,
                     master_grid_family(B, c))
    block = pairs_per_block(micr_grid_cost(B, c).cells_per_pair, 8, task_memory)
    result = backend_for(frame).evaluate(frame, spec, fingerprint, pairs_per_block=block,
                                         split_every=3, progress=False, rows=rows,
                                         task_memory=task_memory)
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


@pytest.mark.parametrize("task_memory", [2**20, 3 * 2**20, 2**30])
def test_partitions_counted_together_give_the_same_counts(wide, task_memory):
    """Several partitions per counting task (one read-off for all of them) and any
    grouping of 7 uneven partitions: the counts of one pass over the whole table."""
    _, whole = digests(wide, 2**30)
    ddf = dd.from_pandas(wide, npartitions=7).repartition(
        divisions=[0, 1, 40, 41, 2000, 2001, 4998, 4999])
    spans = task_spans(len(wide), ddf.npartitions, 8, task_memory)
    assert 1 <= len(spans) <= 7
    with dask.config.set(scheduler="threads"):
        _, grouped = digests(ddf, task_memory, rows=len(wide))
    np.testing.assert_array_equal(grouped.values, whole.values)
    assert grouped.rows == len(wide)


def sizes(spans):
    return [hi - lo for lo, hi in spans]


def test_task_spans_follow_public_sizes_only():
    # 4 binned partitions of 250,000 rows x 12 columns: 6 MB each
    assert task_spans(10**6, 4, 12, 256 * 2**20) == ((0, 4),)
    assert sizes(task_spans(10**6, 4, 12, 15 * 2**20)) == [2, 2]
    assert sizes(task_spans(10**6, 4, 12, 1)) == [1, 1, 1, 1]
    assert sizes(task_spans(None, 4, 12)) == [1, 1, 1, 1]  # row count unknown
    assert task_spans(10**6, 1, 12) == ((0, 1),)
    assert task_spans(10**6, 0, 12) == ()
    # 100,000-row partitions of 100 columns: 13 fit 256 MiB, so 77 tasks of 12-13
    spans = task_spans(10**8, 1000, 100)
    assert len(spans) == 77 and set(sizes(spans)) == {12, 13}
    # asked for 8 tasks (a block's share of the threads): 8 of 5 partitions
    assert sizes(task_spans(10**6, 40, 4, 2**30, tasks=8)) == [5] * 8
    assert sizes(task_spans(10**6, 4, 4, 2**30, tasks=8)) == [1] * 4  # no empty task
    # the spans cover every partition once, in order
    for parts, tasks in [(48, 5), (48, 9), (20, 7), (3, 2), (1000, 16)]:
        spans = task_spans(10**7, parts, 6, 2**30, tasks=tasks)
        assert spans[0][0] == 0 and spans[-1][1] == parts
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        assert len(spans) == tasks and max(sizes(spans)) - min(sizes(spans)) <= 1


def test_threads_are_shared_over_blocks_by_their_pairs():
    # 45 pairs in blocks of 15, 24 and 6 on 16 threads: 5.3, 8.5 and 2.1 shares
    assert tasks_per_block([15, 24, 6], 16) == (5, 9, 2)
    # every block one task at least, and no more than its share rounded up
    assert tasks_per_block([15, 24, 6], 2) == (1, 1, 1)
    assert tasks_per_block([1, 100], 8) == (1, 7)
    # shares under one task still get one: more tasks than threads, the extra short
    assert tasks_per_block([100] + [1] * 15, 16) == (13,) + (1,) * 15
    assert tasks_per_block([36] * 120, 16) == (1,) * 120
    assert tasks_per_block([10], 16) == (16,)
    assert tasks_per_block([], 16) == ()
    assert tasks_per_block([3, 3, 3, 1], 10) == (3, 3, 3, 1)
    assert tasks_per_block([7, 1, 1], 4) == (3, 1, 1)  # 7 / 3 pairs a task against 1
    # as many tasks as threads whenever every share is a task or more
    for pairs, threads in [([15, 24, 6], 16), ([20, 5, 9, 2], 12), ([1, 1], 2), ([9], 4)]:
        assert sum(tasks_per_block(pairs, threads)) == threads



def test_even_blocks_fit_the_budget_and_share_the_threads_evenly():
    # 45 pairs at 41 a block: 2 blocks on 2, 4 or 16 threads, 3 on 3 threads; on
    # 5 or 7 threads 2 (3 or 4 would not share them evenly, 5 or 7 would move
    # the binned table 5 or 7 times)
    assert [even_blocks(45, 41, t) for t in (1, 2, 3, 4, 5, 7, 16)] == [2, 2, 3, 2, 2, 2, 2]
    assert even_blocks(45, 100, 7) == 1  # all fit one block: 1 divides any thread count
    assert even_blocks(3, 1, 8) == 3  # never more blocks than pairs (4 would be)
    assert even_blocks(0, 41, 4) == 1 and even_blocks(10, 41, 0) == 1
    # never more than the blocks by column groups (whose bytes were weighed)
    assert even_blocks(45, 41, 3, most=3) == 3 and even_blocks(45, 41, 4, most=3) == 2
    assert even_blocks(100, 30, 8, most=5) == 4 and even_blocks(100, 30, 8, most=4) == 4
    assert even_blocks(100, 30, 5, most=4) == 4 and even_blocks(100, 30, 5, most=20) == 5
    for pairs, per_block, threads in [(45, 41, 2), (66, 9, 16), (4950, 36, 16),
                                      (1000, 7, 3), (100, 30, 6), (17, 2, 5), (45, 41, 11)]:
        n = even_blocks(pairs, per_block, threads)
        least = -(-pairs // per_block)
        assert -(-pairs // n) <= per_block and least <= n <= 2 * least  # fits, moves <= 2x
        even = threads % n == 0 or n % threads == 0
        # the fewest that share the threads evenly, else the fewest that fit
        assert all(threads % m and m % threads for m in range(least, n))
        assert even or n == least


def test_chunks_are_binned_then_counted_exactly():
    spec = CountSpec(("a", "b"), ((0.0, 1.0), (0.0, 1.0)), None, master_grid_family(8, 2))
    chunk = [np.linspace(0, 1, 10), np.linspace(1, 0, 10) ** 2]
    with pytest.raises(ValueError, match="differ in length"):
        bin_chunk([chunk[0], chunk[1][:9]], spec)
    one = bin_chunk(chunk, spec)
    assert one.index.dtype == np.uint16 and one.index.shape == (2, 10) and one.size == 10
    # what Dask's memory accounting sees of binned data and of partial counts
    big = bin_chunk([np.zeros(5000), np.ones(5000)], spec)
    assert sys.getsizeof(big) >= big.index.nbytes == 20_000
    counted = count_binned([big], spec)
    assert sys.getsizeof(counted) >= counted.counts.nbytes
    with pytest.raises(ValueError, match="number of columns"):
        count_binned([BinnedChunk(one.index[:1], one.missing[:1])], spec)
    whole = count_chunks([chunk], spec)
    assert whole.rows == 10 and whole.counts.sum() == 10 * spec.family.n_grids
    for cut in (0, 3, 10):
        split = count_chunks([[a[:cut] for a in chunk], [a[cut:] for a in chunk]], spec)
        np.testing.assert_array_equal(split.counts, whole.counts)
        assert split.rows == 10


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


def two_values(counts) -> tuple[float, float]:
    """Two values of a pair's counts (a release of two statistics)."""
    return fingerprint(counts), float(np.asarray(counts)[::7].sum())


@pytest.mark.parametrize("threads", [1, 3, 16])
def test_values_do_not_depend_on_how_many_threads_share_the_tasks(wide, monkeypatch,
                                                                 threads):
    """The thread count sizes counting tasks and cuts each block's values into
    pieces of a few pairs: the same values, of one statistic or two."""
    from dpmic_dask.backends import dask as dask_backend

    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: threads)
    ddf = dd.from_pandas(wide, npartitions=9)
    kw = dict(bounds=BOUNDS, B=40, c=5)
    exact = wide.dpmic.pairwise_nonprivate(**kw)
    with dask.config.set(scheduler="threads"):
        split = ddf.dpmic.pairwise_nonprivate(task_memory=2**20, **kw)
    pd.testing.assert_frame_equal(exact, split)
    spec = CountSpec(tuple(COLUMNS), tuple(BOUNDS[k] for k in COLUMNS), None,
                     master_grid_family(40, 5))
    whole = backend_for(wide).evaluate(wide, spec, two_values, pairs_per_block=66,
                                       split_every=3, progress=False)
    with dask.config.set(scheduler="threads"):
        pieces = backend_for(ddf).evaluate(ddf, spec, two_values, pairs_per_block=9,
                                           split_every=3, progress=False, rows=len(wide))
    assert pieces.values.shape == (66, 2)
    np.testing.assert_array_equal(pieces.values, whole.values)


def test_the_tasks_of_a_block_take_about_as_many_partitions_each():
    # 20 partitions, a block's 7 tasks: 3 partitions each (and 2), not 3, 3, ..., 2
    assert sizes(task_spans(10**7, 20, 6, 2**30, tasks=7)) == [2, 3, 3, 3, 3, 3, 3]
    assert sizes(task_spans(10**7, 20, 6, 2**30, tasks=2)) == [10, 10]
    # memory for 9 partitions of 6 MB binned: three tasks of 6-7, not 9, 9 and 2
    assert sizes(task_spans(10**7, 20, 6, 9 * 6_000_000)) == [6, 7, 7]


@pytest.mark.parametrize("whole", [True, False])
def test_uneven_blocks_get_counting_tasks_by_their_pairs(wide, monkeypatch, whole):
    """12 columns in blocks of 6 and 16 pairs on 16 threads: each block's counting
    tasks follow its pairs, about 16 in all, and the values are those of one
    pass, whether the blocks take every group's binned chunks of a partition or
    only their own groups'."""
    from dpmic_dask.backends import dask as dask_backend
    from dpmic_dask.backends import daskinputs
    from dpmic_dask.stats.counting import SharedBinning

    monkeypatch.setattr(SharedBinning, "whole", lambda self: whole)

    tasks = recorded(monkeypatch, dask_backend, "counted_nodes",
                     lambda parts, spec, spans, *rest: (len(spec.pairs), len(spans)))
    widths = recorded(monkeypatch, daskinputs, "spans_of",
                      lambda rows, parts, columns, *rest: columns)
    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: 16)
    _, one_pass = digests(wide, 2**30)
    widths.clear()
    ddf = dd.from_pandas(wide, npartitions=48)
    with dask.config.set(scheduler="threads"):
        block, split = digests(ddf, 5 * 2**20, rows=len(wide))
    assert block < 66 and len(tasks) >= 3
    assert sum(n for _, n in tasks) <= 16 + len(tasks)
    work = [p / n for p, n in tasks]
    assert max(work) <= 2 * min(work), tasks
    # a task's memory is sized by the binned columns it receives: every column
    # when the blocks take whole partitions, else the block's own
    assert set(widths) == ({12} if whole else {4, 8}), widths
    np.testing.assert_array_equal(split.values, one_pass.values)



def test_blocks_that_take_whole_partitions_are_cut_even_for_the_threads(wide, monkeypatch):
    """12 columns at 41 pairs a block make blocks of 15, 36 and 15 pairs by column
    groups; every block takes every group's binned chunks, so on 2 threads the
    pairs are cut into two blocks of 33 instead (one counting task each, of
    equal work), with the values of one pass."""
    from dpmic_dask.backends import dask as dask_backend

    budget = micr_grid_cost(40, 5).cells_per_pair * 40 * 41
    _, one_pass = digests(wide, 2**30)
    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: 2)
    pairs = recorded(monkeypatch, dask_backend, "count_and_evaluate",
                     lambda *chunks, spec, **kw: len(spec.pairs))
    ddf = dd.from_pandas(wide, npartitions=6)
    with dask.config.set(scheduler="threads"):
        block, split = digests(ddf, budget, rows=len(wide))
    assert block == 41 and sorted(pairs) == [33, 33]
    np.testing.assert_array_equal(split.values, one_pass.values)

def test_blocks_take_whole_partitions_when_that_moves_at_most_twice_the_bytes():
    from dpmic_dask.stats.counting import shared_binning

    def shared(columns, per_block):
        spec = CountSpec(tuple(f"c{k}" for k in range(columns)), ((0.0, 1.0),) * columns,
                         None, master_grid_family(8, 2))
        return shared_binning(spec, spec.blocks(per_block), 10**6, 2**40)

    # 10 columns, 41 pairs a block: 2 groups (6 and 4 columns), 3 blocks
    tall = shared(10, 41)
    assert len(tall.specs) == 2 and len(tall.groups) == 3 and tall.whole()
    # 150 columns, 36 pairs a block: 25 groups of 6, 325 blocks of 1 or 2 groups
    wide = shared(150, 36)
    assert len(wide.specs) == 25 and not wide.whole()


def test_values_in_pieces_with_a_categorical_column_and_two_statistics(wide, monkeypatch):
    """A block's values computed in pieces of a few pairs, where the pair function
    depends on the pair's columns (a categorical axis) and releases two
    statistics: the values of one piece per block."""
    from dpmic_dask.backends import dask as dask_backend

    calls = []
    real = dask_backend.block_values

    def probe(root, fill, fn, names, piece, workers=None):
        out = real(root, fill, fn, names, piece, workers)
        calls.append(len(out))
        return out

    frame = wide.iloc[:, :5].assign(kind=np.where(wide["c00"] > 0, "up", "down"))
    kw = dict(bounds={c: BOUNDS[c] for c in frame.columns[:5]},
              categories={"kind": ["down", "up"]}, B=40, c=5,
              statistics=("mic", "tau_a"), progress=False)
    exact = frame.dpmic.pairwise(1e9, ledger=dm.InMemoryLedger(uncapped=True), **kw)
    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: 16)
    monkeypatch.setattr(dask_backend, "block_values", probe)
    with dask.config.set(scheduler="threads"):
        split = dd.from_pandas(frame, npartitions=9).dpmic.pairwise(
            1e9, ledger=dm.InMemoryLedger(uncapped=True), task_memory=2**20, **kw)
    assert calls and max(calls) > 1  # some block was computed in several pieces
    assert split.pairs == exact.pairs
    np.testing.assert_allclose(split.values, exact.values, atol=1e-6)
    np.testing.assert_allclose(split.companions[0].values, exact.companions[0].values,
                               atol=1e-6)


def test_the_scheduler_is_asked_for_its_threads_once_per_evaluation(wide, monkeypatch):
    """Sizing the tasks of many blocks asks the scheduler once (a round trip each)."""
    from dpmic_dask.backends import dask as dask_backend

    asked = []
    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: asked.append(1) or 4)
    ddf = dd.from_pandas(wide, npartitions=4)
    with dask.config.set(scheduler="threads"):
        block, result = digests(ddf, 2**20, rows=len(wide))
    assert block < 66 and len(asked) == 1
