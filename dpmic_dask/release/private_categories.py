"""Releases with privately chosen categories: choose first, in the same charge.

``categories={"region": {"private": ["north", "south", ...]}}`` gives a public
*candidate* list; the release keeps the candidates whose noisy count clears a
public threshold (:func:`dpmic_dask.privacy.partition_selection.select_candidates`,
pure DP) and treats the kept ones as the column's public list (the rest, and
every value that is not a candidate, fall into "other").
``categories={"region": "private"}`` chooses among the values that occur (an
unknown domain, :func:`~dpmic_dask.privacy.partition_selection.select_partitions`):
a value held by one row is published with probability at most a bad-event
``delta``, so the release needs ``delta > 0`` and is charged that part
(``docs/privacy.md``, "Approximate parts"); at most :data:`MAX_KEPT` values are
kept (fewer when the grid cannot hold them). A plan step like private
bounds: :func:`plan_private_categories` splits the budget (``CATEGORIES_SHARE``
of ``eps``, or of ``rho`` under zCDP, to the choice) before anything is read;
:func:`run_private_categories` makes one pass that counts the candidates and
runs every check of the data, plans the release at the worst case (every
candidate kept), charges the total once, then chooses and releases on a prepaid
part of that charge. The proof is in ``docs/privacy.md`` ("Private categories").
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.errors import (
    DPMICError,
    InvalidParameterError,
)
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import rho_cap
from dpmic_dask.privacy.costs import column_epsilon, measure_for, split_front
from dpmic_dask.privacy.partition_selection import (
    ROW_SENSITIVITY,
    bad_event_threshold,
    candidate_scale,
)
from dpmic_dask.release.stages import check_plan, check_selected_plan
from dpmic_dask.stats.categories import PRIVATE, CategoryAxis, column_kind
from dpmic_dask.stats.sensitivity import safe_down

#: Share of ``eps`` (or of ``rho`` under zCDP) spent on choosing categories.
CATEGORIES_SHARE = 0.1
#: The most values kept per column chosen from the values that occur (the
#: release is checked before the charge at this many, or at the most the grid holds).
MAX_KEPT = 100
#: Share of a release's ``delta`` given to the bad events of choosing from the
#: values that occur; the rest converts ``rho``.
APPROX_SHARE = 0.5
#: What :func:`split_private` puts for a column chosen from the values that occur.
UNKNOWN = None


def split_private(categories):
    """``(public, private)``: the lists given as public, and column -> candidate
    tuple for ``{"private": [...]}`` entries, or :data:`UNKNOWN` for ``"private"``
    alone (chosen from the values that occur)."""
    if not isinstance(categories, Mapping):
        return categories, {}
    public: dict = {}
    private: dict = {}
    for column, listed in categories.items():
        if isinstance(listed, str) and listed == PRIVATE:
            private[column] = UNKNOWN
            continue
        if isinstance(listed, Mapping):
            if set(listed) != {PRIVATE}:
                raise InvalidParameterError(
                    f"categories[{column!r}] must be a list or {{'private': [candidates]}}")
            private[column] = listed[PRIVATE]
        else:
            public[column] = listed
    return public, private


@dataclass(frozen=True)
class PrivateCategoriesPlan:
    """The choice step: its columns and their candidate codings (``axes``: the
    worst case, every candidate kept; a placeholder for a column chosen from the
    values that occur, named in ``unknown``), each column's ``eps_column``, the
    step's cost ``part``-wise (``cost``), the release's prepaid ``release_part``
    and the ``total`` charged once; ``bad_event``: each unknown column's chance
    that a value held by one row is kept."""

    axes: dict
    eps_column: float
    cost: PrivacyCost
    release_part: PrivacyCost
    total: PrivacyCost
    unknown: tuple = ()
    bad_event: float = 0.0
    #: Per unit: ``k``. A column's counts then have L1 sensitivity ``k`` (adding or
    #: removing a unit's at most ``k`` bounded rows; 2 per row, replacing one), and
    #: a value held by one unit is counted up to ``k`` times (once per row).
    unit_k: int | None = None

    @property
    def sensitivity(self) -> int:
        return ROW_SENSITIVITY if self.unit_k is None else self.unit_k

    @property
    def scale(self) -> float:
        return candidate_scale(self.eps_column, self.sensitivity)

    def threshold(self) -> int:
        """The public threshold of a column chosen from the values that occur."""
        return bad_event_threshold(self.eps_column, self.bad_event,
                                   sensitivity=self.sensitivity,
                                   held=1 if self.unit_k is None else self.unit_k)

    def describe(self) -> str:
        text = (f"private categories for {list(self.axes)}: {self.cost.describe()}, "
                f"epsilon {self.eps_column:.4g} per column")
        if self.unknown:
            held = "one row" if self.unit_k is None else f"one unit (up to {self.unit_k} rows)"
            text += (f"; {list(self.unknown)} chosen from the values that occur (a value held "
                     f"by {held} is kept with probability at most {self.bad_event:.3g})")
        return text


def worst_case_lists(schema, private: dict, size: int = 2) -> dict:
    """Each private column's list for planning: its candidates, or, for a column
    chosen from the values that occur, ``size`` placeholders of its dtype's kind
    (the real list is known only after the charge; the release is checked at
    the most it may keep, before the charge). Refuses a column whose values
    cannot be categories (only string, ``category`` and integer columns can)."""
    dtypes = dict(schema.items()) if hasattr(schema, "items") else {}
    lists = {}
    for column, listed in private.items():
        if listed is not UNKNOWN:
            lists[column] = listed
            continue
        if column not in dtypes:
            raise InvalidParameterError(f"categories given for column {column!r}, which the "
                                        "frame does not have")
        kind = column_kind(dtypes[column])
        if kind == "other":
            raise InvalidParameterError(
                f"column {column!r} (dtype {dtypes[column]}) cannot have its categories chosen "
                "from the values that occur: only string, category and integer columns can")
        categories = getattr(dtypes[column], "categories", None)
        if kind == "category" and categories is not None and len(categories) and \
                pd.api.types.infer_dtype(categories, skipna=True) == "integer":
            kind = "integer"  # a category dtype of integers: integer stand-ins
        lists[column] = placeholders(kind, size)
    return lists


def placeholders(kind: str, size: int) -> tuple:
    """``size`` distinct stand-in categories of a column ``kind`` (never matched:
    such a column is read raw and coded only with the chosen list)."""
    if kind == "integer":
        return tuple(range(size))
    return tuple(f"\x00{j}" for j in range(size))


def choice_total(eps: float, delta: float, unknown) -> tuple[PrivacyCost, float]:
    """The whole budget as one cost, and each ``unknown`` column's bad-event
    chance. Without such columns: the measure's total (pure for ``delta = 0``).
    With them (they need ``delta > 0``): :data:`APPROX_SHARE` of ``delta`` to
    the bad events, split evenly, and the ``rho`` the rest converts
    (:func:`~dpmic_dask.privacy.conversion.rho_cap`)."""
    measure = measure_for(delta)
    if not unknown:
        return measure.total(eps, delta), 0.0
    if not measure.holds_approx_parts:
        raise InvalidParameterError(
            f"categories of {list(unknown)} chosen from the values that occur need delta > 0: "
            "a value held by one row is published with probability at most a share of delta. "
            "Give delta > 0, or public candidates: {'private': [candidates]} (pure DP); "
            "nothing was read or charged")
    approx = safe_down(APPROX_SHARE * delta)
    rho = rho_cap(eps, delta, approx)
    if not rho > 0:
        raise InvalidParameterError("eps is too small for this delta")
    return PrivacyCost(eps, delta, rho, approx), safe_down(approx / len(unknown))


def plan_private_categories(eps, delta, mechanism, private: dict, share=CATEGORIES_SHARE):
    """Split the budget: ``share`` to the choice (pure ``eps_column``-DP per column;
    under zCDP the largest ``eps_column`` with ``C eps_column**2 / 2`` within the
    share), the rest to the release. A column chosen from the values that occur
    (:data:`UNKNOWN`) needs ``delta > 0``: :data:`APPROX_SHARE` of ``delta``
    goes to the bad events (split evenly over those columns) and the total
    ``rho`` is what the rest converts (:func:`~dpmic_dask.privacy.conversion.rho_cap`).
    Returns ``(release eps, release mechanism, costs)`` where ``costs`` is
    ``(choice cost, eps_column, release part, total, bad event per column)``."""
    unknown = [c for c, listed in private.items() if listed is UNKNOWN]
    total, bad_event = choice_total(eps, delta, unknown)
    part, release_part, release_eps, release_mechanism = split_front(
        total, share, mechanism, "private categories")
    eps_column = column_epsilon(part, len(private))
    candidate_scale(eps_column)  # a scale that cannot be used is refused now
    if unknown:
        bad_event_threshold(eps_column, bad_event)  # likewise
    return release_eps, release_mechanism, (part, eps_column, release_part, total, bad_event)


def _recode_values(values: np.ndarray, remap: np.ndarray) -> np.ndarray:
    out = np.full(values.shape, np.nan)
    ok = ~np.isnan(values)
    out[ok] = remap[np.floor(values[ok]).astype(np.int64)] + 0.5
    return out


def _recode_series(series: pd.Series, remap: np.ndarray) -> pd.Series:
    return pd.Series(_recode_values(series.to_numpy(dtype=np.float64), remap),
                     index=series.index, name=series.name)


def recode(frame, remaps: dict, coded: dict | None = None):
    """``frame`` (categorical columns as candidate codes) with each column of
    ``remaps`` mapped to the chosen list's codes (a per-row map), and each column
    of ``coded`` (read raw: chosen from the values that occur) coded by its chosen
    :class:`CategoryAxis`."""
    out = frame.copy()
    backend = backend_for(frame)
    columns = {**{c: partial(_recode_series, remap=r) for c, r in remaps.items()},
               **{c: axis.encode_series for c, axis in (coded or {}).items()}}
    for column, fn in columns.items():
        meta = pd.Series([], dtype=np.float64, name=column)
        out[column] = backend.map_partitions(frame[column], fn, meta=meta)
    return out


def chosen_axis(candidates: CategoryAxis, kept: np.ndarray) -> tuple[CategoryAxis, np.ndarray]:
    """The coding of the kept candidates and the map from candidate codes to it
    (kept candidates in candidate order; the null code to the null code; every
    other candidate code and "other" to "other")."""
    listed = tuple(c for c, keep in zip(candidates.categories, kept) if keep)
    final = CategoryAxis(candidates.name, listed, candidates.null_category)
    remap = np.full(candidates.codes, final.other_code, dtype=np.int64)
    for j, keep in enumerate(kept):
        if keep:
            remap[j] = listed.index(candidates.categories[j])
    if candidates.null_code is not None and final.null_code is not None:
        remap[candidates.null_code] = final.null_code
    return final, remap


def most_kept(request, selection, unknown, rows: int) -> int:
    """The most values a column chosen from the values that occur may keep: the
    largest ``K <= MAX_KEPT`` at which every check of the values passes with ``K``
    categories in each ``unknown`` column (and every candidate kept). Public: a
    function of the plan and the public row count. Raises the release's own
    refusal when even two do not fit (before the charge)."""

    def check(size: int) -> None:
        with warnings.catch_warnings():  # a search, not a release: no noise warnings
            warnings.simplefilter("ignore")
            checked(size)

    def checked(size: int) -> None:
        axes = dict(request.categories)
        for name in unknown:
            axes[name] = CategoryAxis(name, placeholders("string", size),
                                      axes[name].null_category)
        planned = dataclasses.replace(request, categories=tuple(axes.items()))
        if selection is None:
            check_plan(planned, rows)
        else:
            check_selected_plan(planned, selection, rows)

    check(2)  # the release's own refusal, if even the smallest list does not fit
    low, high = 2, MAX_KEPT
    while low < high:
        mid = (low + high + 1) // 2
        try:
            check(mid)
        except DPMICError:
            high = mid - 1
        else:
            low = mid
    return low


__all__ = ["APPROX_SHARE", "CATEGORIES_SHARE", "MAX_KEPT", "UNKNOWN",
           "PrivateCategoriesPlan", "choice_total", "chosen_axis", "placeholders",
           "most_kept", "plan_private_categories", "recode", "split_private",
           "worst_case_lists"]
