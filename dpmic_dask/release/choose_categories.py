"""Categories chosen privately, on their own: one charge, to reuse as public lists.

:func:`private_categories` is to categories what
:func:`~dpmic_dask.release.private_bounds.private_bounds` is to bounds: it
releases only the chosen lists, so a later release (for example one with
private bounds, which cannot be combined with a choice of categories in one
release) takes them as public. The mechanisms and their proofs are the ones of
:mod:`dpmic_dask.release.private_categories` (``docs/privacy.md``, "Private
categories" and "Categories from the values that occur"): the whole budget goes
to the choice, split over the columns. It is a staged release run by
:func:`~dpmic_dask.release.executor.run_charged`: every check and the pass,
the bill, then the noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.checks import refuse_missing
from dpmic_dask.config import Engine, engine
from dpmic_dask.errors import BoundsWarning, InvalidParameterError, shown, user_stacklevel
from dpmic_dask.privacy.conversion import check_delta, check_epsilon
from dpmic_dask.privacy.costs import column_epsilon
from dpmic_dask.privacy.partition_selection import (
    bad_event_threshold,
    candidate_scale,
    select_candidates,
    select_sorted,
)
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.category_counts import add_passes, first_pass, occurring
from dpmic_dask.release.charge import Bill, precheck_budget
from dpmic_dask.release.executor import Staged, run_charged
from dpmic_dask.release.htmlreport import categories_view, write_page
from dpmic_dask.release.htmlreport.views import plain_value
from dpmic_dask.release.private_categories import (
    MAX_KEPT,
    UNKNOWN,
    choice_total,
    split_private,
)
from dpmic_dask.stats.categories import CategoryAxis, _check_list, column_kind


@dataclass(frozen=True)
class CategoriesRelease:
    """Privately chosen category lists (``categories``: column -> tuple), with
    what the choice spent and how (one line per column in ``details``)."""

    categories: dict
    epsilon: float
    delta: float
    rho: float | None
    approx_delta: float
    eps_column: float
    statement: str
    charge_id: str
    details: dict = field(default_factory=dict)

    def report(self) -> str:
        """The chosen lists and the guarantee, in words."""
        lines = [f"{name}: {[plain_value(v) for v in kept]} ({self.details[name]})"
                 for name, kept in self.categories.items()]
        none = self.none_kept()
        if none:
            lines.append(none)
        return "\n".join([*lines, self.statement, f"Ledger charge: {self.charge_id}."])

    def none_kept(self) -> str:
        """The sentence about columns with no category kept, or ``""``."""
        empty = [name for name, kept in self.categories.items() if not kept]
        if not empty:
            return ""
        return (f"No category kept for {empty}: none passed its threshold, so such a list "
                "cannot be reused (every value would be 'other'); a larger eps, more rows or "
                "public categories would keep some.")

    def to_html(self, path):
        """Write one self-contained HTML page of the chosen lists to ``path`` (the
        privacy statement and a table of the lists); returns the path."""
        return write_page(categories_view(self), path)


def _columns(schema, columns, nulls: str) -> dict:
    """Each column's candidate tuple or :data:`UNKNOWN`, checked against the schema."""
    if not isinstance(columns, dict) or not columns:
        raise InvalidParameterError(
            "columns must be a dict {column: 'private' or [candidates]}")
    given = {c: ({"private": v} if isinstance(v, (list, tuple)) else v)
             for c, v in columns.items()}
    public, private = split_private(given)
    if public:
        raise InvalidParameterError(
            f"column(s) {list(public)}: give 'private' or a list of candidates")
    dtypes = dict(schema.items())
    for name, listed in private.items():
        if name not in dtypes:
            raise InvalidParameterError(f"column {name!r} is not in the frame")
        if column_kind(dtypes[name]) == "other":  # no candidate could ever be counted
            raise InvalidParameterError(
                f"column {name!r} (dtype {dtypes[name]}) cannot have its categories chosen: "
                "only string, category and integer columns can")
        if listed is not UNKNOWN:
            private[name] = _check_list(name, dtypes[name], listed)
    if nulls not in ("raise", "category"):
        raise InvalidParameterError("nulls must be 'raise' or 'category'")
    return private


