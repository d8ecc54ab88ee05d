"""The delayed tasks the Dask backend builds a release's graph from
(:mod:`dpmic_dask.backends.dask`): counting binned partitions, summing partial
counts in a tree, a block's values (from its summed counts in a few pieces of
pairs, or counted and evaluated in one streaming task), and counts of single
columns on the joint refinement."""

from __future__ import annotations

import functools
import operator
import uuid

import dask
import numpy as np

from dpmic_dask.backends.base import evaluate_partial, marginal_counts
from dpmic_dask.backends.placement import pinned
from dpmic_dask.stats.counting import (
    combine_partials,
    count_binned_partitions,
    gather_chunks,
)
from dpmic_dask.stats.countspec import CountSpec, PartialCounts
from dpmic_dask.stats.streaming import streamed_counts


def tree_sum(nodes, split_every: int):
    """The root of a tree summing partial counts, ``split_every`` per node."""
    combine = dask.delayed(combine_partials, pure=True)
    while len(nodes) > 1:
        nodes = [combine(nodes[i:i + split_every]) for i in range(0, len(nodes), split_every)]
    return nodes[0]


def counted_nodes(binned, spec: CountSpec, spans, split_every: int, take=None,
                  workers=None) -> list:
    """Partial counts of ``binned`` (for each partition, a tuple of delayed binned
    chunks: the partition's, or its column groups' with ``take``), at most
    ``split_every`` of them: the partitions of each ``[lo, hi)`` of ``spans``
    counted in one task (:func:`~dpmic_dask.stats.limits.task_spans`), on
    ``workers[i]`` where given (:func:`~dpmic_dask.backends.placement.pinned`),
    then summed ``split_every`` per node while there are more."""
    # The spec rides in the function, not the arguments: Dask walks a dataclass
    # argument field by field (the grid family's 198 grids) for every task.
    count = dask.delayed(functools.partial(count_binned_partitions, spec=spec, take=take),
                         pure=True)
    leaves = []
    for i, (lo, hi) in enumerate(spans):
        with pinned(None if workers is None else workers[i]):
            leaves.append(count(*[c for part in binned[lo:hi] for c in part]))
    split_every = max(2, split_every)
    combine = dask.delayed(combine_partials, pure=True)
    while len(leaves) > split_every:
        leaves = [combine(leaves[i:i + split_every]) for i in range(0, len(leaves), split_every)]
    return leaves


def counted(binned, spec: CountSpec, spans, split_every: int, take=None, workers=None):
    """The root of a tree summing the counts of ``binned`` (:func:`counted_nodes`),
    ``split_every`` partials per node."""
    return tree_sum(counted_nodes(binned, spec, spans, split_every, take, workers),
                    max(2, split_every))


def count_and_evaluate(*chunks, spec: CountSpec, fill, fn, names, take=None):
    """``evaluate_partial`` of the counts of ``chunks``, each pair counted when
    ``fn`` asks for it (:func:`~dpmic_dask.stats.streaming.streamed_counts`)."""
    return evaluate_partial(streamed_counts(gather_chunks(chunks, take), spec), fill, fn, names)


class TokenizedOnce:
    """A block's pair function with a Dask token of its own, fresh per release.

    Each evaluating task names ``fn`` in its arguments, and Dask tokenizes them
    per task: a statistic holding its grid layout (hundreds of grid dataclasses)
    took 0.8 s of driver time at 120 blocks, and tokenizing it even once took
    30 ms of the driver's 90 ms in a tall release on 2 workers. A fresh token
    costs nothing, and no two releases share a task (each computes its own
    values, as each draws its own noise). Calls and attributes (``for_pairs``)
    go to ``fn``; pickling sends ``fn`` itself."""

    def __init__(self, fn, token=None):
        self.fn = fn
        self.token = uuid.uuid4().hex if token is None else token

    def __dask_tokenize__(self):
        return ("pair-function", self.token)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __getattr__(self, name):
        if name == "fn":  # not set yet (while unpickling)
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __reduce__(self):
        return TokenizedOnce, (self.fn, self.token)


def marginals_of(*chunks, take, positions, cells):
    """Some partitions' counts on the joint refinement of the columns at
    ``positions`` of their block (:func:`marginal_counts`). With column groups
    (``take``), only those columns are gathered."""
    if take is not None:
        per, where, *whole = take
        take = (per, tuple(where[p] for p in positions), *whole)
        positions = range(len(positions))
    return marginal_counts(gather_chunks(chunks, take), positions, cells)


def marginal_root(parts, take, positions, cells: int, spans, split_every: int):
    """The root of a tree summing :func:`marginals_of` of the partitions of each
    ``[lo, hi)`` of ``spans`` per task (those of the counting tasks)."""
    count = dask.delayed(functools.partial(marginals_of, take=take, positions=positions,
                                           cells=cells), pure=True)
    return merged([count(*[c for part in parts[lo:hi] for c in part]) for lo, hi in spans],
                  operator.add, split_every)


def merged(nodes, add, split_every: int):
    """The root of a tree combining delayed ``nodes`` with ``add`` (exact and
    associative), up to ``split_every`` per node."""
    merge = dask.delayed(lambda *xs: functools.reduce(add, xs), pure=True)
    while len(nodes) > 1:
        nodes = [merge(*nodes[i:i + max(2, split_every)])
                 for i in range(0, len(nodes), max(2, split_every))]
    return nodes[0]


def pairs_of(partial: PartialCounts, lo: int, hi: int) -> PartialCounts:
    """The summed counts of pairs ``lo..hi-1`` of a block (a piece its values are
    computed from)."""
    return PartialCounts(partial.counts[lo:hi], partial.rows, partial.missing)


def summed_values(partials: list[PartialCounts], fill, fn, names):
    """``evaluate_partial`` of the sum of some partial counts of the same pairs."""
    return evaluate_partial(combine_partials(partials), fill, fn, names)


def block_values(nodes: list, fill, fn, names, piece: int, workers=None) -> list:
    """Tasks computing a block's values from partial counts of all its rows
    (``nodes``, :func:`counted_nodes`), ``piece`` pairs each: each piece takes
    its pairs' part of every node (cut where the node is) and sums them, so the
    summed counts are exchanged in pieces rather than gathered on one worker and
    sent out again (two counting tasks of 45 pairs: 29 MB gathered and cut, or
    15 MB exchanged). Piece ``k`` is computed on ``workers[k]`` where given (left
    to the scheduler, the pieces stayed on the worker holding the counts). The
    results join with :func:`joined`."""
    finish = dask.delayed(summed_values, pure=True)
    if piece >= len(names):
        with pinned(None if workers is None else workers[0]):
            return [finish(list(nodes), fill, fn, names)]
    cut = dask.delayed(pairs_of, pure=True)
    out = []
    for k, lo in enumerate(range(0, len(names), piece)):
        parts = [cut(node, lo, lo + piece) for node in nodes]
        with pinned(None if workers is None else workers[k]):
            out.append(finish(parts, fill, fn, names[lo:lo + piece]))
    return out


def joined(pieces) -> tuple:
    """One block's ``(rows, missing, values)`` from its pieces' (in pair order)."""
    rows, missing, _ = pieces[0]
    return rows, missing, np.concatenate([v for _, _, v in pieces], axis=0)
