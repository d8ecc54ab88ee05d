"""The counting passes of the table tests: every table a PC level reads, in one
pass (more only when a level needs more than :data:`MAX_LEVEL_CELLS` counts),
and level 0's pass, made before any charge, which also gives the public row
count and refuses missing values."""

from __future__ import annotations

from functools import partial

import numpy as np

from dpmic_dask.causal.correlationsearch import check_rows, refuse_missing_values
from dpmic_dask.causal.request import MAX_LEVEL_CELLS, CausalRequest
from dpmic_dask.causal.tables import (
    LevelCounts,
    LevelTables,
    TableKey,
    combine_counts,
    count_partition,
)


def blocks(layout_keys, codings) -> list[tuple]:
    """``keys`` in consecutive blocks of at most :data:`MAX_LEVEL_CELLS` counts (one
    block, one pass, unless a level needs more memory than that)."""
    out: list[tuple] = []
    block: list = []
    cells = 0
    for key in layout_keys:
        size = LevelTables(codings, (key,)).cells
        if block and cells + size > MAX_LEVEL_CELLS:
            out.append(tuple(block))
            block, cells = [], 0
        block.append(key)
        cells += size
    return out + ([tuple(block)] if block else [])


def counter(frame, request: CausalRequest, backend, split_every, progress, passes):
    """``count(keys) -> (layout, summed)``: every table of ``keys`` in one pass (more
    only when they exceed :data:`MAX_LEVEL_CELLS`), ``passes`` counting them."""
    def count_level(keys):
        summed = None
        for block in blocks(keys, request.codings):
            layout = LevelTables(request.codings, block)
            part = backend.reduce(frame, request.names, partial(count_partition, layout=layout),
                                  combine_counts, split_every=split_every, progress=progress)
            passes.append(len(block))
            if summed is None:
                summed = part
            else:
                summed = LevelCounts(np.concatenate([summed.counts, part.counts]),
                                     summed.missing | part.missing, summed.rows)
        return LevelTables(request.codings, keys), summed
    return count_level


def first_level(frame, request, backend, split_every, progress, passes, public=True):
    """Level 0's pass (every pair's table), before any charge: it also gives the
    public row count (checked; ``public=False``: per unit, where the count is
    private and refuses nothing) and refuses missing values. Returns ``(rows,
    (layout, counts))``."""
    p = len(request.codings)
    keys = tuple(TableKey(i, j, ()) for i in range(p) for j in range(i + 1, p))
    layout, summed = counter(frame, request, backend, split_every, progress, passes)(keys)
    refuse_missing_values(summed, request)
    rows = check_rows(int(summed.rows)) if public else int(summed.rows)
    return rows, (layout, summed.counts)


__all__ = ["blocks", "counter", "first_level"]
