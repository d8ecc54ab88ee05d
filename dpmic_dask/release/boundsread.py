"""Bounds read off the noisy histograms of the bounds step (post-processing of
released counts, after the one charge; never refuses): the first pass's reading,
the refining pass's grid and reading, the columns left unresolved, and the
columns whose bounds cannot vouch for their coverage
(:func:`bounds_release`). :mod:`dpmic_dask.release.histograms` plans the
passes and counts them.
"""

from __future__ import annotations

import numpy as np

from dpmic_dask.checks import check_bounds
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.bounds import (
    BETA,
    FIRST_PASS_SHARE,
    TINY,
    BoundsGrid,
    bounds_from_noisy,
    first_bounds_missed,
    holds_the_mass,
    noise_threshold,
    outer_rows,
    reach_past_a_miss,
    refined_from_noisy,
    refinement_grid,
    sum_threshold,
)
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.release.boundsresult import (
    ONE_BIN_SCALES,
    ONE_BIN_SHARE,
    ONE_BIN_WIDTH,
    PILED_DOMAIN,
    WIDE_DOMAIN,
    BoundsRelease,
)
from dpmic_dask.release.histograms import BoundsPlan, show_warning

#: A column's released bounds are said to be unable to vouch for their coverage
#: (``BoundsRelease.unseen``) when one bin beyond them could hold more than this
#: share of the rows (or three times the tail ``coverage`` leaves out, when that
#: is more) without its noisy count being read as mass.
TAIL_SHARE = 0.03


def tail_share(coverage: float) -> float:
    """The share of the rows one unseen bin beyond a column's bounds may hold
    before the bounds are said not to vouch for their coverage."""
    return max(TAIL_SHARE, 3.0 * (1.0 - coverage))


def tail_limit(scale: float, size: int | None) -> float:
    """Rows one bin beyond a column's released bounds may hold without being seen,
    for the reading the bounds came from (a function of the plan and the released
    path only): for a reading of a whole grid of ``size`` bins, the threshold a
    bin must pass anywhere on it (``scale ln(size / (2 beta))``: nearer bins are
    seen from ``scale ln(EXTEND_TESTS / (2 beta))`` on); for bounds inside a
    refining pass's grid (``size`` None), what its end bins -- which hold every
    value beyond the first bounds -- may hold unseen by :func:`first_bounds_missed`
    (``sum_threshold(scale, 1, beta / 2)``). A tail spread thinly over many bins,
    each under this, can still go unseen (``docs/privacy.md``)."""
    if size is None:
        return sum_threshold(scale, 1, BETA / 2.0)
    return noise_threshold(scale, size)


def _held(noisy: np.ndarray, grid: BoundsGrid, found, coverage: float, scale: float) -> bool:
    """Whether bounds ``found`` (edges of ``grid``) hold the mass of the noisy
    histogram ``noisy`` on ``grid`` (:func:`holds_the_mass`; post-processing)."""
    edges = grid.edges()
    lo_bin = int(np.clip(np.searchsorted(edges, found[0], side="right") - 1, 0, grid.size - 1))
    hi_bin = int(np.clip(np.searchsorted(edges, found[1], side="left") - 1, lo_bin,
                         grid.size - 1))
    return holds_the_mass(noisy, lo_bin, hi_bin, coverage, scale)


def piled_end(noisy: np.ndarray, grid: BoundsGrid, scale: float) -> tuple[str, float] | None:
    """``("lower" | "upper", share)`` when an end bin of the domain grid holds at
    least :data:`PILED_DOMAIN` of the noisy total and more than the noise alone
    puts in any bin of the grid (post-processing of released counts); the larger
    end if both do, else ``None``."""
    total = float(np.sum(noisy))
    if total <= 0:
        return None
    floor = noise_threshold(scale, grid.size)
    ends = [(float(noisy[k]), side) for k, side in ((0, "lower"), (-1, "upper"))
            if noisy[k] >= PILED_DOMAIN * total and noisy[k] > floor]
    if not ends:
        return None
    count, side = max(ends)
    return side, count / total


