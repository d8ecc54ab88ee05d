"""The pandas backend: one partition, counted in this process."""

from __future__ import annotations

import dataclasses

import pandas as pd

from dpmic_dask.backends.base import (
    Backend,
    Evaluation,
    LocalAggregate,
    assemble,
    evaluate_partial,
    guarded,
    marginal_counts,
    pair_names,
)
from dpmic_dask.backends.registry import register
from dpmic_dask.stats.counting import bin_partition, partition_counts


@register(pd.DataFrame)
class PandasBackend(Backend):
    """pandas DataFrames: one partition, counted in this process."""

    def install_accessor(self, frame_type, name, accessor):
        if not hasattr(frame_type, name):  # subclasses inherit it
            pd.api.extensions.register_dataframe_accessor(name)(accessor)

    def schema(self, frame):
        return frame.dtypes

    def row_count(self, frame, columns) -> int:
        return len(frame)

    def count(self, frame, spec, *, split_every, progress, rows=None,
              task_memory=None) -> LocalAggregate:
        partial = guarded(spec.columns, partition_counts, frame, spec)
        return LocalAggregate(spec, partial.rows, partial.missing, partial)

    def reduce(self, frame, columns, fn, combine, *, split_every, progress):
        return self.tree_sum(frame[list(columns)], fn, combine, split_every=split_every,
                             progress=progress, columns=columns)

    def map_partitions(self, frame, fn, *args, meta):
        return fn(frame, *args)

    def shuffle_by(self, frame, columns):
        return frame  # one partition holds every row

    def tree_sum(self, frame, fn, add, *, split_every, progress=False, columns=()):
        return guarded(columns, fn, frame)

    def persist(self, frame):
        return frame

    def empty(self, frame):
        return frame.iloc[:0]

    def npartitions(self, frame) -> int:
        return 1

    def partitions(self, frame) -> list:
        return [frame]

    def task(self, fn, *args, nout=None):
        return fn(*args)

    def from_partitions(self, parts, meta):
        return pd.concat(parts) if parts else meta

    def counts_marginals(self, frame) -> bool:
        return True

    def evaluate(self, frame, spec, fn, *, pairs_per_block, split_every, progress,
                 rows=None, task_memory=None, marginals=()) -> Evaluation:
        blocks = spec.blocks(pairs_per_block)
        results = [evaluate_partial(guarded(spec.columns, partition_counts, frame, block.spec),
                                    spec.fill, fn, pair_names(block.spec))
                   for block in blocks]  # one block's counts at a time
        found = assemble(spec, blocks, results)
        wanted = list(dict.fromkeys(marginals))
        if not wanted:
            return found
        binned = guarded(spec.columns, bin_partition, frame, spec.subset(wanted))
        sums = marginal_counts([binned], range(len(wanted)),
                               spec.family.joint.boundaries.size + 1)
        return dataclasses.replace(found, marginals=dict(zip(wanted, sums)))
