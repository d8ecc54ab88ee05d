"""Placement of a release's tasks on a cluster: one counting task per worker
thread, reads beside the counting that takes them, values spread out; never a
different value."""

import collections

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.core import get_dependencies
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmic_dask.backends import backend_for
from dpmic_dask.backends import dask as dask_backend
from dpmic_dask.backends.placement import plan, worker_slots
from dpmic_dask.stats.countspec import CountSpec
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.limits import task_spans
from tests.probes import recorded

SLOTS16 = tuple(f"tcp://10.0.0.{k}:9000" for k in range(10, 26))


def test_two_blocks_of_eight_tasks_on_sixteen_threads():
    """2.4 x 10^7 rows in 48 files, two blocks of 8 counting tasks each: every
    task its own worker, every worker 3 reads, and half of each task's 6
    partitions read where it counts."""
    spans = [task_spans(24 * 10**6, 48, 10, 2**30, tasks=8)] * 2
    placed = plan(SLOTS16, spans, 48)
    counting = [w for block in placed.counting for w in block]
    assert sorted(counting) == sorted(SLOTS16)
    assert collections.Counter(placed.reads) == {w: 3 for w in SLOTS16}
    for b, block in enumerate(spans):
        for i, (lo, hi) in enumerate(block):
            local = sum(placed.reads[p] == placed.counting[b][i] for p in range(lo, hi))
            assert local == 3
    # every read is on a worker that counts that partition
    for p, w in enumerate(placed.reads):
        readers = {placed.counting[b][i] for b, block in enumerate(spans)
                   for i, (lo, hi) in enumerate(block) if lo <= p < hi}
        assert w in readers


def test_threads_are_dealt_over_the_workers_in_turn():
    """Workers of several threads: every worker's first thread, then every
    second one, so fewer tasks than threads still go to different workers (taken
    worker by worker, 8 tasks on 4 workers of 4 threads went to 2 of them)."""
    slots = worker_slots(_Client({"tcp://b:1": 2, "tcp://a:1": 3, "tcp://c:1": 1}))
    assert slots == ("tcp://a:1", "tcp://b:1", "tcp://c:1", "tcp://a:1", "tcp://b:1",
                     "tcp://a:1")
    four = worker_slots(_Client({f"tcp://w{k}:1": 4 for k in range(4)}))
    placed = plan(four, [task_spans(8 * 10**6, 8, 10, 2**30, tasks=4)] * 2, 8)
    assert collections.Counter(w for block in placed.counting for w in block) == \
        {f"tcp://w{k}:1": 2 for k in range(4)}
    assert collections.Counter(placed.reads) == {f"tcp://w{k}:1": 2 for k in range(4)}
    two = plan(slots, [((0, 3), (3, 6)), ((0, 3), (3, 6))], 6)
    assert two.counting == (("tcp://a:1", "tcp://b:1"), ("tcp://c:1", "tcp://a:1"))
    assert placed.value_workers(3, 3) == [placed.values[3], placed.values[4], placed.values[5]]


def test_nothing_is_placed_where_it_gains_nothing():
    assert plan(SLOTS16[:1], [((0, 4),)], 4) is None  # one thread
    assert plan(SLOTS16[:4], [((0, 1), (1, 2), (2, 3))] * 2, 3) is None  # 6 tasks > 4
    assert plan(SLOTS16[:4], [()], 0) is None
    assert plan(SLOTS16[:4], [((0, 2),)], 3) is None  # a partition no task takes
    assert worker_slots(None) == ()
    assert worker_slots(_Client(None)) == ()  # a scheduler that cannot answer


class _Client:
    def __init__(self, threads):
        self.threads = threads

    def nthreads(self):
        if self.threads is None:
            raise OSError("scheduler gone")
        return self.threads


def _annotations(graphs) -> dict:
    """The resolved annotations of the delayed objects in ``graphs``, by type."""
    out: dict = collections.defaultdict(dict)
    for d in graphs:
        for layer in d.dask.layers.values():
            for kind, value in (layer.annotations or {}).items():
                for key in layer:
                    v = value(key) if callable(value) else value
                    if v is not None:
                        out[kind][key] = v
    return out


def _name(key) -> str:
    return (key[0] if isinstance(key, tuple) else key).rsplit("-", 1)[0]


@pytest.fixture
def table(tmp_path):
    gen = np.random.default_rng(3)  # test data only
    columns = [f"c{k}" for k in range(8)]
    for f in range(8):
        part = pd.DataFrame(gen.normal(size=(3000, 8)), columns=columns)
        part["c1"] = np.sin(part["c0"] * (f + 1))
        part.to_parquet(tmp_path / f"part{f:02d}.parquet")
    return tmp_path, {c: (-4.0, 4.0) for c in columns}


