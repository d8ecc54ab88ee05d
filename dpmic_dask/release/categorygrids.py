"""Public category lists against a grid family: which pairs with a categorical axis
fit the master grids of ``(B, c)`` (a function of the lists' lengths only), the
least default ``B`` that holds them all (:func:`category_B`), and the refusal,
before anything is read, of pairs that do not fit (:func:`check_category_grids`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.stats.grids import fixed_axis_sizes, master_grid_family, max_groups
from dpmic_dask.stats.statistics.categorical import check_pair_grid

if TYPE_CHECKING:
    from dpmic_dask.release.request import ReleaseRequest


def _category_shapes(request: ReleaseRequest) -> dict:
    """The pairs with a categorical axis by their axes' codings' code counts
    (``None``: an ordered axis): ``{(Kx, Ky): [(x axis, y axis, pair names)...]}``;
    whether a pair fits a grid family depends on these counts only."""
    axes = dict(request.categories)
    names = request.columns
    shapes: dict = {}
    for i, j in request.pairs:
        x, y = axes.get(names[i]), axes.get(names[j])
        if x is not None or y is not None:
            key = (None if x is None else x.codes, None if y is None else y.codes)
            shapes.setdefault(key, []).append((x, y, (names[i], names[j])))
    return shapes


def _fits(shapes: dict, family) -> list:
    """The entries of ``shapes`` whose pairs have no grid in ``family``."""
    out = []
    for members in shapes.values():
        x, y, _ = members[0]
        try:
            check_pair_grid(x, y, family)
        except InvalidParameterError:
            out.append(members)
    return out


def planned_shapes(request: ReleaseRequest) -> tuple:
    """One ``(x axis, y axis)`` of each shape of categorical pair: kept on the request
    when it is planned (public lists, or the worst case of a private choice), so
    that the default ``B`` after the charge is the one planned before it."""
    return tuple((members[0][0], members[0][1])
                 for members in _category_shapes(request).values())


def category_B(request: ReleaseRequest, B: int, c: int, ceiling: int) -> int:
    """The least ``B`` from ``B`` to ``ceiling`` whose grid family holds every
    categorical pair's table as planned (:func:`planned_shapes`: public lists, or
    the worst case of a private choice), else ``B``."""
    shapes = {k: [(x, y, ())] for k, (x, y) in
              enumerate(request.category_shapes or planned_shapes(request))}
    for larger in range(B, ceiling + 1):
        if not _fits(shapes, master_grid_family(larger, c)):
            return larger
    return B


def check_category_grids(request: ReleaseRequest, B: int, c: int) -> None:
    """Refuse, before the charge, pairs whose categorical axes do not fit the grid
    family of ``(B, c)`` (too many categories for ``B``): the first named, the
    others counted."""
    if not request.categories:
        return
    failing = _fits(_category_shapes(request), master_grid_family(B, c))
    if not failing:
        return
    # the hardest pair: the most codes on its two axes
    worst = max(failing, key=lambda members: math.prod(
        a.codes for a in members[0][:2] if a is not None))
    x, y, pair = worst[0]
    total = sum(len(members) for members in failing)
    codes = " and ".join(f"{a.name!r} {a.codes} codes" for a in (x, y) if a is not None)
    more = f" (and {total - 1} more pair{'s' if total != 2 else ''})" if total > 1 else ""
    if x is not None and y is not None:
        least = _least_B({(x.codes, y.codes): worst}, B, c)
    else:  # one categorical axis against an ordered one: bisect the families
        least = _least_one_axis(worst, B, c)
    need = f"B >= {least} at c = {c}" if least is not None else "fewer categories"
    raise InvalidParameterError(
        f"pair {list(pair)}{more} has too many categories for B = {B}, c = {c}: its "
        f"table ({codes}; the listed categories, the null category and 'other') "
        f"needs a master grid with that many bins on each axis ({need}); raise B, "
        "or list fewer categories (nothing was read or charged)")


#: The largest ``B`` a refusal of too many categories looks at to say what is needed.
MOST_B = 2000


def _least_one_axis(members: list, B: int, c: int) -> int | None:
    """The least ``B`` above ``B`` (up to :data:`MOST_B`) whose family holds the
    pairs of ``members`` (one categorical axis), by bisection over families."""
    def holds(b: int) -> bool:
        return not _fits({0: members}, master_grid_family(b, c))

    if not holds(MOST_B):
        return None
    lo, hi = B, MOST_B
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def _least_B(shapes: dict, B: int, c: int) -> int | None:
    """The least ``B`` above ``B`` (up to :data:`MOST_B`) with a master grid of at
    least ``Kx`` bins on one axis and ``Ky`` on the other for every two-axis table of
    ``shapes`` (a grid of ``l`` fixed bins has ``c kmax(l)`` master rows; from the
    grids' sizes alone, no family built); ``None`` beyond it or for one axis."""
    tables = [key for key in shapes if None not in key]
    if len(tables) != len(shapes):
        return None

    def holds(b: int) -> bool:
        sizes = [(l, c * max_groups(l, b)) for l in fixed_axis_sizes(b)]
        return all(any((f >= kx and r >= ky) or (f >= ky and r >= kx) for f, r in sizes)
                   for kx, ky in tables)

    return next((b for b in range(B + 1, MOST_B + 1) if holds(b)), None)


__all__ = ["MOST_B", "category_B", "check_category_grids", "planned_shapes"]
