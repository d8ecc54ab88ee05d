"""Where a release's counting runs on a ``distributed`` cluster: one counting
task per worker thread, each on its own thread, reading where it counts.

Left to the scheduler, a counting task goes to the worker holding most of its
input bytes. With one counting task per thread, two of them often met on one
worker while another worker stayed idle: on 16 workers (2.4 x 10^7 rows x 10
columns in 48 files) one worker ran two counting tasks (0.55 s each) one after
the other, and the release waited on it. And the evaluating tasks of a block
ran where its summed counts were, on one or two workers.

A :class:`Placement` names a worker for each counting task (the threads dealt
out in turn), for each partition's read (one of the workers whose counting
tasks take it, in turn, so each worker reads about as many partitions as it
counts and half of them need no transfer with two blocks) and for each piece
of values. These are Dask's loose worker restrictions
(``allow_other_workers``): a worker that leaves or never was gives its tasks
to any other, and work stealing may still move them. Placement changes where
tasks run, never what they compute.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import dask
from dask.core import get_dependencies


@dataclass(frozen=True)
class Placement:
    """Workers for a release's tasks: ``counting[b][i]`` for block ``b``'s counting
    task ``i``, ``reads[p]`` for partition ``p`` where the blocks share their
    partitions (:meth:`own_reads` where each reads its own), and ``values``
    dealt out in turn to the pieces of values (:meth:`value_workers`)."""

    counting: tuple[tuple[str, ...], ...]
    reads: tuple[str, ...]
    values: tuple[str, ...]

    def own_reads(self, block: int, spans) -> tuple[str, ...]:
        """Where each partition of a block that reads its own is read: on the
        worker of the counting task whose span holds it (no transfer)."""
        return tuple(w for w, (lo, hi) in zip(self.counting[block], spans) for _ in range(lo, hi))

    def value_workers(self, start: int, count: int) -> list[str]:
        """The workers of ``count`` consecutive pieces of values, from the
        ``start``-th in all."""
        return [self.values[(start + k) % len(self.values)] for k in range(count)]


def worker_slots(client) -> tuple[str, ...]:
    """Each of ``client``'s workers once per thread, dealt in turn (every worker's
    first thread, in address order, then every second one, ...), so that fewer
    tasks than threads still spread over all the workers; none without a client,
    or where the scheduler cannot answer (nothing is then placed)."""
    if client is None:
        return ()
    try:
        threads = client.nthreads()
    except Exception:  # noqa: BLE001 - a scheduler that cannot answer: place nothing
        return ()
    most = max((int(n) for n in threads.values()), default=0)
    return tuple(w for t in range(most) for w in sorted(threads) if int(threads[w]) > t)


def plan(slots: tuple[str, ...], spans: list[tuple[tuple[int, int], ...]],
         partitions: int | None) -> Placement | None:
    """The placement of blocks whose counting tasks take the partitions
    ``spans[b]`` (``[lo, hi)`` each), over worker threads ``slots``
    (:func:`worker_slots`); ``None`` where placing gains nothing: one thread,
    no partitions, or more counting tasks than threads (the scheduler then
    balances them as they finish).

    Counting tasks take the threads in turn, block after block. Where the
    blocks share ``partitions`` partitions, partition ``p`` is read on the
    worker of one of the tasks that take it (one per block), in turn by ``p``;
    where each block reads its own (``partitions`` is ``None``), beside the task
    that takes it (:meth:`Placement.own_reads`)."""
    tasks = sum(len(s) for s in spans)
    if len(slots) < 2 or tasks == 0 or tasks > len(slots) or partitions == 0:
        return None
    counting, at = [], 0
    for block in spans:
        counting.append(tuple(slots[at + i] for i in range(len(block))))
        at += len(block)
    reads = []
    for p in range(partitions or 0):
        readers = [counting[b][i] for b, block in enumerate(spans)
                   for i, (lo, hi) in enumerate(block) if lo <= p < hi]
        if not readers:
            return None  # spans that leave a partition out: not ours to place
        reads.append(readers[p % len(readers)])
    return Placement(tuple(counting), tuple(reads), tuple(slots))


def pinned(worker: str | None):
    """A context in which new delayed tasks are loosely restricted to ``worker``
    (nothing where it is ``None``)."""
    if worker is None:
        return contextlib.nullcontext()
    return dask.annotate(workers=[worker], allow_other_workers=True)


def placed_partitions(frame, reads: tuple[str, ...]) -> list | None:
    """``frame.to_delayed(optimize_graph=False)`` (an optimised frame) with partition
    ``p``'s task loosely restricted to ``reads[p]``; ``None`` where no partition's
    task reads its own input (a root of the graph), as in a persisted frame or
    one made from delayed objects: its rows are already somewhere, and moving
    them to placed tasks costs more than the scheduler's own choice (it puts a
    counting task beside most of its input), so nothing is placed."""
    keys = frame.__dask_keys__()
    graph = frame.__dask_graph__()
    where = {k: [w] for k, w in zip(keys, reads) if not get_dependencies(graph, k)}
    if not where:
        return None
    with dask.annotate(workers=where.get,
                       allow_other_workers=lambda k: True if k in where else None):
        return frame.to_delayed(optimize_graph=False)
