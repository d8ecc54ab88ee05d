"""Table tests on released tables (``test="chisq"``, the default with categorical
columns): each PC level releases the joint tables its tests read, once, as one
noisy vector, and decides every test from them as post-processing.

Per level ``l`` (budget part ``l`` of ``level_shares``, equal by default):

1. the tests PC-stable needs at the level (every edge still present, every
   candidate set of ``l`` columns) read tables of ``(x, y, S)``; the distinct
   column sets ``{x, y} u S`` are the level's ``T`` joint tables (the tests of
   ``(x, y | z)``, ``(x, z | y)`` and ``(y, z | x)`` read one table). ``T`` is a
   function of the previous levels' released decisions only (public);
2. one pass counts the ``T`` joint tables (``l = 0``: the pass made before the
   charge), and every cell gets exact integer noise: discrete Gaussian of
   ``sigma = sqrt(2 T) / sqrt(2 rho_l)`` (zCDP) or discrete Laplace of scale
   ``2 T / eps_l`` (pure DP). Replacing one row moves one count down and one up
   in each joint table: the L2 sensitivity of the level's vector is
   ``sqrt(2 T)``, its L1 sensitivity ``2 T`` (``docs/privacy.md``, section 10);
3. every test is Pearson's chi-square on its noisy table with the noise's variance
   in each cell's denominator, on the rows, columns and strata its noise lets it
   see (:mod:`dpmic_dask.causal.noisychisq`); the edge goes when some set's p-value
   exceeds ``alpha`` (the first of the largest p-values names the separating set). No
   noise is drawn for a decision: they are post-processing.

Levels compose (adaptively): the whole is ``(eps, delta)`` as charged once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpmic_dask.causal.correlationsearch import refuse_missing_values
from dpmic_dask.causal.levelcount import counter, first_level
from dpmic_dask.causal.noisychisq import (
    NoisyChisqMargins,
    flat_columns,
    smallest_visible_effect,
    support_is_exact,
)
from dpmic_dask.causal.orient import cpdag
from dpmic_dask.causal.result import CausalGraph, CausalReport, said_flat
from dpmic_dask.causal.skeleton import exact_decision, pc_skeleton
from dpmic_dask.causal.tables import LevelTables, TableKey
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PrivacyCost, measure_for
from dpmic_dask.privacy.mechanisms.base import MAX_NOISE_UNITS
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.bounding import unit_label
from dpmic_dask.release.charge import Bill, warn_if_delta_large
from dpmic_dask.release.report import warn_noise_swamps_tests
from dpmic_dask.release.unitbase import unit_privacy_statement


def joint_sets(keys) -> tuple[tuple[int, ...], ...]:
    """The distinct column sets ``{x, y} u cond`` of ``keys``, each sorted, in order."""
    return tuple(sorted({tuple(sorted((k.x, k.y) + tuple(k.cond))) for k in keys}))


def canonical(columns: tuple[int, ...]) -> TableKey:
    """The key whose table is the joint table of ``columns`` (sorted)."""
    return TableKey(columns[0], columns[1], tuple(columns[2:]))


#: Noisy counts one level may release (about a minute of exact noise sampling on
#: one core, shared by every core): a level needing more ends the search, and the
#: report says so.
MAX_RELEASED_CELLS = 2**23


def level_cells(codings, sets) -> int:
    """The counts of the joint tables of ``sets`` (public)."""
    return sum(math.prod(codings[c].size for c in s) for s in sets)


def most_tables(p: int, level: int) -> int:
    """The most joint tables a level can release: ``C(p, level + 2)`` (public)."""
    return math.comb(p, level + 2)


@dataclass(frozen=True)
class TableBudget:
    """The one charge and its part per level (public quantities only)."""

    total: PrivacyCost
    parts: tuple[PrivacyCost, ...]
    #: 0: replace one row; ``k >= 1``: add or remove one unit of up to ``k`` rows
    k: int = 0

    @classmethod
    def plan(cls, eps: float, delta: float, level_shares, k: int = 0) -> TableBudget:
        measure = measure_for(delta)
        total = measure.total(eps, delta)
        return cls(total, tuple(measure.split(total, list(level_shares))), k)

    def scale(self, level: int, tables: int) -> float:
        """Noise scale (count units) of every cell when ``tables`` joint tables are
        released at ``level``: L1 sensitivity ``2 T``, L2 ``sqrt(2 T)`` (replace one
        row); per unit ``k T`` and ``k sqrt(T)`` (add or remove up to ``k`` rows)."""
        if self.k:
            return self.parts[level].noise_scale(self.k * tables,
                                                 self.k * math.sqrt(tables))
        return self.parts[level].noise_scale(2.0 * tables, math.sqrt(2.0 * tables))

    def check(self, p: int) -> None:
        """Refuse (before the charge) a budget whose noise could not be sampled at the
        most tables a level can release."""
        for level in range(len(self.parts)):
            if not self.scale(level, most_tables(p, level)) <= MAX_NOISE_UNITS:
                raise InvalidParameterError(
                    "the tables' noise is too large to sample; raise eps")


@dataclass
class LevelRelease:
    """What one level released: its joint column sets, their noisy counts (flat, in
    the canonical layout) and the noise scale and variance of every cell."""

    sets: tuple[tuple[int, ...], ...]
    layout: LevelTables
    noisy: np.ndarray
    scale: float
    variance: float
    index: dict = field(init=False, repr=False)

    def __post_init__(self):
        self.index = {s: t for t, s in enumerate(self.sets)}

    def joint(self, columns: tuple[int, ...]) -> np.ndarray:
        """The noisy joint table of ``columns`` (sorted), axes in that order."""
        sizes = [self.layout.codings[c].size for c in columns]
        # the canonical table's axes: cond (columns[2:]) most significant, then x, y
        flat = self.layout.table(self.noisy, self.index[columns])
        k = len(columns)
        return np.moveaxis(flat.reshape(sizes[2:] + sizes[:2]), [k - 2, k - 1], [0, 1])

    def table(self, key: TableKey) -> np.ndarray:
        """The noisy ``(strata, kx, ky)`` table of ``key``, read off its joint table."""
        columns = tuple(sorted((key.x, key.y) + tuple(key.cond)))
        joint = self.joint(columns)
        order = [columns.index(c) for c in tuple(key.cond) + (key.x, key.y)]
        sizes = self.layout.codings
        return np.transpose(joint, order).reshape(-1, sizes[key.x].size, sizes[key.y].size)


class ReleasedTables:
    """``count_level`` for :func:`~dpmic_dask.causal.skeleton.pc_skeleton` after the
    charge: each level's joint tables counted (``count(keys) -> (layout, counts)``;
    level 0's from the pass before the charge), noised once, and every test's table
    read off them. ``levels`` keeps what each level released."""

    def __init__(self, count, codings, budget: TableBudget, first):
        self.count, self.codings, self.budget = count, codings, budget
        self.pending = [first]
        self.levels: list[LevelRelease] = []

    def __call__(self, keys):
        level = len(self.levels)
        sets = joint_sets(keys)
        if self.pending:  # level 0: every pair (its canonical keys), counted before the charge
            layout, counts = self.pending.pop()
        else:
            layout, counts = self.count(tuple(canonical(s) for s in sets))
        scale = self.budget.scale(level, len(sets))
        law = self.budget.total.law
        noise = np.asarray(law.draw(scale, int(counts.size)), dtype=np.int64)
        released = LevelRelease(sets, layout, np.asarray(counts, dtype=np.int64) + noise,
                                scale, law.variance(scale))
        self.levels.append(released)
        wanted = LevelTables(self.codings, tuple(keys))
        out = np.concatenate([released.table(k).ravel() for k in keys])
        return wanted, out


def released_tables_graph(frame, request, eps, delta, level_shares, backend, split_every,
                          progress, label, units=None):
    """The private ``chisq`` release, staged: level 0's pass and every check, the
    bill of the whole budget, then per level one noisy vector of joint tables and
    PC's decisions on them (post-processing). ``units``: ``(unit, k)`` when
    ``frame`` holds at most ``k`` rows per unit (its row count is then private:
    nothing is refused or warned on it, and the report's rows are read off the
    released tables)."""
    passes: list[int] = []
    p = len(request.codings)
    budget = TableBudget.plan(eps, delta, level_shares, 0 if units is None else units[1])
    budget.check(p)
    # from the columns and their codings alone: refused before anything is read
    pairs = tuple(TableKey(i, j, ()) for i in range(p) for j in range(i + 1, p))
    first_cells = level_cells(request.codings, joint_sets(pairs))
    if first_cells > MAX_RELEASED_CELLS:
        raise InvalidParameterError(
            f"the pairs' tables would need {first_cells} noisy counts (more than "
            f"{MAX_RELEASED_CELLS}): use fewer columns or categories (nothing was read "
            "or charged)")
    n, first = first_level(frame, request, backend, split_every, progress, passes,
                           public=units is None)
    if units is None:
        warn_if_delta_large(delta, n)
        _warn_if_noisy(request, n, budget)  # public quantities only, before the charge
    per = "" if units is None else f" per {unit_label(units[0])}"  # as the copula's
    yield Bill(budget.total, label or f"causal graph of {p} columns{per}", "causal-pc-chisq",
               request.names)
    count = counter(frame, request, backend, split_every, progress, passes)

    def count_level(keys):
        layout, summed = count(keys)
        # checked by level 0's pass before the charge: only data changed since fails here
        refuse_missing_values(summed, request)
        return layout, summed.counts

    released = ReleasedTables(count_level, request.codings, budget, first)

    read: list[NoisyChisqMargins] = []

    def margins(layout, counts):
        read.append(NoisyChisqMargins(layout, counts, released.levels[-1].variance,
                                      request.alpha))
        return read[-1]

    ended: list[str] = []

    def proceed(level, keys):
        # a level none of whose tests could see a small dependence ends the search:
        # the next level's tables are larger and, being more, noisier; so does a
        # level whose tables would need more than MAX_RELEASED_CELLS counts (public:
        # the keys follow from released decisions)
        if level and not read[-1].saw:
            ended.append(f"levels {level}-{request.max_condition_size} not run: no test of "
                         f"level {level - 1} could see a small dependence (Cohen's w = 0.1) "
                         "through the noise; a larger eps, or delta > 0, narrows it")
            return False
        cells = level_cells(request.codings, joint_sets(keys))
        if level and cells > MAX_RELEASED_CELLS:  # level 0's was checked before the charge
            ended.append(f"levels {level}-{request.max_condition_size} not run: level "
                         f"{level}'s tables would need {cells} noisy counts (more than "
                         f"{MAX_RELEASED_CELLS}); fewer columns or categories, or a smaller "
                         "max_condition_size, lower it")
            return False
        return True

    skeleton = pc_skeleton(p, count_level=released, decide=exact_decision,
                           max_level=request.max_condition_size, margins=margins,
                           proceed=proceed)
    parts = tuple((f"level {level} tables ({len(r.sets)} joint "
                   f"table{'' if len(r.sets) == 1 else 's'}, noise on every count)",
                   budget.parts[level].describe(), r.scale)
                  for level, r in enumerate(released.levels))
    # every level is paid before the search starts, whether or not it runs: the
    # parts add up to the charge (a search that ends early spends the rest on nothing)
    parts += tuple((f"level {level} tables (not run: the search ended before it; paid "
                    "with the rest, before any noise)", budget.parts[level].describe(),
                    math.nan) for level in range(len(released.levels), len(budget.parts)))
    detail = (f"per level one release of the joint tables its tests read, "
              f"{len(budget.parts)} levels; every test is post-processing")
    statement = privacy_statement(budget.total, request.pairs, detail)
    unit_fields: dict = {}
    if units is not None:  # the released count: a pair table's noisy total
        n = max(0, int(released.levels[0].joint(released.levels[0].sets[0]).sum()))
        warn_if_delta_large(delta, n)  # after the charge: shown, never raised
        _warn_if_noisy(request, n, budget)  # likewise, on the released count
        statement = unit_privacy_statement(statement, units)
        unit_fields = {"unit": unit_label(units[0]), "max_rows_per_unit": units[1],
                       "rows_noisy": n}
    level0 = released.levels[0]
    shown = flat_columns({s: level0.joint(s) for s in level0.sets}, level0.variance)
    # noise too small to hide a row: a column with one category is separated
    separated = support_is_exact(level0.variance, max(c.size for c in request.codings))
    flat = said_flat(request.names, [c in shown for c in range(p)], "chisq", separated)
    report = CausalReport(
        True, "chisq", request.alpha, n, request.bins, request.max_condition_size,
        epsilon=budget.total.epsilon, delta=budget.total.delta, statement=statement,
        parts=parts, **unit_fields, noise_scale=level0.scale,
        smallest_visible=smallest_visible_effect(request.codings, n, level0.variance,
                                                 request.alpha),
        levels=tuple(skeleton.levels), passes=len(passes),
        ended=ended[0] if ended else "", flat=flat, flat_separated=separated)
    graph = cpdag(skeleton.adjacency, skeleton.separating_sets)
    tables = [{tuple(request.names[c] for c in s): r.joint(s) for s in r.sets}
              for r in released.levels]
    return CausalGraph(request.names, graph, dict(skeleton.separating_sets),
                       dict(skeleton.last_statistic), report,
                       {"tables": tables, "removed": dict(skeleton.removed_statistic)})


def _warn_if_noisy(request, n: int, budget: TableBudget) -> None:
    """A :class:`~dpmic_dask.errors.NoiseWarning` when level 0's noise (95%
    half-width) exceeds a quarter of the average count of the largest pair table:
    before the charge from public ``n``, the codings and the budget; per unit,
    after it, from the released row count (shown, never raised)."""
    sizes = sorted(c.size for c in request.codings)
    scale = budget.scale(0, request.pairs)
    warn_noise_swamps_tests(scale * budget.total.law.ci95, n / (sizes[-1] * sizes[-2]),
                            "this causal graph's released tables are noisy",
                            pure=budget.total.is_pure, noisy="one released count",
                            scale="the mean count of a cell of the largest pair table")


__all__ = ["LevelRelease", "ReleasedTables", "TableBudget", "canonical", "joint_sets",
           "most_tables", "released_tables_graph"]
