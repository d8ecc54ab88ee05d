"""The backend protocol and the in-memory aggregate."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from dpmic_dask.errors import DataReadError, DPMICError
from dpmic_dask.stats.countspec import Block, CountSpec, PartialCounts
from dpmic_dask.stats.kernels.binning import add_counts
from dpmic_dask.stats.limits import DEFAULT_TASK_MEMORY


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
    hint = (" (a value that does not convert to the column's kind, such as text in a "
            "column of numbers; a CSV's types are guessed from its first rows, so such a "
            "value further on fails only when it is read)"
            if kind in ("ValueError", "TypeError") else "")
    raise DataReadError(
        f"reading or counting column(s) {list(columns)} failed with {kind}{hint}; its "
        "message is withheld because it may quote data values"
    )


class Aggregate(ABC):
    """Exact counts of a whole table for a :class:`CountSpec` (used where the counts
    themselves are needed: count noise, references). ``rows`` and ``missing`` are
    on the driver; the counts stay where the backend keeps them until asked for."""

    spec: CountSpec
    rows: int
    missing: np.ndarray

    @abstractmethod
    def counts(self) -> np.ndarray:
        """All pairs' flat int64 counts, brought to the driver."""


@dataclass
class LocalAggregate(Aggregate):
    """Counts held in this process."""

    spec: CountSpec
    rows: int
    missing: np.ndarray
    partial: PartialCounts

    def counts(self) -> np.ndarray:
        return self.partial.counts.astype(np.int64, copy=False)


@dataclass(frozen=True)
class Evaluation:
    """Per-pair values of a whole table, computed where the counts were: ``values[p]``
    for the request's pair ``p`` (NaN when a column had missing values and nothing
    was counted), the row count and the per-column missing-value flags;
    ``marginals[k]``, for each column ``k`` asked for, its exact counts on the
    joint refinement of ``spec.family`` (:func:`marginal_counts`), from the same
    pass."""

    rows: int
    missing: np.ndarray
    values: np.ndarray
    marginals: dict = field(default_factory=dict)


def marginal_counts(chunks, positions, cells: int) -> np.ndarray:
    """Exact counts (int64 ``[len(positions), cells]``) of the binned chunks' columns
    at ``positions`` on their joint refinement: each value's cell, as the release
    bins it (clamped to the column's bounds, missing values filled)."""
    out = np.zeros((len(positions), cells), dtype=np.int64)
    for chunk in chunks:
        for k, at in enumerate(positions):
            add_counts(np.ascontiguousarray(chunk.index[at]), out[k])
    return out


def pair_names(spec: CountSpec) -> tuple:
    """The ``(x, y)`` column names of every pair of ``spec``, in its order."""
    return tuple((spec.columns[i], spec.columns[j]) for i, j in spec.pairs)


def evaluate_partial(partial: PartialCounts, fill, fn, names=None):
    """``(rows, missing, fn(counts of each pair))`` of one block's summed counts; no
    values when a column had missing values and no fill (nothing was counted).
    A ``fn`` with ``for_pairs`` (a statistic that depends on the pair's columns,
    e.g. a categorical axis) gets the block's pair ``names`` and gives one
    function per pair."""
    if fill is None and partial.missing.any():
        values = np.full(partial.counts.shape[0], np.nan)
    elif names is not None and hasattr(fn, "for_pairs"):
        values = np.array([f(c) for f, c in zip(fn.for_pairs(names), partial.counts)],
                          dtype=np.float64)
    else:
        values = np.array([fn(c) for c in partial.counts], dtype=np.float64)
    return partial.rows, partial.missing, values


def assemble(spec: CountSpec, blocks: list[Block], results) -> Evaluation:
    """Put per-block ``(rows, missing, values)`` back in the request's order (values
    are one per pair, or one row of several statistics per pair)."""
    results = list(results)
    width = next((np.shape(v)[1] for _, _, v in results if np.ndim(v) == 2), None)
    missing = np.zeros(len(spec.columns), dtype=bool)
    values = np.full((len(spec.pairs),) if width is None else (len(spec.pairs), width), np.nan)
    rows = 0
    for block, (block_rows, block_missing, block_values) in zip(blocks, results):
        rows = int(block_rows)
        missing[list(block.column_indices())] |= np.asarray(block_missing, dtype=bool)
        if width is not None and np.ndim(block_values) == 1:  # nothing was counted
            continue
        values[list(block.indices)] = block_values
    return Evaluation(rows, missing, values)


class _AccessorProperty:
    """``frame.<name>``: ``accessor(frame)``, built on each access (accessors are thin)."""

    def __init__(self, name: str, accessor: type):
        self._name, self._accessor = name, accessor

    def __get__(self, frame, owner=None):
        return self._accessor if frame is None else self._accessor(frame)