def private_categories(frame, eps, *, columns: dict, delta: float = 0.0, nulls: str = "raise",
                       ledger=None, dataset=None, progress=None) -> CategoriesRelease:
    """Choose each column's categories privately, in one charge of ``(eps, delta)``.

    ``columns``: column -> a list of public candidates (pure DP: the candidates
    whose noisy count clears a threshold), or ``"private"`` (the values that
    occur: needs ``delta > 0``; a value held by one row is kept with probability
    at most ``delta / 2``, which the ledger counts). ``nulls="category"`` keeps a
    missing value out of the choice (it is its own category in a release);
    ``"raise"`` refuses nulls. Every check runs before the charge; after it,
    only noise and thresholds. The result's lists are ready to pass as public
    ``categories`` to a later release. ``progress`` overrides
    :mod:`dpmic_dask.config` for this call (``split_every`` is the configuration's).
    """
    knobs = engine(progress=progress)
    return run_charged(_chosen(frame, eps, columns, delta, nulls, ledger, dataset, knobs),
                       ledger=ledger, dataset=dataset)


def _chosen(frame, eps, columns, delta, nulls, ledger, dataset,
            knobs: Engine) -> Staged[CategoriesRelease]:
    """:func:`private_categories`, staged: the checks, the precheck and the pass,
    the bill, then the noisy choice."""
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    backend = backend_for(frame)
    private = _columns(backend.schema(frame), columns, nulls)
    names = tuple(private)
    unknown = tuple(c for c in names if private[c] is UNKNOWN)
    total, bad_event = choice_total(eps, delta, unknown)
    eps_column = column_epsilon(total, len(names))
    scale = candidate_scale(eps_column)  # a scale that cannot be used is refused now
    threshold = bad_event_threshold(eps_column, bad_event) if unknown else 0
    precheck_budget(ledger, dataset, total)
    axes = {c: CategoryAxis(c, private[c], nulls == "category") for c in names
            if c not in unknown}
    coded = frame[list(names)]
    for name, axis in axes.items():  # candidates as codes, the others raw
        meta = pd.Series([], dtype=np.float64, name=name)
        coded = coded.assign(**{name: backend.map_partitions(coded[name], axis.encode_series,
                                                             meta=meta)})
    nullable = unknown if nulls == "category" else ()
    hist, _, missing = backend_for(coded).reduce(
        coded, list(names),
        partial(first_pass, columns=list(names), private=names,
                codes={c: a.codes for c, a in axes.items()}, fill=None, unknown=unknown,
                null_category=nullable),
        add_passes, split_every=knobs.split_every, progress=knobs.progress)
    refuse_missing(names, missing, "pass nulls='category'")
    found = {c: occurring(c, h) for c, h in zip(names, hist) if c in unknown}
    charge = yield Bill(total, f"private categories for {list(names)}",
                        "categories-lap" + ("-sel" if unknown else ""), names)
    chosen, details = {}, {}
    for name, counts in zip(names, hist):
        if name in unknown:
            values, exact = found[name]
            chosen[name] = tuple(select_sorted(values, exact, eps_column, threshold,
                                               limit=MAX_KEPT))
            details[name] = (f"from the values that occur: noise scale {scale:.4g}, "
                             f"threshold {threshold}, at most {MAX_KEPT} kept")
        else:
            axis = axes[name]
            kept, _, t = select_candidates(counts[:len(axis.categories)], eps_column)
            chosen[name] = tuple(c for c, k in zip(axis.categories, kept) if k)
            details[name] = f"from {len(axis.categories)} candidates: noise scale {scale:.4g}, " \
                            f"threshold {t}"
    statement = privacy_statement(total, 1, detail=f"epsilon {eps_column:.4g} per column over "
                                                   f"{len(names)} column(s)")
    released = CategoriesRelease(chosen, total.epsilon, total.delta, total.rho,
                                 total.approx_delta, eps_column, statement, charge.charge_id,
                                 details)
    if released.none_kept():  # post-processing of the released lists; never raised
        shown(released.none_kept(), BoundsWarning, stacklevel=user_stacklevel())
    return released


__all__ = ["CategoriesRelease", "private_categories"]
