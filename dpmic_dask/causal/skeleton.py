"""The PC-stable skeleton search, one counting pass per level.

Level ``d`` tests every edge ``(i, j)`` still present at the level's start against
every conditioning set of ``d`` columns drawn from ``adj(i) - {j}`` or from
``adj(j) - {i}``, with the adjacencies frozen at the level's start (PC-stable:
the order of the tests cannot change the result). So every table a level needs
is known before the level reads any data, and one pass counts them all.

An edge is removed when some set separates it. How that is decided is the
``decider``'s business: exactly (the smallest margin is negative) or privately
(a noisy smallest margin per edge, :mod:`dpmic_dask.causal.decide`). Removals are
applied at the end of the level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from dpmic_dask.causal.citests import (
    g_public_df,
    g_pvalue_causallearn,
    g_statistic,
    g_threshold,
    pearson_statistic,
    tau_threshold,
    tau_z,
)
from dpmic_dask.causal.tables import LevelTables, TableKey


@dataclass(frozen=True)
class LevelRecord:
    """What one level did (all of it a function of the released graph sequence)."""

    level: int
    edges_tested: int
    tests: int
    removed: int
    #: released tables: tests whose noise hides a small dependence (they separate
    #: nothing)
    blind: int = 0


@dataclass
class Skeleton:
    """The skeleton (a symmetric boolean adjacency matrix), the separating set of
    every removed pair (and, for exact decisions, the union of every set of its
    level that separated it) with the statistic of the test that removed it, and
    per kept edge the statistic of its last level's weakest test. Exact decisions
    keep the statistic itself (for released tables: the statistic of the noisy
    table); private per-test decisions the noisy value the decision used."""

    adjacency: np.ndarray
    separating_sets: dict = field(default_factory=dict)
    separating_union: dict = field(default_factory=dict)
    removed_statistic: dict = field(default_factory=dict)
    last_statistic: dict = field(default_factory=dict)
    levels: list = field(default_factory=list)


def levels_to_run(adjacency: np.ndarray, level: int) -> bool:
    """Whether PC goes on to ``level``: some column has ``level`` neighbours besides
    the other end of one of its edges (causal-learn's ``max_degree - 1 > depth``)."""
    return bool(adjacency.sum(axis=1).max(initial=0) >= level + 1)


def candidate_sets(adjacency: np.ndarray, i: int, j: int, level: int) -> list[tuple[int, ...]]:
    """Sorted distinct conditioning sets of size ``level`` for the edge ``(i, j)``."""
    sets: set[tuple[int, ...]] = set()
    for a, b in ((i, j), (j, i)):
        others = [k for k in np.flatnonzero(adjacency[a]) if k != b]
        sets.update(tuple(sorted(int(k) for k in s)) for s in combinations(others, level))
    return sorted(sets)


class Margins:
    """Margins ``statistic - threshold`` of a level's tests (negative: read as
    independent), and the statistics themselves, from the level's summed counts."""

    def __init__(self, layout: LevelTables, counts: np.ndarray, n: int, test: str,
                 alpha: float, causallearn: bool = False):
        self.margin: dict[TableKey, float] = {}
        self.statistic: dict[TableKey, float] = {}
        self.shape: dict[TableKey, tuple[int, int, int]] = {}
        #: added to a released noisy margin to give the statistic (tau: the one
        #: public threshold; G: 0, the G excess over its threshold is released)
        self.offset = tau_threshold(alpha) if test == "tau" else 0.0
        groups: dict[tuple[int, int, int], list[int]] = {}
        for t, key in enumerate(layout.keys):
            groups.setdefault(layout.shape(key), []).append(t)
        for shape, members in groups.items():
            stacked = np.stack([layout.table(counts, t) for t in members])
            if test == "tau":
                stats = np.abs(tau_z(stacked, n))
                thresholds = np.full(len(members), tau_threshold(alpha))
            else:
                stats = (pearson_statistic if test == "chisq" else g_statistic)(stacked)
                thresholds = np.full(len(members), g_threshold(alpha, g_public_df(shape)))
            for t, s, th in zip(members, stats, thresholds):
                key = layout.keys[t]
                self.statistic[key] = float(s)
                self.shape[key] = shape
                if causallearn:  # p > alpha is independence: margin alpha - p
                    self.margin[key] = alpha - g_pvalue_causallearn(layout.table(counts, t),
                                                                    test)
                else:
                    self.margin[key] = float(s - th)


def pc_skeleton(columns: int, *, count_level, decide, max_level: int, margins,
                proceed=None) -> Skeleton:
    """Run PC-stable on ``columns`` columns.

    ``count_level(keys) -> (layout, counts)`` counts every table of a level in one
    pass; ``margins(layout, counts) -> Margins``; ``decide(level, margins per
    edge)`` gives per edge ``(index of the separating set or None (keep), noisy
    smallest margin or None)``, the margins in the order of :func:`candidate_sets`. A kept edge's
    statistic is the noisy margin plus the test's offset, or (exact decisions)
    the statistic of its weakest test; a removed edge's, likewise, the noisy
    margin plus the offset, or the statistic of its separating set's test.
    ``proceed(level, keys) -> bool`` (optional) may end the search before a
    level's tables are counted.
    """
    adjacency = ~np.eye(columns, dtype=bool)
    result = Skeleton(adjacency)
    for level in range(max_level + 1):
        if not levels_to_run(adjacency, level):
            break
        edges = [(i, j) for i in range(columns) for j in range(i + 1, columns)
                 if adjacency[i, j]]
        tests = {}
        for i, j in edges:
            sets = candidate_sets(adjacency, i, j, level)
            if sets:
                tests[(i, j)] = [TableKey(i, j, s) for s in sets]
        keys = sorted({k for ks in tests.values() for k in ks},
                      key=lambda k: (k.x, k.y, k.cond))
        if not keys or (proceed is not None and not proceed(level, tuple(keys))):
            break
        layout, counts = count_level(tuple(keys))
        read = margins(layout, counts)
        removed = []
        edge_margins = [[read.margin[k] for k in ks] for ks in tests.values()]
        decisions = decide(level, edge_margins)
        for ((i, j), ks), values, (chosen, noisy) in zip(tests.items(), edge_margins,
                                                          decisions):
            deciding = ks[int(np.argmin(values))] if chosen is None else ks[chosen]
            value = read.statistic[deciding] if noisy is None else noisy + read.offset
            if chosen is None:
                result.last_statistic[(i, j)] = value
            else:
                removed.append((i, j))
                result.separating_sets[(i, j)] = ks[chosen].cond
                result.removed_statistic[(i, j)] = value
                result.separating_union[(i, j)] = tuple(sorted(
                    {c for k, m in zip(ks, values) if m < 0 for c in k.cond}))
        for i, j in removed:
            adjacency[i, j] = adjacency[j, i] = False
            result.last_statistic.pop((i, j), None)
        result.levels.append(LevelRecord(level, len(tests), len(keys), len(removed),
                                         getattr(read, "blind", 0)))
    return result


def exact_decision(level: int, margins_per_edge) -> list[tuple[int | None, None]]:
    """The non-private decisions: the first set with the smallest margin separates
    the pair when that margin is negative."""
    out: list[tuple[int | None, None]] = []
    for margins in margins_per_edge:
        best = int(np.argmin(margins))
        out.append(((best if margins[best] < 0 else None), None))
    return out
