"""Speed of the exact statistics core (issue: exact MIC statistics engine).

Prints two tables:

1. the full characteristic matrix of one pair *from its master counts*
   (OptimizeAxis on every master grid) for B in {40, 150, 400}, c in {1, 5};
   target: B=150, c=5 under 20 ms on one core;
2. in-memory ``micr`` on n = 10**6 rows, split into its stages, with the
   binning pass compared side by side with a plain memory copy of the column;
3. the cost per row and pair of counting into every master grid: the package's
   refinement histograms (two increments per row) against counting each master
   grid separately (a numba loop written here as the contender), for several B.

Run: ``python benchmarks/bench_statistics.py [--rows N] [--repeat R]``.
Numba is pinned to one thread so the numbers are per core.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

import dpmic_dask as dm  # noqa: E402
from dpmic_dask.stats.characteristic import characteristic_matrix  # noqa: E402
from dpmic_dask.stats.counting import bin_values, master_counts, pair_counts, refinement_histograms  # noqa: E402
from dpmic_dask.stats.grids import master_grid_family  # noqa: E402


def best_time(fn, repeat: int) -> float:
    fn()  # compile / warm caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def synthetic_pair(n: int):
    # Benchmark data only; no privacy noise is drawn anywhere in this script.
    gen = np.random.default_rng(12345)
    x = gen.random(n)
    y = np.sin(8 * x) + 0.3 * gen.normal(size=n)
    return x, y, (0.0, 1.0), (-2.0, 2.0)


def characteristic_table(repeat: int) -> None:
    x, y, xb, yb = synthetic_pair(100_000)
    print("Characteristic matrix from master counts (one pair, one core)")
    print(f"{'B':>5} {'c':>3} {'grids':>6} {'cells':>8} {'time ms':>9}  target")
    for B in (40, 150, 400):
        for c in (1, 5):
            family = master_grid_family(B, c)
            counts = pair_counts(x, y, xb, yb, family)
            t = best_time(lambda: characteristic_matrix(counts, family), repeat)
            target = "< 20 ms" + (" ok" if t < 0.020 else " MISSED") if (B, c) == (150, 5) else ""
            print(f"{B:>5} {c:>3} {family.n_grids:>6} {family.n_cells:>8} {t * 1e3:>9.2f}  {target}")


def in_memory_table(n: int, repeat: int) -> None:
    x, y, xb, yb = synthetic_pair(n)
    family = master_grid_family(150, 5)
    bx, by = bin_values(x, xb, family), bin_values(y, yb, family)
    hist = refinement_histograms(bx, by, family)
    stages = [
        ("memory copy of one column (floor)", lambda: np.copy(x)),
        ("bin one column (both refinements)", lambda: bin_values(x, xb, family)),
        ("count refinement histograms", lambda: refinement_histograms(bx, by, family)),
        ("read off all master grids", lambda: master_counts(hist, family)),
        ("micr end to end (B=150, c=5)",
         lambda: dm.micr(x, y, x_bounds=xb, y_bounds=yb, B=150, c=5)),
    ]
    print(f"\nIn-memory micr on n = {n:,} rows, B=150, c=5 (one core)")
    print(f"{'stage':<36} {'time ms':>9} {'M values/s':>11}")
    timings = {}
    for name, fn in stages:
        t = best_time(fn, repeat)
        timings[name] = t
        print(f"{name:<36} {t * 1e3:>9.2f} {n / t / 1e6:>11.1f}")
    ratio = timings["bin one column (both refinements)"] / timings["memory copy of one column (floor)"]
    print(f"binning / memory copy ratio: {ratio:.1f}x")


@njit(cache=True)
def count_each_grid(xpos, ypos, fixed_x, rows_y, offsets, out):
    """Contender: for every row, bin it into every master grid and count there."""
    for i in range(xpos.shape[0]):
        for g in range(offsets.shape[0]):
            col = (xpos[i] * fixed_x[g]) >> 32
            row = (ypos[i] * rows_y[g]) >> 32
            out[offsets[g] + row * fixed_x[g] + col] += 1


def per_row_table(repeat: int) -> None:
    from dpmic_dask.stats.counting import positions

    small, large = 200_000, 2_000_000
    x, y, xb, yb = synthetic_pair(large)
    print("\nCounting one pair into every master grid (one core): fixed cost per call and")
    print(f"marginal cost per row, from timings at {small:,} and {large:,} rows")
    print(f"{'B':>5} {'c':>3} {'grids':>6} {'refinement: fixed ms':>21} {'ns/row':>7} "
          f"{'each grid: ns/row':>18} {'ratio':>7}")
    for B, c in ((40, 5), (150, 5), (400, 5)):
        family = master_grid_family(B, c)
        bx, by = bin_values(x, xb, family), bin_values(y, yb, family)
        cut = lambda b, m: type(b)(b.fixed[:m], b.rows[:m])  # noqa: E731
        t_small = best_time(lambda: refinement_histograms(cut(bx, small), cut(by, small), family), repeat)
        t_large = best_time(lambda: refinement_histograms(bx, by, family), repeat)
        per_row = (t_large - t_small) / (large - small)
        fixed_cost = t_small - per_row * small
        # contender: orientation "x" grids only (half the family), time doubled
        xg = [g for g in family.grids if g.orientation == "x"]
        offsets = np.cumsum([0] + [g.n_cells for g in xg[:-1]]).astype(np.int64)
        fixed = np.array([g.fixed_bins for g in xg], np.int64)
        rows = np.array([g.master_rows for g in xg], np.int64)
        xpos, ypos = positions(x[:small], xb), positions(y[:small], yb)
        out = np.zeros(int(offsets[-1] + xg[-1].n_cells), np.int64)
        t_each = 2 * best_time(lambda: count_each_grid(xpos, ypos, fixed, rows, offsets, out), repeat)
        print(f"{B:>5} {c:>3} {family.n_grids:>6} {fixed_cost * 1e3:>21.2f} {per_row * 1e9:>7.1f} "
              f"{t_each / small * 1e9:>18.1f} {t_each / small / per_row:>6.0f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    characteristic_table(args.repeat)
    in_memory_table(args.rows, args.repeat)
    per_row_table(args.repeat)


if __name__ == "__main__":
    main()
