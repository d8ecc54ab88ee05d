"""One validated request, built once from the arguments and the frame's schema.

:func:`pairwise_request` and :func:`pair_request` run every check that needs no
data -- parameters, mechanism and its budget kind, bounds and fill values
against the schema, limits on the grid family -- in one fixed order, and return
a frozen :class:`ReleaseRequest` that the pipeline passes down. The accessor,
:func:`dpmic_dask.private_mic` and batch job files all build their request here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numpy as np

from dpmic_dask.checks import check_bounds, check_clump_factor, check_frame_request, check_max_cells
from dpmic_dask.config import resolve
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import check_delta, check_epsilon
from dpmic_dask.privacy.mechanisms.base import Mechanism
from dpmic_dask.privacy.mechanisms.registry import (
    build_mechanism,
    check_mechanism,
    check_statistics,
    split_mechanism,
)
from dpmic_dask.stats.limits import DEFAULT_SPLIT_EVERY, DEFAULT_TASK_MEMORY, check_grid_lower_bound
from dpmic_dask.stats.statistics.registry import union_layout


@dataclass(frozen=True)
class ArgumentNames:
    """How messages name the arguments (the Python API's spelling by default)."""

    eps: str = "eps"
    delta: str = "delta"
    B: str = "B"
    c: str = "c"
    k: str = "k"
    threshold: str = "threshold"
    max_pairs: str = "max_pairs"
    share: str = "select_share"
    screen_B: str = "screen_B"
    bounds_check: str = "bounds_check"

    def bounds(self, column) -> str:
        return f"bounds[{column!r}]"

    def fill(self, column) -> str:
        return f"fill[{column!r}]"


@dataclass(frozen=True)
class JobFileNames(ArgumentNames):
    """The spelling of batch job files (``privacy.eps``, ``columns.age.bounds``)."""

    eps: str = "privacy.eps"
    delta: str = "privacy.delta"
    B: str = "privacy.B"
    c: str = "privacy.c"
    k: str = "select.top_k"
    threshold: str = "select.threshold"
    max_pairs: str = "select.max_pairs"
    share: str = "select.share"
    screen_B: str = "select.screen_B"
    bounds_check: str = "bounds.check"

    def bounds(self, column) -> str:
        return f"columns.{column}.bounds"

    def fill(self, column) -> str:
        return f"columns.{column}.fill"


API_NAMES = ArgumentNames()


@dataclass(frozen=True)
class ReleaseRequest:
    """A checked request for one release (no data has been read).

    ``mechanism`` is the resolved mechanism object (``auto`` already decided from
    ``(eps, delta, P)``); ``B`` and ``c`` are ``None`` where the defaults, which
    depend on the row count, are to be used.
    """

    columns: tuple
    bounds: tuple
    fill: tuple | None
    eps: float
    delta: float
    mechanism: Mechanism
    B: int | float | None
    c: int | None
    split_every: int = DEFAULT_SPLIT_EVERY
    label: str | None = None
    task_memory: int = DEFAULT_TASK_MEMORY
    #: Further statistics released beside MIC (each its own share of the budget),
    #: and the total cost when there are any.
    companions: tuple = ()
    total_cost: PrivacyCost | None = None
    #: ``nulls="drop"``: the public minimum of the rows kept, which every noise
    #: scale and default is calibrated to (the kept count itself is not public).
    min_rows: int | None = None
    #: Categorical columns' codings, ``((column, CategoryAxis), ...)``: their pairs'
    #: MIC has a categorical axis and their tau is undefined (NaN).
    categories: tuple = ()
    #: The categorical pairs' shapes as planned before the charge (public lists, or
    #: the worst case of a private choice): what the default ``B`` steps up to fit
    #: (:func:`~dpmic_dask.release.categorygrids.category_B`), after the charge too.
    category_shapes: tuple = ()

    @property
    def cost(self) -> PrivacyCost:
        """What the release charges: the mechanism's cost, or the total of all parts."""
        return self.total_cost if self.total_cost is not None else self.mechanism.cost

    @property
    def statistics(self) -> tuple[str, ...]:
        """Public names of the released statistics (``"mic"`` first)."""
        return ("mic",) + tuple(m.statistic.name for m in self.companions)

    def layout(self, B: int, c: int):
        """The count layout holding every released statistic's counts (the union of
        the grids they declare)."""
        return union_layout((self.statistic, *(m.statistic for m in self.companions)), B, c)

    @cached_property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """Column index pairs ``(i, j)``, ``i < j``, in lexicographic order (computed
        once: releases index into it per pair)."""
        return tuple(combinations(range(len(self.columns)), 2))

    @property
    def n_pairs(self) -> int:
        return len(self.columns) * (len(self.columns) - 1) // 2

    @property
    def statistic(self):
        return self.mechanism.statistic


def _parameters(eps, delta, mechanism, B, c, names: ArgumentNames):
    eps = check_epsilon(eps, names.eps)
    delta = check_delta(delta, names.delta)
    check_mechanism(mechanism)
    B = None if B is None else check_max_cells(B, names.B)
    c = None if c is None else check_clump_factor(c, names.c)
    return eps, delta, B, c


def pairwise_request(schema, *, eps, bounds, columns=None, delta=0.0, mechanism="auto",
                     B=None, c=None, nulls="raise", fill=None,
                     split_every=None, label=None,
                     task_memory=None, statistics=("mic",),
                     names: ArgumentNames = API_NAMES) -> ReleaseRequest:
    """Check a release of every pair of the selected columns against ``schema``
    (column -> dtype). Raises a package error naming the argument (as ``names``
    spells it) on any problem. ``statistics=("mic", "tau_a")`` also releases
    Kendall's tau of every pair, the budget split equally between the two."""
    statistics = check_statistics(statistics)
    eps, delta, B, c = _parameters(eps, delta, mechanism, B, c, names)
    if mechanism == "mice-lap":
        raise InvalidParameterError(
            "mechanism 'mice-lap' ranks the whole table in memory and cannot be computed "
            "from mergeable counts; use dpmic_dask.private_mic on in-memory columns")
    # the engine's knobs: given (checked), else read from dpmic_dask.config
    split_every = resolve("split_every", split_every)
    task_memory = resolve("task_memory", task_memory)
    columns, checked, fills = check_frame_request(schema, bounds=bounds, columns=columns,
                                                  nulls=nulls, fill=fill, names=names)
    n_pairs = len(columns) * (len(columns) - 1) // 2
    mech = build_mechanism(mechanism, eps=eps, delta=delta, pairs=n_pairs)
    mech.cost  # noqa: B018  (refuses e.g. a rho that underflows, before any read)
    # counts of all pairs come to the driver only for count noise; values are
    # computed block by block (one pair at least per block)
    check_grid_lower_bound(B, c, n_pairs if mech.acts_on == "counts" else 1, split_every)
    if len(statistics) == 1:
        return ReleaseRequest(columns, checked, fills, eps, delta, mech, B, c, split_every,
                              label, task_memory)
    main, *others = split_mechanism(mech, statistics)
    request = ReleaseRequest(columns, checked, fills, eps, delta, main, B, c, split_every,
                             label, task_memory, tuple(others), mech.cost)
    if B is not None and c is not None:
        request.layout(int(B), c)  # refuses a (B, c) without a tau grid, before any read
    return request


def pair_request(*, eps, x_bounds, y_bounds, mechanism="auto", delta=0.0, B=None,
                 c=None) -> ReleaseRequest:
    """Check a release of one in-memory pair (``private_mic``)."""
    eps, delta, B, c = _parameters(eps, delta, mechanism, B, c, API_NAMES)
    bounds = (check_bounds(x_bounds, "x_bounds"), check_bounds(y_bounds, "y_bounds"))
    mech = build_mechanism(mechanism, eps=eps, delta=delta, pairs=1)
    mech.cost  # noqa: B018
    if mech.statistic.mergeable:
        check_grid_lower_bound(B, c, 1)
    return ReleaseRequest(("x", "y"), bounds, None, eps, delta, mech, B, c)


def numeric_schema(columns) -> dict:
    """A schema in which every named column is float64 (job files: dtypes come with
    the data, so ``dpmic validate`` assumes numeric columns)."""
    return {name: np.dtype("float64") for name in columns}


__all__ = ["API_NAMES", "ArgumentNames", "JobFileNames", "ReleaseRequest", "numeric_schema",
           "pair_request", "pairwise_request"]
