"""From a skeleton and its separating sets to a CPDAG: v-structures, then Meek's
rules R1-R3 (post-processing: no data is read here).

The graph is a boolean matrix ``g``: ``g[i, j] and g[j, i]`` is an undirected edge
``i - j``; ``g[i, j] and not g[j, i]`` is ``i -> j``.
"""

from __future__ import annotations

import numpy as np


def v_structures(adjacency: np.ndarray, separating_sets: dict) -> list[tuple[int, int, int]]:
    """Unshielded triples ``i - k - j`` (``i < j`` not adjacent) with ``k`` outside
    the separating set of ``(i, j)``, in sorted order."""
    p = adjacency.shape[0]
    found = []
    for k in range(p):
        around = np.flatnonzero(adjacency[k])
        for a_index, i in enumerate(around):
            for j in around[a_index + 1:]:
                if adjacency[i, j]:
                    continue
                if k not in separating_sets.get((int(i), int(j)), ()):
                    found.append((int(i), k, int(j)))
    return sorted(found)


def orient_colliders(adjacency: np.ndarray, separating_sets: dict) -> np.ndarray:
    """Orient every v-structure ``i -> k <- j``, in sorted order, unless an earlier
    one already oriented ``k -> i`` or ``k -> j`` (existing colliders first, like
    causal-learn's ``uc_priority=2``): conflicting colliders never make an edge
    bidirected."""
    g = adjacency.copy()
    for i, k, j in v_structures(adjacency, separating_sets):
        if _directed(g, k, i) or _directed(g, k, j):
            continue
        g[k, i] = g[k, j] = False
    return g


def _undirected(g, a, b):
    return g[a, b] and g[b, a]


def _directed(g, a, b):
    return g[a, b] and not g[b, a]


def _adjacent(g, a, b):
    return g[a, b] or g[b, a]


def meek(g: np.ndarray) -> np.ndarray:
    """Apply Meek's rules R1-R3 until none applies (returns a new matrix)."""
    g = g.copy()
    p = g.shape[0]
    changed = True
    while changed:
        changed = False
        for a in range(p):
            for b in range(p):
                if a == b or not _undirected(g, a, b):
                    continue
                if _rule1(g, a, b, p) or _rule2(g, a, b, p) or _rule3(g, a, b, p):
                    g[b, a] = False  # a -> b
                    changed = True
    return g


def _rule1(g, a, b, p) -> bool:
    """R1: ``c -> a - b`` with ``c`` and ``b`` not adjacent gives ``a -> b``."""
    return any(_directed(g, c, a) and not _adjacent(g, c, b) and c != b for c in range(p))


def _rule2(g, a, b, p) -> bool:
    """R2: ``a -> c -> b`` and ``a - b`` gives ``a -> b``."""
    return any(_directed(g, a, c) and _directed(g, c, b) for c in range(p))


def _rule3(g, a, b, p) -> bool:
    """R3: ``a - c -> b`` and ``a - d -> b`` with ``c``, ``d`` not adjacent gives
    ``a -> b``."""
    cs = [c for c in range(p) if _undirected(g, a, c) and _directed(g, c, b)]
    return any(not _adjacent(g, c, d) for x, c in enumerate(cs) for d in cs[x + 1:])


def cpdag(adjacency: np.ndarray, separating_sets: dict) -> np.ndarray:
    """The CPDAG of a skeleton: v-structures, then Meek's rules."""
    return meek(orient_colliders(adjacency, separating_sets))
