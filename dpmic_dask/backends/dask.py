"""The Dask backend: count partitions in parallel, sum them exactly.

The only module that builds Dask graphs: the counts', and every other module's
through the :class:`~dpmic_dask.backends.base.Backend` methods (``map_partitions``,
``shuffle_by``, ``tree_sum``, ``persist``, ``partitions`` / ``task`` /
``from_partitions``). Uses public Dask APIs, and a collection's ``_meta`` (its
empty pandas frame): ``DataFrame.to_delayed`` for the partitions, ``dask.delayed``
for a tree of exact integer sums (``split_every`` partials per node),
``dask.persist`` to keep the summed counts on the cluster, and ``dask.compute`` /
the active ``distributed.Client`` to run graphs. Exact counts stay on the workers; the
driver receives only the row count, the missing-value flags and one exact value
per pair (:meth:`DaskBackend.evaluate`), which it noises.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import sys
from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
from dask.diagnostics import ProgressBar
from distributed import default_client
from distributed import progress as distributed_progress

from dpmic_dask.backends.base import (
    Aggregate,
    Backend,
    Evaluation,
    LocalAggregate,
    assemble,
    guarded,
    pair_names,
)
from dpmic_dask.backends.daskinputs import (
    binned_frame,
    block_inputs,
    delayed_partitions,
    spans_of,
)
from dpmic_dask.backends.dasktasks import (
    TokenizedOnce,
    block_values,
    count_and_evaluate,
    counted,
    counted_nodes,
    joined,
    marginal_root,
    merged,
)
from dpmic_dask.backends.placement import pinned, worker_slots
from dpmic_dask.backends.redaction import attach
from dpmic_dask.backends.registry import register
from dpmic_dask.stats.counting import (
    empty_partial,
    shared_binning,
)
from dpmic_dask.stats.countspec import CountSpec, PartialCounts, bin_dtype
from dpmic_dask.stats.limits import (
    DEFAULT_TASK_MEMORY,
    even_blocks,
    rows_split_pays,
    tasks_per_block,
)

DEFAULT_SPLIT_EVERY = 8
#: Binned columns shared by the blocks of an evaluation may take up to this many
#: tasks' ``task_memory`` in all (512 MiB at the default: 100 columns x 10**6 rows
#: take 200 MB); larger tables read each block's columns on their own.
SHARED_BINNING_TASKS = 2


def _active_client():
    """The ``distributed`` client that will run our graphs, if any, with the
    worker-log redaction attached (:func:`dpmic_dask.batch.cluster.attach`, once per
    client): a client the caller created runs tasks whose failures would
    otherwise be logged with cell values."""
    try:
        client = default_client()
    except ValueError:
        return None
    attach(client)
    return client


def _persist(root):
    """``dask.persist`` on the active client (redaction attached first), or locally."""
    _active_client()
    return dask.persist(root)


def run(graph, *, progress: bool | None = None, columns=()):
    """Compute a Dask collection / delayed object (or a list of them), with a
    progress bar when asked (``None``: only when stderr is a terminal).

    Failures underneath are reported by :func:`guarded` (type and columns only).
    """
    return guarded(columns, _compute, graph, progress)


def _compute(graph, progress):
    show = sys.stderr.isatty() if progress is None else progress
    client = _active_client()
    if client is not None:
        futures = client.compute(graph)
        if show:
            distributed_progress(futures)
        return client.gather(futures)
    if show:
        with ProgressBar(out=sys.stderr):
            return dask.compute(graph)[0]
    return dask.compute(graph)[0]


def _worker_threads() -> int:
    """Threads that run tasks: the active client's workers', else this machine's
    cores (the local schedulers). Public; it only sizes tasks."""
    client = _active_client()
    if client is not None:
        try:
            threads = sum(client.nthreads().values())
        except Exception:  # noqa: BLE001 - a scheduler that cannot answer: assume one
            threads = 1
        return max(1, threads)
    return max(1, os.cpu_count() or 1)


def _summary(partial: PartialCounts):
    return partial.rows, partial.missing


@dataclass
class DaskAggregate(Aggregate):
    """Counts persisted on the cluster (a delayed node holding the summed partial)."""

    spec: CountSpec
    rows: int
    missing: np.ndarray
    root: object

    def counts(self) -> np.ndarray:
        partial = run(self.root, progress=False, columns=self.spec.columns)
        return partial.counts.astype(np.int64, copy=False)


@register(dd.DataFrame)
class DaskBackend(Backend):
    """Dask DataFrames: partitions counted in parallel, summed in a tree on the cluster."""

    def install_accessor(self, frame_type, name, accessor):
        if not hasattr(frame_type, name):  # subclasses inherit it
            dd.extensions.register_dataframe_accessor(name)(accessor)

    def schema(self, frame):
        return frame.dtypes

    def row_count(self, frame, columns) -> int:
        return int(run(frame.shape[0], progress=False, columns=columns))

    def count(self, frame, spec, *, split_every, progress, rows=None,
              task_memory=DEFAULT_TASK_MEMORY) -> Aggregate:
        parts = guarded(spec.columns, lambda: delayed_partitions(binned_frame(frame, spec)))
        if not parts:
            partial = empty_partial(spec)
            return LocalAggregate(spec, 0, partial.missing, partial)
        spans = spans_of(rows, len(parts), len(spec.columns), task_memory, _worker_threads())
        root = counted([(p,) for p in parts], spec, spans, split_every)
        (root,) = guarded(spec.columns, _persist, root)
        rows, missing = run(dask.delayed(_summary, pure=True)(root), progress=progress,
                            columns=spec.columns)
        return DaskAggregate(spec, int(rows), np.asarray(missing), root)

    def counts_marginals(self, frame) -> bool:
        return True

    def evaluate(self, frame, spec, fn, *, pairs_per_block, split_every, progress,
                 rows=None, task_memory=DEFAULT_TASK_MEMORY, marginals=()) -> Evaluation:
        """Per block: count the partitions (the block's columns only, a few
        partitions per task), sum in a tree of ``split_every``, then tasks apply
        ``fn`` to the block's pairs, a few pairs each. Tasks scale with partitions
        x blocks; a block's counts are freed once its values are computed, so
        memory per task follows the block size, not the pairs. Each column of
        ``marginals`` is counted on the joint refinement from the binned
        partitions of the first block that reads it: small tasks over as many
        partitions as a counting task takes, summed in a tree; nothing is read
        again. On a cluster, a counting task per thread is placed on its own
        thread, with the reads beside it (:func:`block_inputs`)."""
        blocks = spec.blocks(pairs_per_block)
        cells = spec.family.joint.boundaries.size + 1
        wanted = list(dict.fromkeys(marginals))
        sides, side_columns = [], []
        fn = TokenizedOnce(fn)
        # asked of the scheduler once per release (a round trip each: 121 blocks
        # asked 121 times, 75 ms of driver time on 2 local workers)
        slots = worker_slots(_active_client())
        threads = len(slots) or max(1, _worker_threads())
        piece = -(-len(spec.pairs) // threads)  # pairs per task computing values
        tasks, pieces = [], []
        # Each group of columns is read and binned once, for every block that
        # reads it (not once per block), when all binned columns fit in a few
        # tasks' memory. Where every block takes every group, blocks of equal
        # pairs share the threads evenly.
        shared = shared_binning(spec, blocks, rows, SHARED_BINNING_TASKS * task_memory)
        if shared is not None and shared.whole():
            count = even_blocks(len(spec.pairs), pairs_per_block, threads, len(blocks))
            if rows_split_pays(len(spec.pairs), spec.family.n_cells, rows, len(spec.columns),
                               bin_dtype(spec.family).itemsize, count, threads, split_every,
                               task_memory):
                count = 1
            blocks, shared = shared.even(spec, count)
        shares = tasks_per_block([len(b.indices) for b in blocks], threads)
        inputs, placement = block_inputs(frame, spec, blocks, shared, shares, rows, task_memory,
                                         slots)
        for block, given in zip(blocks, inputs):
            parts, take, spans, workers = given.parts, given.take, given.spans, given.workers
            if not parts:
                return Evaluation(0, np.zeros(len(spec.columns), bool),
                                  np.full(len(spec.pairs), np.nan),
                                  {k: np.zeros(cells, np.int64) for k in wanted})
            mine = [k for k in block.column_indices() if k in wanted]
            if mine:
                wanted = [k for k in wanted if k not in mine]
                local = tuple(block.column_indices().index(k) for k in mine)
                sides.append(marginal_root(parts, take, local, cells, spans, split_every))
                side_columns.append(mine)
            if len(spans) == 1:
                # One counting task: it evaluates the pairs as they are counted,
                # a few at a time (the same values; the block's counts never held).
                task = dask.delayed(functools.partial(
                    count_and_evaluate, spec=block.spec, fill=spec.fill, fn=fn,
                    names=pair_names(block.spec), take=take), pure=True)
                with pinned(None if workers is None else workers[0]):
                    tasks.append(task(*[c for part in parts for c in part]))
                pieces.append(1)
                continue
            nodes = counted_nodes(parts, block.spec, spans, split_every, take, workers)
            values = block_values(nodes, spec.fill, fn, pair_names(block.spec), piece,
                                  None if placement is None else
                                  placement.value_workers(len(tasks), len(block.indices)))
            tasks += values
            pieces.append(len(values))
        results = run([*tasks, *sides], progress=progress, columns=spec.columns)
        at = [0, *itertools.accumulate(pieces)]
        found = assemble(spec, blocks, [joined(results[at[b]:at[b + 1]])
                                        for b in range(len(pieces))])
        summed = {k: row for mine, sums in zip(side_columns, results[len(tasks):])
                  for k, row in zip(mine, sums)}
        return dataclasses.replace(found, marginals=summed)

    def reduce(self, frame, columns, fn, combine, *, split_every, progress):
        return self.tree_sum(guarded(columns, lambda: frame[list(columns)]), fn, combine,
                             split_every=split_every, progress=progress, columns=columns)

    def tree_sum(self, frame, fn, add, *, split_every, progress=False, columns=()):
        parts = guarded(columns, frame.to_delayed)
        if not parts:
            return guarded(columns, fn, frame._meta)
        task = dask.delayed(fn, pure=True)
        root = merged([task(part) for part in parts], add, split_every)
        return run(root, progress=progress, columns=columns)

    def map_partitions(self, frame, fn, *args, meta):
        return frame.map_partitions(fn, *args, meta=meta)

    def shuffle_by(self, frame, columns):
        return frame.shuffle(on=list(columns)) if frame.npartitions > 1 else frame

    def persist(self, frame):
        _active_client()  # its workers' logs redacted before they run our tasks
        # without a distributed client persisting computes here: a reader's or
        # pandas's failure (which may quote a cell) is withheld like any other
        return guarded(list(frame.columns), frame.persist)

    def persist_with(self, frame, extra):
        if extra is None:
            return self.persist(frame), None
        _active_client()  # its workers' logs redacted before they run our tasks
        columns = list(frame.columns)
        # the partitions as delayed objects, persisted with ``extra`` in one graph
        # (a frame persisted beside a delayed object makes Dask warn and
        # materialise the frame's expression anyway)
        parts = guarded(columns, frame.to_delayed)
        *kept, extra = guarded(columns, dask.persist, *parts, extra)
        kept_frame = self.from_partitions(kept, frame._meta)
        return kept_frame, run(extra, progress=False, columns=columns)

    def empty(self, frame):
        return frame._meta

    def npartitions(self, frame) -> int:
        return frame.npartitions

    def partitions(self, frame) -> list:
        return frame.to_delayed()

    def task(self, fn, *args, nout=None):
        return dask.delayed(fn, nout=nout, pure=True)(*args)

    def from_partitions(self, parts, meta):
        with dask.config.set({"dataframe.convert-string": False}):
            # the frame's own dtypes: an object column stays one (Dask would turn
            # it into text: integers and booleans read as "1" and "True")
            return dd.from_delayed(parts, meta=meta, verify_meta=False)

    def map_counts(self, counts: np.ndarray, fn) -> np.ndarray:
        if counts.shape[0] < 2:
            return super().map_counts(counts, fn)
        task = dask.delayed(fn, pure=True)
        return np.array(run([task(c) for c in counts], progress=False), dtype=np.float64)
