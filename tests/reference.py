"""Slow, obviously-correct reference implementations used only by the tests.

Written independently of the package: plain Python integers and loops, brute-force
enumeration instead of dynamic programming.
"""

from __future__ import annotations

import math
from itertools import combinations


def position(value: float, lo: float, hi: float) -> int:
    u = (value - lo) / (hi - lo)
    u = min(max(u, 0.0), 1.0)
    return min(math.floor(u * 2**32), 2**32 - 1)


def equal_bin(value: float, lo: float, hi: float, n_bins: int) -> int:
    return (position(value, lo, hi) * n_bins) >> 32


def mutual_information(matrix) -> float:
    """I(A) in bits for a list-of-lists count matrix."""
    n = sum(sum(row) for row in matrix)
    if n == 0:
        return 0.0
    rows = [sum(row) for row in matrix]
    cols = [sum(col) for col in zip(*matrix)]
    total = 0.0
    for i, row in enumerate(matrix):
        for j, a in enumerate(row):
            if a:
                total += (a / n) * math.log2(a * n / (rows[i] * cols[j]))
    return total


def merge_rows(matrix, cuts):
    """Sum the rows of ``matrix`` between consecutive cut points."""
    edges = [0, *cuts, len(matrix)]
    return [
        [sum(matrix[r][j] for r in range(a, b)) for j in range(len(matrix[0]))]
        for a, b in zip(edges, edges[1:])
    ]


def best_grouping(matrix, k: int) -> float:
    """Max MI over all partitions of the rows into k contiguous non-empty groups."""
    return max(
        mutual_information(merge_rows(matrix, cuts))
        for cuts in combinations(range(1, len(matrix)), k - 1)
    )


def micr(xs, ys, x_bounds, y_bounds, B: int, c: int) -> float:
    """MICr by brute force over every grouping of every master grid."""
    best = 0.0
    for fixed, other, fb, ob, _fixed_is_x in (
        (xs, ys, x_bounds, y_bounds, True),
        (ys, xs, y_bounds, x_bounds, False),
    ):
        for l in range(2, B // 2 + 1):
            kmax = l if l <= math.sqrt(B) else B // l
            rows = c * kmax
            matrix = [[0] * l for _ in range(rows)]
            for f, o in zip(fixed, other):
                matrix[equal_bin(o, *ob, rows)][equal_bin(f, *fb, l)] += 1
            for k in range(2, kmax + 1):
                best = max(best, best_grouping(matrix, k) / math.log2(min(k, l)))
    return min(best, 1.0)


def equipartition_with_ties(sorted_values, n_parts):
    """Reshef et al.'s greedy equal-mass cut that keeps tied values together."""
    n = len(sorted_values)
    labels = [0] * n
    target = n / n_parts
    i, size, part = 0, 0, 0
    while i < n:
        j = i
        while j < n and sorted_values[j] == sorted_values[i]:
            j += 1
        run = j - i
        if size and abs(size + run - target) >= abs(size - target):
            part += 1
            size = 0
            target = (n - i) / (n_parts - part)
        for t in range(i, j):
            labels[t] = part
        size += run
        i = j
    return labels, part + 1


def mice(xs, ys, alpha: float, c: int) -> float:
    """MICe following minepy's mic_e procedure, with brute-force grouping."""
    n = len(xs)
    B = max(n ** alpha, 4.0) if alpha <= 1 else min(alpha, n)
    best = 0.0
    for fixed, other, fixed_is_x in ((xs, ys, True), (ys, xs, False)):
        order_f = sorted(range(n), key=lambda i: fixed[i])
        order_o = sorted(range(n), key=lambda i: other[i])
        for q in range(2, max(int(B // 2), 2) + 1):
            cap = int(B // q)
            lab_sorted, q_real = equipartition_with_ties([fixed[i] for i in order_f], q)
            label = {i: lab_sorted[t] for t, i in enumerate(order_f)}
            # clumps along the other axis
            keys = [label[i] for i in order_o]
            t, fresh = 0, -1
            while t < n:
                u = t
                while u < n and other[order_o[u]] == other[order_o[t]]:
                    u += 1
                if len({label[order_o[v]] for v in range(t, u)}) > 1:
                    for v in range(t, u):
                        keys[v] = fresh
                    fresh -= 1
                t = u
            clump = [0] * n
            for v in range(1, n):
                clump[v] = clump[v - 1] + (keys[v] != keys[v - 1])
            n_rows = clump[-1] + 1
            rows = clump
            if n_rows > max(int(c * cap), 1):
                rows, n_rows = equipartition_with_ties([float(v) for v in clump], max(int(c * cap), 1))
            matrix = [[0] * q_real for _ in range(n_rows)]
            for v, i in enumerate(order_o):
                matrix[rows[v]][label[i]] += 1
            for k in range(2, min(q, cap) + 1):
                if not fixed_is_x and k == q:
                    continue
                if q_real < 2:
                    continue
                kk = min(k, n_rows)
                info = best_grouping(matrix, kk) if kk >= 2 else 0.0
                best = max(best, info / math.log2(min(k, q_real)))
    return min(best, 1.0)
