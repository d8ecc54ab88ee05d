"""The state of one run of a release plan, as its steps leave it for the next
(:mod:`dpmic_dask.release.steps`, :mod:`dpmic_dask.release.executor`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpmic_dask.release.unitbase import per_unit


@dataclass
class Run:
    """One run of a plan: the frame as the steps so far left it, the values'
    request and selection as the released facts rewrote them, the row counts,
    and what each step released (for the result and its report)."""

    frame: Any
    request: Any  # a ReleaseRequest
    selection: Any  # a SelectionPlan, or None
    bounds: Any  # the private-bounds step's plan, or None
    split_every: int
    progress: bool | None = None
    #: The exact row count seen before the charge (never released), and the
    #: public one every noise scale and check uses (``n0`` per unit).
    rows: Any = None  # int once a pass counted them
    public: Any = None  # int once known
    unit_k: Any = None  # int per unit
    n0: Any = None  # int per unit, after the charge
    found: dict = field(default_factory=dict)
    said: dict = field(default_factory=dict)
    #: Columns read raw until the choice of categories codes them (chosen from
    #: the values that occur): the categories' own pass reads them, no other.
    raw: tuple = ()

    def numeric(self) -> tuple[tuple, tuple | None]:
        """The values' columns in axis numbers now, and their fill values."""
        request = self.request
        keep = [k for k, name in enumerate(request.columns) if name not in self.raw]
        fill = None if request.fill is None else tuple(request.fill[k] for k in keep)
        return tuple(request.columns[k] for k in keep), fill

    def values_plan(self):
        """The values' request and selection, per unit released at ``n0``."""
        if self.unit_k is None:
            return self.request, self.selection
        return per_unit((self.request, self.selection), self.unit_k, self.n0)

    def read(self) -> tuple:
        """Every column any step reads."""
        read = tuple(self.request.columns)
        if self.bounds is not None:
            read = tuple(dict.fromkeys((*read, *self.bounds.bounds.columns)))
        return read

    def seen(self, rows) -> None:
        """A pass before the charge counted ``rows`` (missing values refused there)."""
        self.rows = int(rows)


__all__ = ["Run"]
