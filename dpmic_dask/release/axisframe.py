"""A whole frame in axis numbers: every kinded column as float64 axis values
(:func:`axis_frame`), partition by partition through the frame's backend (the
per-partition conversion is :func:`dpmic_dask.stats.kinds.axis_partition`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.stats.kinds import axis_partition, axis_series


def axis_frame(frame, kinds: Mapping, *, drop=None, keep=()):
    """``frame`` with each column of ``kinds`` (name -> resolved kind, ``None`` for
    a float64 column left as it is) as float64 axis values, and, with ``drop``
    (column names), without the rows that have a null in any of them (listwise;
    the ``keep`` columns, such as a privacy unit's, are carried along as they are).

    pandas frames are converted now (a refusal comes before anything else).
    Dask frames lazily: with ``drop`` in one task per partition (every column is
    read to drop rows anyway), else column by column (a task reading some
    columns converts only those)."""
    todo = {c: k for c, k in kinds.items() if k is not None}
    if not todo and not drop:
        return frame
    backend = backend_for(frame)
    if drop:  # only the release's columns are read (a wide table's others are not)
        frame = frame[list(dict.fromkeys([*kinds, *drop, *keep]))]
        meta = axis_partition(backend.empty(frame), todo, None)
        return backend.map_partitions(frame, axis_partition, todo, drop, meta=meta)
    converted = {}
    for column, kind in todo.items():
        empty = pd.Series([], dtype=np.float64, name=column)
        converted[column] = backend.map_partitions(frame[column], axis_series, kind, meta=empty)
    return frame.assign(**converted)