def _placed(monkeypatch, work):
    """``work()`` as on a cluster of 4 one-thread workers (placement on, the local
    threaded scheduler computing); the last list of delayed objects it ran."""
    slots = SLOTS16[:4]
    monkeypatch.setattr(dask_backend, "worker_slots", lambda client: slots)
    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: len(slots))
    graphs = recorded(monkeypatch, dask_backend, "run", lambda graph, **kw: graph)
    with dask.config.set(scheduler="threads"):
        out = work()
    return out, [g for g in graphs if isinstance(g, list)][-1], slots


def test_a_release_of_one_block_reads_each_partition_where_it_is_counted(monkeypatch,
                                                                          table):
    """A release on a cluster of 4 threads whose pairs fit one block: each of its 4
    counting tasks on its own worker, reading there the 2 partitions it counts;
    the values on 3 or more workers."""
    folder, bounds = table
    frame = dd.read_parquet(folder)
    result, evaluation, slots = _placed(
        monkeypatch, lambda: frame.dpmic.pairwise(1.0, bounds=bounds, B=200, progress=False))
    assert result.n == 24_000 and len(result.values) == 28
    counting, reads, values = _where(evaluation)
    assert sorted(w for w, _ in counting.values()) == sorted(slots)
    assert len(reads) == 8
    for w, inputs in counting.values():
        assert len(inputs) == 2 and all(reads[p] == w for p in inputs)
    assert len(values) >= 3


def test_two_blocks_sharing_partitions_read_each_beside_one_of_its_counting_tasks(
        monkeypatch, table):
    """Two blocks of 14 pairs sharing whole partitions, 4 threads: 4 counting tasks
    on 4 workers, each worker reading 2 partitions, each counting task taking 4
    partitions of which 2 are read on its own worker."""
    folder, bounds = table
    spec = CountSpec(tuple(bounds), tuple(bounds.values()), None, master_grid_family(200, 5))
    frame = dd.read_parquet(folder)
    _, evaluation, slots = _placed(monkeypatch, lambda: backend_for(frame).evaluate(
        frame, spec, _fingerprint, pairs_per_block=14, split_every=3, progress=False,
        rows=24_000))
    counting, reads, values = _where(evaluation)
    assert sorted(w for w, _ in counting.values()) == sorted(slots)
    assert collections.Counter(reads.values()) == {w: 2 for w in slots}
    for w, inputs in counting.values():
        assert len(inputs) == 4 and sum(reads[p] == w for p in inputs) == 2
    assert len(values) >= 3


def _where(evaluation):
    """The placed workers of an evaluation's graph: counting tasks' (with their
    inputs), reads', and the set of the values' workers."""
    workers = _annotations(evaluation)["workers"]
    graph = dict(collections.ChainMap(*(dict(d.dask) for d in evaluation)))
    counting = {k: (w, get_dependencies(graph, k)) for k, (w,) in workers.items()
                if _name(k) == "count_binned_partitions"}
    reads = {k: w for k, (w,) in workers.items() if isinstance(k, tuple)}
    values = {w for k, (w,) in workers.items() if _name(k) == "summed_values"}
    return counting, reads, values


def _one_pass(folder, bounds):
    """The table in one frame, the spec of its pairs at B = 200 and their values
    computed in one pass (what every placement must compute)."""
    whole = pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))],
                      ignore_index=True)
    spec = CountSpec(tuple(bounds), tuple(bounds.values()), None, master_grid_family(200, 5))
    exact = backend_for(whole).evaluate(whole, spec, _fingerprint, pairs_per_block=28,
                                        split_every=3, progress=False)
    return whole, spec, exact


def test_placed_tasks_compute_the_same_values(monkeypatch, table):
    folder, bounds = table
    whole, spec, exact = _one_pass(folder, bounds)
    frame = dd.read_parquet(folder)
    placed, evaluation, _ = _placed(monkeypatch, lambda: backend_for(frame).evaluate(
        frame, spec, _fingerprint, pairs_per_block=14, split_every=3, progress=False,
        rows=len(whole)))
    assert _where(evaluation)[0]  # placed
    np.testing.assert_array_equal(placed.values, exact.values)


def _fingerprint(counts):
    counts = np.asarray(counts, dtype=np.float64)
    return float((counts * np.arange(1, counts.size + 1)).sum())


def test_partitions_computed_from_other_tasks_are_not_placed(monkeypatch, table):
    """A frame whose partitions are not read by their own tasks (here: from
    delayed objects; persisted frames alike) has its rows somewhere already:
    nothing is placed, and the scheduler puts the counting beside its input."""
    folder, bounds = table
    files = sorted(folder.glob("*.parquet"))
    frame = dd.from_delayed([dask.delayed(pd.read_parquet)(p) for p in files],
                            meta=pd.read_parquet(files[0]).iloc[:0])
    result, evaluation, _ = _placed(
        monkeypatch, lambda: frame.dpmic.pairwise(1.0, bounds=bounds, B=200, progress=False))
    assert not _annotations(evaluation)
    assert result.n == 24_000


