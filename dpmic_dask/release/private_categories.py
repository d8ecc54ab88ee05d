"""Releases with privately chosen categories: choose first, in the same charge.

``categories={"region": {"private": ["north", "south", ...]}}`` gives a public
*candidate* list; the release keeps the candidates whose noisy count clears a
public threshold (:func:`dpmic_dask.privacy.partition_selection.select_candidates`,
pure DP) and treats the kept ones as the column's public list (the rest, and
every value that is not a candidate, fall into "other"). A plan step like private
bounds: :func:`plan_private_categories` splits the budget (``CATEGORIES_SHARE``
of ``eps``, or of ``rho`` under zCDP, to the choice) before anything is read;
:func:`run_private_categories` makes one pass that counts the candidates and
runs every check of the data, plans the release at the worst case (every
candidate kept), charges the total once, then chooses and releases on a prepaid
part of that charge. The proof is in ``docs/privacy.md`` ("Private categories").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, MissingValuesError
from dpmic_dask.privacy.accounting import PrivacyCost, privacy_statement
from dpmic_dask.privacy.costs import PURE_DP, ZCDP, column_epsilon, measure_for
from dpmic_dask.privacy.partition_selection import candidate_scale, select_candidates
from dpmic_dask.release.charge import after_charge, charge_budget, precheck_budget
from dpmic_dask.release.pipeline import release_pairs, release_selected
from dpmic_dask.release.stages import check_plan, check_selected_plan
from dpmic_dask.stats.categories import PRIVATE, CategoryAxis
from dpmic_dask.stats.counting import column_values

#: Share of ``eps`` (or of ``rho`` under zCDP) spent on choosing categories.
CATEGORIES_SHARE = 0.1


def split_private(categories):
    """``(public, private)``: the lists given as public, and column -> candidate
    tuple for ``{"private": [...]}`` entries. ``"private"`` alone (an unknown
    domain) is refused: see :mod:`dpmic_dask.privacy.partition_selection`."""
    if not isinstance(categories, Mapping):
        return categories, {}
    public, private = {}, {}
    for column, listed in categories.items():
        if isinstance(listed, str) and listed == PRIVATE:
            raise InvalidParameterError(
                f"categories[{column!r}] = 'private' would choose among the values that occur "
                "(an unknown domain): that needs delta > 0 and an (eps, delta) guarantee that "
                "the ledger, which composes in pure epsilon or zCDP, cannot account; give "
                f"public candidates instead: categories={{{column!r}: {{'private': [...]}}}} "
                "(pure DP; nothing was read or charged)")
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
    worst case, every candidate kept), each column's ``eps_column``, the step's
    cost ``part``-wise (``cost``), the release's prepaid ``release_part`` and the
    ``total`` charged once."""

    axes: dict
    eps_column: float
    cost: PrivacyCost
    release_part: PrivacyCost
    total: PrivacyCost

    def describe(self) -> str:
        return (f"private categories for {list(self.axes)}: {self.cost.describe()}, "
                f"epsilon {self.eps_column:.4g} per column")


def plan_private_categories(eps, delta, mechanism, private: dict, share=CATEGORIES_SHARE):
    """Split the budget: ``share`` to the choice (pure ``eps_column``-DP per column;
    under zCDP the largest ``eps_column`` with ``C eps_column**2 / 2`` within the
    share), the rest to the release. Returns ``(release eps, release mechanism,
    costs)`` where ``costs`` is ``(choice cost, eps_column, release part, total)``."""
    measure = measure_for(delta)
    if measure is ZCDP and mechanism not in ("auto", "micr-gauss"):
        raise InvalidParameterError("with private categories and delta > 0 the release is "
                                    "micr-gauss (mechanism='auto' or 'micr-gauss')")
    total = measure.total(eps, delta)
    (part,) = measure.split(total, (share,))
    k = len(private)
    eps_column = column_epsilon(part, k)
    cost = PrivacyCost(part.epsilon) if measure is PURE_DP else part
    candidate_scale(eps_column)  # a scale that cannot be used is refused now
    release_part = measure.rest(total, part.amount())
    if measure is PURE_DP:
        release_eps, release_mechanism = release_part.epsilon, mechanism
    else:
        release_eps, release_mechanism = ZCDP.within(release_part.amount(), delta), "micr-gauss"
    return release_eps, release_mechanism, (cost, eps_column, release_part, total)


def _first_pass(frame, *, columns, private, codes, fill):
    """One partition: each private column's code histogram, the row count, and
    every column's missing flag (every column converted: a cell that is not a
    number is refused here, before the charge)."""
    hist = [np.zeros(codes[c], dtype=np.int64) for c in private]
    missing = np.zeros(len(columns), dtype=bool)
    for k, name in enumerate(columns):
        v = column_values(frame, name)
        nan = np.isnan(v)
        if nan.any():
            missing[k] = True
            v = v[~nan] if fill is None else np.where(nan, fill[k], v)
        if name in private:
            at = private.index(name)
            hist[at] += np.bincount(np.floor(v).astype(np.int64), minlength=codes[name])
    return hist, len(frame), missing