class Backend(ABC):
    """How one kind of frame is read and counted."""

    @abstractmethod
    def schema(self, frame):
        """Column name -> dtype, from metadata only (no data is read)."""

    @abstractmethod
    def row_count(self, frame, columns) -> int:
        """Number of rows (public under replace-one neighbours)."""

    @abstractmethod
    def count(self, frame, spec: CountSpec, *, split_every: int, progress: bool | None,
              rows: int | None = None, task_memory: int = DEFAULT_TASK_MEMORY) -> Aggregate:
        """Exact counts of ``frame`` for ``spec`` (partition-invariant).

        ``rows`` (the public row count, when known) and ``task_memory`` size the
        counting tasks only (:func:`~dpmic_dask.stats.limits.task_spans`); the
        counts do not depend on them."""

    @abstractmethod
    def reduce(self, frame, columns, fn, combine, *, split_every: int, progress: bool | None):
        """``fn(partition)`` of every partition (a pandas frame of ``columns``), combined
        pairwise by ``combine`` (exact, associative: sums of counts) where the
        partitions are; only the combined result reaches the driver."""

    # Partitioned work: the frame transforms and passes that modules outside the
    # backends need (each ``fn`` gets one partition, a pandas frame or Series).
    # Optional: a backend that offers none (a wrapper that only counts) keeps these.

    def map_partitions(self, frame, fn, *args, meta):
        """``fn(partition, *args)`` of every partition of ``frame`` (a frame or a
        Series), as a frame of the same kind; ``meta``: the empty pandas frame or
        Series ``fn`` gives (columns and dtypes). Lazy where the backend is."""
        raise NotImplementedError

    def shuffle_by(self, frame, columns):
        """``frame`` with all rows of equal values in ``columns`` in one partition."""
        raise NotImplementedError

    def tree_sum(self, frame, fn, add, *, split_every: int, progress: bool | None = False,
                 columns=()):
        """``fn(partition)`` of every partition of ``frame`` (a frame or a Series),
        added pairwise by ``add`` (exact, associative) in a tree of ``split_every``
        where the partitions are; only the sum reaches the driver. Failures other
        than the package's own errors are reported by :func:`guarded` (``columns``
        named, nothing else)."""
        raise NotImplementedError

    def persist(self, frame):
        """``frame`` computed once and kept where it was computed (every later pass
        reads those rows, not the graph that made them)."""
        raise NotImplementedError

    def persist_with(self, frame, extra):
        """:meth:`persist` of ``frame``, and the value of ``extra`` (a :meth:`task`'s
        result, or ``None``) computed in the same pass: partitions that both read
        are read once."""
        return self.persist(frame), extra

    def empty(self, frame):
        """An empty pandas frame (or Series) with ``frame``'s columns and dtypes;
        nothing is read."""
        raise NotImplementedError

    def npartitions(self, frame) -> int:
        """How many partitions ``frame`` has."""
        raise NotImplementedError

    def partitions(self, frame) -> list:
        """One handle per partition of ``frame``, in order, for :meth:`task`: the
        partitions themselves, or lazy values where the backend is lazy."""
        raise NotImplementedError

    def task(self, fn, *args, nout: int | None = None):
        """``fn(*args)``, where the partitions are: ``args`` may hold handles from
        :meth:`partitions` and results of other tasks (also in lists), which
        ``fn`` gets as values. With ``nout``, ``fn`` returns a sequence of that
        length whose items can be indexed before it is computed. Tasks are pure:
        equal arguments, one computation."""
        raise NotImplementedError

    def from_partitions(self, parts: list, meta):
        """A frame of ``parts`` (tasks' results, each a pandas frame like ``meta``)
        in order, one partition each."""
        raise NotImplementedError

    def install_accessor(self, frame_type: type, name: str, accessor: type) -> None:
        """Give ``frame_type`` the accessor ``frame.<name>`` (the frame library's own
        extension mechanism where it has one; a cached property otherwise)."""
        if not hasattr(frame_type, name):
            setattr(frame_type, name, _AccessorProperty(name, accessor))

    def map_counts(self, counts: np.ndarray, fn) -> np.ndarray:
        """``fn(counts[p])`` for every row ``p`` of driver-side counts (noisy counts)."""
        return np.array([fn(c) for c in counts], dtype=np.float64)

    def counts_marginals(self, frame) -> bool:
        """Whether :meth:`evaluate` takes ``marginals`` (a backend that does not
        leaves a step that would read them to a pass of its own)."""
        return False

    @abstractmethod
    def evaluate(self, frame, spec: CountSpec, fn, *, pairs_per_block: int, split_every: int,
                 progress: bool | None, rows: int | None = None,
                 task_memory: int = DEFAULT_TASK_MEMORY, marginals=()) -> Evaluation:
        """``fn`` of every pair's exact counts, counted in blocks of at most
        ``pairs_per_block`` pairs; only per-pair values reach the driver. ``rows``
        and ``task_memory`` as for :meth:`count`. ``marginals`` (given only to a
        backend whose :meth:`counts_marginals` says so): indices of columns whose
        counts on the joint refinement (:attr:`Evaluation.marginals`) come from
        the same pass, each counted once."""