@pytest.mark.filterwarnings("ignore:Dask annotations")  # Dask's note on its frames' graphs
def test_a_callers_own_worker_restrictions_are_kept(monkeypatch, table):
    """Under a caller's ``dask.annotate(workers=...)`` nothing is placed: no task
    of the release is sent to a worker outside the caller's choice."""
    folder, bounds = table
    frame = dd.read_parquet(folder)

    def restricted():
        with dask.annotate(workers=["tcp://10.0.0.99:9000"]):
            return frame.dpmic.pairwise(1.0, bounds=bounds, B=200, progress=False)

    _, evaluation, slots = _placed(monkeypatch, restricted)
    placed = {w for (w,) in _annotations(evaluation).get("workers", {}).values()}
    assert placed == {"tcp://10.0.0.99:9000"}


def test_rows_split_only_where_the_binned_bytes_moved_outweigh_the_counts():
    """Ten columns of 10**7 rows, 45 pairs at B = 200 in two blocks: on 2 threads
    one block whose rows are split (29 MB of counts moved, not 200 MB of binned
    values); not on 4 or 16 threads, not for few or unknown rows, not where a
    task's counts would pass its memory."""
    from dpmic_dask.stats.limits import rows_split_pays

    cells = master_grid_family(200, 5).n_cells
    tall = dict(pairs=45, cells=cells, rows=10**7, columns=10, index_bytes=2, blocks=2)
    assert rows_split_pays(**tall, threads=2)
    assert not rows_split_pays(**tall, threads=4)
    assert not rows_split_pays(**tall, threads=16)  # more tasks than one sum takes
    assert not rows_split_pays(**tall, threads=1)
    assert not rows_split_pays(**{**tall, "rows": 24_000}, threads=2)
    assert not rows_split_pays(**{**tall, "rows": None}, threads=2)
    assert not rows_split_pays(**{**tall, "blocks": 1}, threads=2)
    assert not rows_split_pays(**tall, threads=2, task_memory=16 * 2**20)
    # the binned input (200 MB) must fit half the threads' task memory, whatever
    # its partitions: else a task per thread is not certain
    assert not rows_split_pays(**tall, threads=2, task_memory=190 * 2**20)
    assert rows_split_pays(**tall, threads=2, task_memory=192 * 2**20)


def test_a_block_whose_rows_are_split_reads_where_it_counts_and_exchanges_pieces(
        monkeypatch, table):
    """Where splitting the rows pays (forced here), the pairs that two blocks
    would share are one block: each of its 4 counting tasks reads its own 2
    partitions, every value piece sums its pairs' parts of all 4 partial counts,
    and the values are those of one pass."""
    folder, bounds = table
    whole, spec, exact = _one_pass(folder, bounds)
    split = []
    monkeypatch.setattr(dask_backend, "rows_split_pays", lambda *a: split.append(a) or True)
    frame = dd.read_parquet(folder)
    placed, evaluation, slots = _placed(monkeypatch, lambda: backend_for(frame).evaluate(
        frame, spec, _fingerprint, pairs_per_block=14, split_every=8, progress=False,
        rows=len(whole)))
    assert split
    counting, reads, values = _where(evaluation)
    assert sorted(w for w, _ in counting.values()) == sorted(slots)
    for w, inputs in counting.values():
        assert len(inputs) == 2 and all(reads[p] == w for p in inputs)
    graph = dict(collections.ChainMap(*(dict(d.dask) for d in evaluation)))
    pieces = [k for k in graph if _name(k) == "summed_values"]
    assert len(pieces) == 4 and len(values) == 4
    for k in pieces:  # each piece: its pairs' part of every counting task's counts
        cuts = get_dependencies(graph, k)
        assert len(cuts) == 4 and {_name(c) for c in cuts} == {"pairs_of"}
    np.testing.assert_array_equal(placed.values, exact.values)


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(10**5, 10**9), partitions=st.integers(1, 500),
       task_memory=st.integers(2**20, 2**31), threads=st.integers(2, 8),
       columns=st.integers(2, 12))
def test_a_rows_split_gets_a_counting_task_a_thread_however_the_input_is_partitioned(
        rows, partitions, task_memory, threads, columns):
    """Where the split is chosen, the block's counting tasks (whole partitions
    each, within ``task_memory``) are at most one a thread, the tasks its choice
    weighed."""
    from dpmic_dask.stats.limits import rows_split_pays

    pairs = columns * (columns - 1) // 2
    cells = 1000
    if rows_split_pays(pairs, cells, rows, columns, 2, 2, threads, 8, task_memory):
        assert len(task_spans(rows, partitions, columns, task_memory, tasks=threads)) <= threads