def _valid_bounds(found, name) -> tuple[float, float] | None:
    """``found`` if it is valid public bounds (finite, ``lo < hi``, finite width)
    that reach beyond the log grid's zero bin and its subnormal neighbours.

    Bounds of about ``+-3e-308`` say only that the mass the noisy histogram could
    place sits at zero (a binary or zero-inflated column whose other values no
    bin's noisy count could show): every value but zero would clamp to an edge
    of an interval of no use, and the column's pairs would read about 0. Such a
    column is unresolved instead (its fallback, a warning, a line in the report).
    """
    if found is None:
        return None
    if max(abs(found[0]), abs(found[1])) < TINY:
        return None
    try:
        return check_bounds(found, name)
    except InvalidParameterError:
        return None


def bounds_release(counts, rows, plan: BoundsPlan, charge_id: str,
                   recount, kinds=None) -> BoundsRelease:
    """The released bounds (never refuses: a column whose bounds cannot be read
    off falls back and is marked unresolved). The first pass's noisy histograms
    and the bounds read off them; for the columns whose first bounds are far from
    zero relative to their width, a grid inside those bounds (a function of
    released values only), ``recount(grids)`` -- the refining pass over the data --
    its noisy histograms and the bounds read off them. ``kinds``: each column's
    kind, for printing its bounds and domain in it."""
    found: dict[str, tuple[float, float] | None] = {}
    fine: dict[str, BoundsGrid] = {}
    restart: set[str] = set()
    refining = any(plan.refines)
    scale = plan.scale(plan.eps_first if refining else plan.eps_column)
    first_noisy: dict[str, tuple[np.ndarray, float]] = {}
    limit: dict[str, float] = {}  # rows a bin beyond the bounds may hold unseen
    infinite: dict[str, float] = {}  # noisy rows at +-inf: no bound is read there
    piled: dict[str, tuple[str, float]] = {}  # an end of the domain holding a pile
    one_bin: dict[str, float] = {}  # a refining pass with its rows in one bin
    # every column's first histogram, drawn at once per share (one long vector
    # draws on every core); each column's noise is independent of the others'
    drawn: dict[int, tuple[np.ndarray, float]] = {}
    for twice in (False, True):
        which = [i for i, t in enumerate(plan.refines) if bool(t) is twice]
        if which:
            noisy_rows, scale_c = plan.draw([counts[i] for i in which],
                                            plan.eps_first if twice else plan.eps_column)
            drawn.update((i, (r, scale_c)) for i, r in zip(which, noisy_rows))
    for i, (grid, cov, c, twice) in enumerate(zip(plan.grids, plan.coverages, plan.columns,
                                                  plan.refines)):
        noisy, scale_c = drawn[i]
        found[c] = _valid_bounds(bounds_from_noisy(noisy, grid, cov, scale_c), c)
        if grid.domain is None:  # rows at +-inf (or past 3e307), clamped to the bounds
            beyond = outer_rows(noisy, scale_c)
            if beyond:
                infinite[c] = beyond
        else:  # rows piled at an end of the domain: it may be too narrow
            end = piled_end(noisy, grid, scale_c)
            if end is not None:
                piled[c] = end
        limit[c] = tail_limit(scale_c, grid.size)
        if not twice:
            continue
        first_noisy[c] = (noisy, scale_c)  # kept for the second reading's confirmation
        # the second pass's grid, from the first pass's released bounds only: equal
        # bins inside them when they are far from zero relative to their width,
        # else the first grid again (read with the larger share)
        inner = refinement_grid(found[c], grid)
        if inner is not None:
            fine[c] = inner
        else:
            fine[c] = grid
            restart.add(c)
    second = recount(fine)
    refined = []
    # only scales the plan checked before the charge are computed here
    scale2 = plan.scale(plan.eps_second) if refining else None
    if second:
        second_noisy, scale2 = plan.draw([second[c] for c in fine], plan.eps_second)
        for (c, grid), row in zip(fine.items(), second_noisy):
            cov = plan.coverages[plan.columns.index(c)]
            if c in restart:
                # the first pass, on the same grid with independent noise, confirms
                # the second's isolated groups of bins (a lone noisy bin far from
                # the data is not a bound)
                again = _valid_bounds(bounds_from_noisy(row, grid, cov, scale2,
                                                        confirm=first_noisy[c]), c)
                limit[c] = tail_limit(scale2, grid.size)
                if again is None:  # the first pass's reading, confirmed the same way
                    noisy1, scale1 = first_noisy[c]
                    again = _valid_bounds(bounds_from_noisy(noisy1, grid, cov, scale1,
                                                            confirm=(row, scale2)), c)
                    limit[c] = tail_limit(scale1, grid.size)
                    if again is not None and grid.domain is not None and \
                            not _held(row, grid, again, cov, scale2):
                        # the second pass, with less noise, sees the mass outside
                        # them: a lone spike read off the first pass, the data
                        # around it too thin to pass there
                        again = None
                found[c] = again
                continue
            # the bounds stand inside the refining grid, whose end bins say whether
            # the first bounds missed data (or reach past a miss)
            limit[c] = tail_limit(scale2, None)
            if first_bounds_missed(row, cov, scale2):
                # the refining pass saw the data beyond the first bounds: neither
                # they nor bounds inside them stand; the side that missed reaches
                # to zero or the domain's edge, or the column is unresolved
                first = found[c]
                found[c] = None if first is None else _valid_bounds(
                    reach_past_a_miss(first, plan.grids[plan.columns.index(c)], row, cov,
                                      scale2), c)
                continue
            better = _valid_bounds(refined_from_noisy(row, grid, cov, scale2), c)
            if better is not None:
                found[c] = better
                refined.append(c)
                # post-processing of the refining counts and the released bounds: one
                # bin holding most rows, and bounds (read at the coverage) a few bins wide
                total, top = float(np.sum(row)), float(np.max(row))
                lo, hi = grid.domain if grid.domain is not None else (0.0, 0.0)
                if total >= ONE_BIN_SCALES * scale2 and top >= ONE_BIN_SHARE * total and \
                        better[1] - better[0] <= ONE_BIN_WIDTH * (hi - lo) / grid.size:
                    one_bin[c] = top / total
    unresolved = tuple(c for c in plan.columns if found[c] is None)
    fallback = {c: g.domain or (-1.0, 1.0) for c, g in zip(plan.columns, plan.grids)}
    if unresolved:
        show_warning(f"no private bounds could be found for column(s) {list(unresolved)} "
              "at this budget and row count: they fall back to their domain, or "
              "(-1, 1) without one; choose bounds for them yourself")
    bounds: dict[str, tuple[float, float]] = {
        c: (b if b is not None else fallback[c]) for c, b in found.items()}
    # post-processing of the released path and the public row count: bounds whose
    # coverage the noise cannot vouch for (a tail bin larger than TAIL_SHARE of the
    # rows may lie beyond them unseen)
    coverages = dict(zip(plan.columns, plan.coverages))
    unseen = {c: limit[c] for c in plan.columns
              if c not in unresolved and rows and limit[c] > tail_share(coverages[c]) * rows}
    domains = {c: g.domain for c, g in zip(plan.columns, plan.grids) if g.domain is not None}
    # post-processing of released bounds: how much of a public domain they use
    use = {c: (bounds[c][1] - bounds[c][0]) / (d[1] - d[0]) for c, d in domains.items()
           if c not in unresolved}
    wide = [c for c, u in use.items() if u < WIDE_DOMAIN and c not in piled]
    if wide:
        show_warning(f"the public domain of column(s) {wide} is far wider than the data "
              f"(the released bounds use less than {WIDE_DOMAIN:.0%} of it): bounds "
              "that wide waste the grid; use the released bounds or tighter ones")
    release = BoundsRelease(bounds=bounds, epsilon=plan.eps, epsilon_per_column=plan.eps_column,
                            coverage=plan.coverages[0] if len(set(plan.coverages)) == 1
                            else coverages,
                            noise_scale=scale, rows=rows,
                            domain=domains or None, unresolved=unresolved, charge_id=charge_id,
                            seeded=not active_sampler().secure, refined=tuple(refined),
                            refine_noise_scale=scale2, first_pass_share=FIRST_PASS_SHARE,
                            domain_use=use, unseen=unseen,
                            infinite=infinite, piled=piled, one_bin=one_bin,
                            kinds={c: k for c, k in (kinds or {}).items() if k},
                            privacy_unit=plan.unit[0] if plan.unit is not None else None,
                            max_rows_per_unit=plan.unit[1] if plan.unit is not None else None)
    if unseen:  # said after the charge, as the report says it
        show_warning(release.tail_note())
    if release.infinite:
        show_warning(release.infinite_note())
    if release.piled:
        show_warning(release.piled_note())
    if release.one_bin:
        show_warning(release.one_bin_note())
    return release
