"""The only Dask-aware module: count partitions in parallel, sum them exactly.

Uses public Dask APIs only: ``DataFrame.to_delayed`` for the partitions,
``dask.delayed`` for a tree of exact integer sums (``split_every`` partials per
node), and ``dask.compute`` / the active ``distributed.Client`` to run it.
"""

from __future__ import annotations

import sys

import dask
import numpy as np
import pandas as pd

from .characteristic import micr_from_counts
from .partition import CountSpec, PartialCounts, combine_partials, empty_partial, partition_counts

DEFAULT_SPLIT_EVERY = 8


def _active_client():
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    try:
        return default_client()
    except ValueError:
        return None


def run(graph, *, progress: bool | None = None):
    """Compute a Dask collection / delayed object, with a progress bar when asked
    (``None``: only when stderr is a terminal)."""
    show = sys.stderr.isatty() if progress is None else progress
    client = _active_client()
    if client is not None:
        future = client.compute(graph)
        if show:
            from distributed import progress as distributed_progress

            distributed_progress(future)
        return future.result()
    if show:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr):
            return dask.compute(graph)[0]
    return dask.compute(graph)[0]


def _tree_sum(nodes, split_every: int):
    combine = dask.delayed(combine_partials, pure=True)
    while len(nodes) > 1:
        nodes = [combine(nodes[i:i + split_every]) for i in range(0, len(nodes), split_every)]
    return nodes[0]


def count_frame(frame, spec: CountSpec, *, split_every: int = DEFAULT_SPLIT_EVERY,
                progress: bool | None = None) -> PartialCounts:
    """Exact counts of a whole pandas or Dask DataFrame for ``spec``."""
    if isinstance(frame, pd.DataFrame):
        return partition_counts(frame, spec)
    parts = frame[list(spec.columns)].to_delayed()
    if not parts:
        return empty_partial(spec)
    count = dask.delayed(partition_counts, pure=True)
    nodes = [count(part, spec) for part in parts]
    return run(_tree_sum(nodes, max(2, split_every)), progress=progress)


def count_rows(frame) -> int:
    """Number of rows (public under replace-one neighbours)."""
    if isinstance(frame, pd.DataFrame):
        return len(frame)
    return int(run(frame.shape[0], progress=False))


def optimise_pairs(counts: np.ndarray, family, *, use_cluster: bool) -> np.ndarray:
    """MICr of every pair's (exact or already-noised) counts, in parallel when a
    cluster or thread pool is available."""
    if not use_cluster or counts.shape[0] < 2:
        return np.array([micr_from_counts(c, family) for c in counts])
    task = dask.delayed(micr_from_counts, pure=True)
    return np.array(run([task(c, family) for c in counts], progress=False))
