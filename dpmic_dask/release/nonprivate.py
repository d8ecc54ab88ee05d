"""The exact, NON-PRIVATE MICr of every pair (``frame.dpmic.pairwise_nonprivate``),
for data that is not sensitive: the values step's counting without a charge
or noise."""

from __future__ import annotations

import dataclasses
from functools import partial

import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.config import engine
from dpmic_dask.release.categorygrids import check_category_grids
from dpmic_dask.release.request import pairwise_request
from dpmic_dask.release.stages import (
    evaluate_pairs,
    grid_parameters,
    pair_function,
)


def run_pairwise_nonprivate(frame, *, bounds, B, c, columns=None, nulls="raise", fill=None,
                            split_every=None, progress=None, task_memory=None,
                            categories=None):
    """Exact (NON-PRIVATE) MICr of every pair: a DataFrame ``x, y, micr, n, B, c``.
    ``categories`` (column -> :class:`~dpmic_dask.stats.categories.CategoryAxis`,
    columns already coded) gives those columns' pairs a categorical axis. The
    engine's knobs not given are read from :mod:`dpmic_dask.config`, once."""
    knobs = engine(task_memory=task_memory, split_every=split_every, progress=progress)
    backend = backend_for(frame)
    request = pairwise_request(backend.schema(frame), eps=1.0, bounds=bounds, columns=columns,
                               B=B, c=c, nulls=nulls, fill=fill,
                               split_every=knobs.split_every, mechanism="micr-lap",
                               task_memory=knobs.task_memory)
    B, c = grid_parameters(request, MIN_ROWS)
    statistic = request.statistic
    layout = statistic.layout(B, c)
    if categories:
        request = dataclasses.replace(request, categories=tuple(categories.items()))
        check_category_grids(request, B, c)
    rows = backend.row_count(frame, request.columns)
    evaluation = evaluate_pairs(frame, backend, request, layout, rows, B, c,
                           pair_function(request, layout, partial(statistic.value, layout=layout)),
                           knobs.progress)
    return pd.DataFrame({
        "x": [request.columns[i] for i, _ in request.pairs],
        "y": [request.columns[j] for _, j in request.pairs],
        "micr": evaluation.values,
        "n": evaluation.rows,
        "B": B,
        "c": c,
    })
