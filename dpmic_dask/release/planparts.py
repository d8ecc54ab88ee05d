"""Pieces of a release plan that need no planner: which columns a check of
public bounds would look at, whether ``nulls="drop"`` is asked for and what it
needs, and a plan's requests given ``min_rows`` or their categorical codings
(:mod:`dpmic_dask.release.plan` builds the plan from them)."""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from collections.abc import Mapping

from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import InvalidParameterError, UnusedParameterWarning, user_stacklevel
from dpmic_dask.privacy.mechanisms import mechanism_supports
from dpmic_dask.privacy.mechanisms.registry import check_statistics
from dpmic_dask.release.categorygrids import check_category_grids, planned_shapes


def checkable_columns(schema, bounds, columns, categories, private, kinds) -> list:
    """The columns a check of public bounds would look at: those with public
    ``(lo, hi)`` bounds that are neither categorical nor boolean, and the
    categorical ones with public lists (none when every bound and list is
    private). Known from the arguments and the schema alone."""
    out = [name for name in (categories or ()) if name not in private
           and (columns is None or name in columns)]
    if not isinstance(bounds, Mapping):
        return out
    categorical = set(categories or ()) | set(private)
    dtypes = dict(schema.items()) if hasattr(schema, "items") else {}
    for name, given in bounds.items():
        if isinstance(given, str) or name in categorical:
            continue
        if columns is not None and name not in columns:
            continue
        kind = (kinds or {}).get(name)
        if kind in ("bool", "boolean") or str(dtypes.get(name, "")) in ("bool", "boolean"):
            continue
        out.append(name)
    return out


def check_drop(nulls, fill, min_rows, mechanism, per_unit: bool = False) -> bool:
    """Whether ``nulls="drop"`` was asked for, after checking what it needs: a
    public ``min_rows`` (the kept row count is not public; noise is calibrated to
    this minimum, docs/privacy.md "Dropping rows with nulls"). Per unit the bounded
    row count is released privately anyway, so ``min_rows`` is not needed there
    (given, it is only checked)."""
    if nulls != "drop":
        if min_rows is not None:
            raise InvalidParameterError('min_rows applies to nulls="drop" only')
        return False
    if fill is not None:
        raise InvalidParameterError("fill is only used with nulls='fill'")
    if per_unit and min_rows is None:
        return True
    if per_unit:
        # checked, and said not to be used: the bounded row count is released
        warnings.warn("min_rows is not used per privacy unit: the kept rows' count is "
                      "released privately (the noise is calibrated to that noisy count's "
                      "public lower bound); leave it out", UnusedParameterWarning,
                      stacklevel=user_stacklevel())
    if isinstance(min_rows, bool) or not isinstance(min_rows, numbers.Integral) \
            or min_rows < MIN_ROWS:
        raise InvalidParameterError(
            f'nulls="drop" needs min_rows, a public minimum (an integer >= {MIN_ROWS}) of the '
            "rows left after dropping those with nulls, chosen without looking at the data")
    if not mechanism_supports(mechanism, "drop"):
        raise InvalidParameterError(f'mechanism {mechanism!r} does not support nulls="drop" '
                                    "(its noise is calibrated to the exact row count)")
    return True


def with_min_rows(planned, min_rows: int):
    """``planned`` with every request calibrated to ``min_rows`` rows."""
    request = dataclasses.replace(planned.request, min_rows=int(min_rows))
    bounds = planned.bounds
    if bounds is not None:
        bounds = dataclasses.replace(bounds, request=request)
    return dataclasses.replace(planned, request=request, bounds=bounds)


def refuse_companions_without_pairs(columns, categorical, statistics) -> None:
    """Kendall's tau is undefined where a pair has a categorical column (its
    ``tau_a`` is NaN): when every pair has one (at most one column is not
    categorical), its share of the budget would buy no value and double MIC's
    noise. Refused before anything is read; public: the columns, their lists."""
    if len(check_statistics(statistics)) < 2:
        return
    numeric = [c for c in columns if c not in categorical]
    if len(numeric) < 2:
        raise InvalidParameterError(
            "statistics=('mic', 'tau_a'): every pair has a categorical column, where "
            "Kendall's tau is undefined, so its half of the budget would buy nothing "
            "(nothing was charged); release ('mic',) alone")


def with_categories(planned, axes: dict):
    """``planned`` with every request knowing its categorical columns' codings
    (their pairs' statistic has a categorical axis, ``docs/statistics.md``)."""
    request = dataclasses.replace(planned.request, categories=tuple(axes.items()))
    request = dataclasses.replace(request, category_shapes=planned_shapes(request))
    if request.B is not None and request.c is not None:
        check_category_grids(request, int(request.B), request.c)  # before any read
    bounds = planned.bounds
    if bounds is not None:
        bounds = dataclasses.replace(bounds, request=request)
    return dataclasses.replace(planned, request=request, bounds=bounds)


__all__ = ["check_drop", "checkable_columns", "refuse_companions_without_pairs",
           "with_categories", "with_min_rows"]
