"""What each block of a Dask evaluation counts: its partitions as delayed binned
chunks (binned in the task that reads them), the spans of partitions its
counting tasks take, and, on a cluster, where those tasks and reads run
(:mod:`~dpmic_dask.backends.placement`)."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

import dask
import pandas as pd

from dpmic_dask.backends.base import guarded
from dpmic_dask.backends.placement import Placement, placed_partitions, plan
from dpmic_dask.stats.counting import SharedBinning, bin_partition
from dpmic_dask.stats.countspec import Block, CountSpec
from dpmic_dask.stats.limits import task_spans


def spans_of(rows, parts: int, columns: int, task_memory: int, tasks: int):
    """The partitions of each counting task of a block (:func:`task_spans`): the
    block's share of the worker threads (:func:`tasks_per_block`), within
    ``task_memory``.

    Tasks are about one per thread in all, of about equal work: each reads its
    pairs' histograms off and sends on their partial counts (1.3 MB a pair at
    B = 200), so more, smaller tasks cost more than they gain on many workers.
    Two tasks per thread took 2.05 s for 1.58 s on 16 workers (10^7 x 10 rows in
    20 files: 14.6 task-seconds for 10.7). One task per thread for every block,
    whatever its pairs, left the tasks of the largest of three blocks (24 of 45
    pairs) running a second after the others had finished (2.4 x 10^7 rows in 48
    files: 3.56 s on 16 workers, 22 task-seconds)."""
    return task_spans(rows, parts, columns, task_memory, tasks=tasks)


def binned_frame(frame, spec: CountSpec):
    """``frame``'s ``spec.columns`` binned, one
    :class:`~dpmic_dask.stats.countspec.BinnedChunk` per partition, optimised.
    Binning is a per-partition map, which Dask fuses into the task that reads (or
    computes) the partition: its float64 values are freed as soon as they are
    binned, and only two bytes per value wait for the counting task."""
    meta = pd.Series([], dtype=object)
    return frame[list(spec.columns)].map_partitions(bin_partition, spec, meta=meta,
                                                     enforce_metadata=False).optimize()


def _bin_groups(frame: pd.DataFrame, specs: tuple[CountSpec, ...]) -> tuple:
    """One partition binned for each of ``specs`` (column groups of one request)."""
    return tuple(bin_partition(frame, s) for s in specs)


def groups_frame(frame, specs: tuple[CountSpec, ...]):
    """One map over the union of ``specs``' columns (column groups of one
    request), optimised: each partition becomes a tuple of its binned chunk for
    each of ``specs``.

    Each group cannot be binned from its own projection of ``frame``: Dask may
    fuse a projection's partitions by how many columns it reads (Parquet reading
    a few columns joins files into one task), so two projections of one table can
    split its rows differently, and a partition of one group would meet rows of
    another. One map over all the columns gives every group the same partitions,
    as many as the optimised frame's ``npartitions``.
    """
    columns = list(dict.fromkeys(c for s in specs for c in s.columns))
    meta = pd.Series([], dtype=object)
    binned = frame[columns].map_partitions(functools.partial(_bin_groups, specs=specs),
                                           meta=meta, enforce_metadata=False)
    return binned.optimize()


def delayed_partitions(binned) -> list:
    """One delayed object per partition of an optimised ``binned`` frame."""
    return binned.to_delayed(optimize_graph=False)


def _picked(parts: list, k: int) -> list:
    """Group ``k``'s binned chunk of each of ``parts`` (a tuple per partition)."""
    pick = dask.delayed(operator.getitem, pure=True)
    return [pick(part, k) for part in parts]


@dataclass(frozen=True)
class BlockInputs:
    """A block's counting input: ``parts`` (per partition, a tuple of delayed
    binned chunks), ``take`` (which of them, with column groups), ``width`` (the
    binned columns its tasks receive), ``spans`` (the partitions of each counting
    task) and ``workers`` (each counting task's, on a cluster; else ``None``)."""

    parts: list
    take: tuple | None
    width: int
    spans: tuple
    workers: tuple[str, ...] | None


def block_inputs(frame, spec: CountSpec, blocks: list[Block], shared: SharedBinning | None,
                 shares: tuple[int, ...], rows, task_memory: int,
                 slots: tuple[str, ...]) -> tuple[list[BlockInputs], Placement | None]:
    """Each block's :class:`BlockInputs`, and the placement of the evaluation's
    tasks over the worker threads ``slots`` where there is one
    (:func:`~dpmic_dask.backends.placement.plan`): where the blocks read their
    own columns (each block's reads beside its own counting tasks) or share
    whole partitions (each read beside one of the counting tasks that take it),
    and where the partitions are read by their own tasks. Blocks that pick
    column groups out of shared partitions, a frame whose partitions are
    computed from other tasks (persisted, from delayed objects) and a caller's
    own worker restrictions are left as they are."""
    if dask.get_annotations().get("workers") is not None:
        slots = ()  # the caller restricts the workers: theirs, not ours
    if shared is None:
        framed = [guarded(spec.columns, binned_frame, frame, block.spec) for block in blocks]
        spans = [spans_of(rows, f.npartitions, len(block.spec.columns), task_memory, s)
                 for f, block, s in zip(framed, blocks, shares)]
        placement = plan(slots, spans, None)
        placed: list = []
        own = [] if placement is None else [placement.own_reads(b, s) for b, s in enumerate(spans)]
        for f, reads in zip(framed, own):
            parts = guarded(spec.columns, placed_partitions, f, reads)
            if parts is None:  # one block's reads are not its own: place none
                break
            placed.append(parts)
        if len(placed) < len(framed):
            placement, placed = None, [guarded(spec.columns, delayed_partitions, f)
                                       for f in framed]
        return [BlockInputs([(p,) for p in parts], None, len(block.spec.columns), spans[b],
                            None if placement is None else placement.counting[b])
                for b, (block, parts) in enumerate(zip(blocks, placed))], placement
    binned = guarded(spec.columns, groups_frame, frame, shared.specs)
    n, width = binned.npartitions, len(spec.columns)
    if shared.whole():
        spans = [spans_of(rows, n, width, task_memory, s) for s in shares]
        placement = plan(slots, spans, n)
        grouped = (None if placement is None else
                   guarded(spec.columns, placed_partitions, binned, placement.reads))
        if grouped is None:
            placement, grouped = None, guarded(spec.columns, delayed_partitions, binned)
        return [BlockInputs([(p,) for p in grouped], (*shared.takes[b], shared.groups[b]), width,
                            spans[b], None if placement is None else placement.counting[b])
                for b in range(len(blocks))], placement
    grouped = guarded(spec.columns, delayed_partitions, binned)
    picked: dict[int, list] = {}
    out = []
    for b, block in enumerate(blocks):
        for k in shared.groups[b]:
            if k not in picked:
                picked[k] = _picked(grouped, k)
        parts = list(zip(*(picked[k] for k in shared.groups[b])))
        width = len(block.spec.columns)
        out.append(BlockInputs(parts, shared.takes[b], width,
                               spans_of(rows, len(parts), width, task_memory, shares[b]), None))
    return out, None
