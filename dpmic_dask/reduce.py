"""The only Dask-aware module: count partitions in parallel, sum them exactly.

Uses public Dask APIs only: ``DataFrame.to_delayed`` for the partitions,
``dask.delayed`` for a tree of exact integer sums (``split_every`` partials per
node), ``dask.persist`` to keep the summed counts on the cluster, and
``dask.compute`` / the active ``distributed.Client`` to run graphs. Exact counts
stay on the workers; the driver receives only the row count, the missing-value
flags and (for MICr-Lap/Gauss) one exact MICr per pair, which it noises.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import dask
import numpy as np
import pandas as pd

from .characteristic import micr_from_counts
from .errors import DataReadError, DPMICError
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


def guarded(columns, work, *args, **kwargs):
    """``work(*args, **kwargs)``, with every failure other than the package's own
    errors turned into :class:`DataReadError` naming ``columns`` and the exception
    type only.

    Readers, pandas and Dask put cell values into their messages (``invalid literal
    for int(): 'secret-4111'``); none of that text may reach the caller. The new
    error is raised outside the ``except`` block, so it carries neither the
    original as ``__context__`` nor its traceback.
    """
    try:
        return work(*args, **kwargs)
    except DPMICError:
        raise
    except Exception as exc:  # noqa: BLE001 - any third-party failure, by design
        kind = type(exc).__name__
    raise DataReadError(
        f"reading or counting column(s) {list(columns)} failed with {kind}; its message "
        "is withheld because it may quote data values"
    )


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
            from distributed import progress as distributed_progress

            distributed_progress(futures)
        return client.gather(futures)
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


def _summary(partial: PartialCounts):
    return partial.rows, partial.missing


def _pair_micr(partial: PartialCounts, index: int, family) -> float:
    return micr_from_counts(partial.counts[index], family)


@dataclass
class Aggregate:
    """Exact counts of a whole table: in memory (pandas input) or persisted on the
    cluster (Dask input). ``rows`` and ``missing`` are already on the driver."""

    spec: CountSpec
    rows: int
    missing: np.ndarray
    _local: PartialCounts | None = None
    _remote: object = None

    def counts(self) -> np.ndarray:
        """All pairs' flat master counts, brought to the driver."""
        if self._local is not None:
            return self._local.counts.astype(np.int64, copy=False)
        return run(self._remote, progress=False,
                   columns=self.spec.columns).counts.astype(np.int64, copy=False)

    def exact_micr(self) -> np.ndarray:
        """Exact MICr of every pair, computed where the counts are."""
        family = self.spec.family
        n_pairs = len(self.spec.pairs)
        if self._local is not None:
            return np.array([micr_from_counts(c, family) for c in self._local.counts])
        task = dask.delayed(_pair_micr, pure=True)
        return np.array(run([task(self._remote, p, family) for p in range(n_pairs)],
                            progress=False, columns=self.spec.columns))


def aggregate(frame, spec: CountSpec, *, split_every: int = DEFAULT_SPLIT_EVERY,
              progress: bool | None = None) -> Aggregate:
    """Count a pandas or Dask DataFrame for ``spec`` (exact, partition-invariant)."""
    if isinstance(frame, pd.DataFrame):
        partial = guarded(spec.columns, partition_counts, frame, spec)
        return Aggregate(spec, partial.rows, partial.missing, _local=partial)
    parts = guarded(spec.columns, lambda: frame[list(spec.columns)].to_delayed())
    if not parts:
        partial = empty_partial(spec)
        return Aggregate(spec, 0, partial.missing, _local=partial)
    count = dask.delayed(partition_counts, pure=True)
    root = _tree_sum([count(part, spec) for part in parts], max(2, split_every))
    (root,) = guarded(spec.columns, dask.persist, root)
    rows, missing = run(dask.delayed(_summary, pure=True)(root), progress=progress,
                        columns=spec.columns)
    return Aggregate(spec, int(rows), np.asarray(missing), _remote=root)


def count_frame(frame, spec: CountSpec, *, split_every: int = DEFAULT_SPLIT_EVERY,
                progress: bool | None = None) -> PartialCounts:
    """Exact counts of a whole frame, brought to the driver."""
    agg = aggregate(frame, spec, split_every=split_every, progress=progress)
    return PartialCounts(agg.counts(), agg.rows, agg.missing)


def count_rows(frame, columns=()) -> int:
    """Number of rows (public under replace-one neighbours)."""
    if isinstance(frame, pd.DataFrame):
        return len(frame)
    return int(run(frame.shape[0], progress=False, columns=columns))


def optimise_pairs(counts: np.ndarray, family, *, use_cluster: bool) -> np.ndarray:
    """MICr of every pair's (noisy) counts on the driver, in parallel tasks when a
    cluster or thread pool is available."""
    if not use_cluster or counts.shape[0] < 2:
        return np.array([micr_from_counts(c, family) for c in counts])
    task = dask.delayed(micr_from_counts, pure=True)
    return np.array(run([task(c, family) for c in counts], progress=False))
