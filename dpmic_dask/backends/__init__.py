"""Backends: how a frame of a given type is counted, registered by frame type.

Each backend provides the schema, the (public) row count and the exact counts
of a frame, as an aggregate that maps any pair statistic over its counts where
they are, and the partitioned work other modules need (``map_partitions``,
``shuffle_by``, ``tree_sum``, ``persist``, lazy tasks over the partitions): no
module outside the backends builds a Dask graph. The pipeline asks
:func:`backend_for` and never tests frame types itself. A new frame type is one
module with a :class:`Backend` subclass and a
``@register(FrameType)`` line; the backend's :meth:`Backend.install_accessor`
gives its frames the ``.dpmic`` accessor (:func:`install_accessor`), whether it
is registered before or after the package is imported.
"""

from __future__ import annotations

# the built-in backends register themselves (pandas and Dask frames) on import
from dpmic_dask.backends import dask, pandas  # noqa: F401
from dpmic_dask.backends.base import Aggregate, Backend, LocalAggregate, guarded
from dpmic_dask.backends.registry import backend_for, install_accessor, register
from dpmic_dask.stats.countspec import PartialCounts


def count_frame(frame, spec, *, split_every: int = 8, progress: bool | None = None):
    """Exact counts of a whole frame, brought to the driver (tests, references)."""
    agg = backend_for(frame).count(frame, spec, split_every=split_every, progress=progress)
    return PartialCounts(agg.counts(), agg.rows, agg.missing)


__all__ = ["Aggregate", "Backend", "LocalAggregate", "backend_for", "count_frame", "guarded",
           "install_accessor", "register"]