def _add(a, b):
    return [x + y for x, y in zip(a[0], b[0])], a[1] + b[1], a[2] | b[2]


def _recode_values(values: np.ndarray, remap: np.ndarray) -> np.ndarray:
    out = np.full(values.shape, np.nan)
    ok = ~np.isnan(values)
    out[ok] = remap[np.floor(values[ok]).astype(np.int64)] + 0.5
    return out


def _recode_series(series: pd.Series, remap: np.ndarray) -> pd.Series:
    return pd.Series(_recode_values(series.to_numpy(dtype=np.float64), remap),
                     index=series.index, name=series.name)


def recode(frame, remaps: dict):
    """``frame`` (categorical columns as candidate codes) with each column of
    ``remaps`` mapped to the chosen list's codes (a per-row map)."""
    out = frame.copy()
    for column, remap in remaps.items():
        if isinstance(frame, pd.DataFrame):
            out[column] = _recode_series(frame[column], remap)
        else:
            meta = pd.Series([], dtype=np.float64, name=column)
            out[column] = frame[column].map_partitions(_recode_series, remap, meta=meta)
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


def run_private_categories(frame, plan, *, ledger=None, dataset=None, progress=None):
    """Run a release planned with private categories (``plan``: a
    :class:`~dpmic_dask.release.plan.ReleasePlan` whose ``private_categories`` is
    set; ``frame`` has its columns in axis numbers, the private ones as candidate
    codes). One precheck; one pass over every column of the release; every check
    of the release at the worst case; the one charge; then the choice and the
    release on a prepaid part of the charge."""
    from dpmic_dask.privacy.accounting import PrepaidLedger

    step: PrivateCategoriesPlan = plan.private_categories
    request = plan.request
    backend = backend_for(frame)
    precheck_budget(ledger, dataset, step.total)
    private = tuple(step.axes)
    codes = {c: a.codes for c, a in step.axes.items()}
    hist, rows, missing = backend.reduce(
        frame, request.columns,
        partial(_first_pass, columns=request.columns, private=private, codes=codes,
                fill=request.fill),
        _add, split_every=request.split_every, progress=progress)
    if request.fill is None and np.asarray(missing).any():
        names = [c for c, m in zip(request.columns, missing) if m]
        raise MissingValuesError(
            f"column(s) {names} contain missing values; pass nulls='fill' or "
            "nulls='category' (nothing was charged)")
    if rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    # every check of the release at the worst case (every candidate kept)
    if plan.selection is None:
        check_plan(request, int(rows))
        inner_label = request.mechanism.label
    else:
        check_selected_plan(request, plan.selection, int(rows))
        inner_label = f"{plan.selection.selection.description} and the chosen values"
    charge = charge_budget(step.total, ledger, dataset,
                           description=f"{request.label or 'pairwise'} ({step.describe()})",
                           mechanism=f"categories-lap+{request.mechanism.label}",
                           columns=request.columns)
    chosen, remaps, report = {}, {}, {}
    for name, counts in zip(private, hist):
        axis = step.axes[name]
        kept, scale, threshold = select_candidates(counts[:len(axis.categories)],
                                                   step.eps_column)
        final, remap = chosen_axis(axis, kept)
        chosen[name], remaps[name] = final, remap
        report[name] = final.categories
    axes = {**dict(request.categories), **chosen}
    bounds = tuple(axes[c].bounds if c in axes else b
                   for c, b in zip(request.columns, request.bounds))
    inner = dataclasses.replace(request, categories=tuple(axes.items()), bounds=bounds)
    prepaid = PrepaidLedger(charge, step.release_part)
    with after_charge(charge):
        if plan.selection is None:
            result = release_pairs(recode(frame, remaps), inner, ledger=prepaid,
                                   dataset=dataset, progress=progress)
        else:
            result = release_selected(recode(frame, remaps), inner, plan.selection,
                                      ledger=prepaid, dataset=dataset, progress=progress)
    total = step.total
    parts = (f"{step.describe()} (noise scale {scale:.4g} on each candidate's count, "
             f"threshold {threshold}); release: {inner_label} with "
             f"{step.release_part.describe()}")
    privacy = dataclasses.replace(
        result.privacy, epsilon=total.epsilon, delta=total.delta, rho=total.rho, parts=parts,
        release_cost=step.release_part,
        statement=privacy_statement(total, max(1, len(result.pairs)),
                                    detail=f"categories and release together; {parts}"))
    return dataclasses.replace(result, privacy=privacy, private_categories=report)


__all__ = ["CATEGORIES_SHARE", "PrivateCategoriesPlan", "chosen_axis", "plan_private_categories",
           "recode", "run_private_categories", "split_private"]
