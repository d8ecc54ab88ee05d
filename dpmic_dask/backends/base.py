"""The backend protocol and the in-memory aggregate."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..counting import CountSpec, PartialCounts
from ..errors import DataReadError, DPMICError


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


class Aggregate(ABC):
    """Exact counts of a whole table for a :class:`CountSpec`. ``rows`` and
    ``missing`` are on the driver; the counts stay where the backend keeps them."""

    spec: CountSpec
    rows: int
    missing: np.ndarray

    @abstractmethod
    def counts(self) -> np.ndarray:
        """All pairs' flat int64 counts, brought to the driver."""

    @abstractmethod
    def map_pairs(self, fn) -> np.ndarray:
        """``fn(counts of pair p)`` for every pair, computed where the counts are."""


@dataclass
class LocalAggregate(Aggregate):
    """Counts held in this process."""

    spec: CountSpec
    rows: int
    missing: np.ndarray
    partial: PartialCounts

    def counts(self) -> np.ndarray:
        return self.partial.counts.astype(np.int64, copy=False)

    def map_pairs(self, fn) -> np.ndarray:
        return np.array([fn(c) for c in self.partial.counts], dtype=np.float64)


class Backend(ABC):
    """How one kind of frame is read and counted."""

    @abstractmethod
    def schema(self, frame):
        """Column name -> dtype, from metadata only (no data is read)."""

    @abstractmethod
    def row_count(self, frame, columns) -> int:
        """Number of rows (public under replace-one neighbours)."""

    @abstractmethod
    def count(self, frame, spec: CountSpec, *, split_every: int,
              progress: bool | None) -> Aggregate:
        """Exact counts of ``frame`` for ``spec`` (partition-invariant)."""

    def map_counts(self, counts: np.ndarray, fn) -> np.ndarray:
        """``fn(counts[p])`` for every row ``p`` of driver-side counts (noisy counts)."""
        return np.array([fn(c) for c in counts], dtype=np.float64)
