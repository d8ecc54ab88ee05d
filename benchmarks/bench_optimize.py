"""Micro-benchmark of the per-pair work: MICr from a pair's master counts.

Times the package's kernel against the previous one (kept in
``tests/legacy_optimize.py``) on the same count vectors, interleaved and by
process CPU time (best of ``--repeat``), so other load on the machine
disturbs the ratio less than it disturbs wall-clock time. Cases, at ``B = 200,
c = 5`` unless given:

* ``wide``: pairs of the first 12 columns of ``bench_wide.py``'s table (a third
  of the columns a noisy function of one hidden variable, the rest standard
  normal; public bounds (-4, 4), so tails and narrow columns leave empty master
  rows and fixed columns);
* ``dense``: uniform columns on their exact bounds (0, 1), half of the pairs
  related, so almost no master row or column is empty.

It also prints the kernel with the ``v log2 v`` table switched off, to show what
each part buys, and checks that every MICr equals the previous kernel's to 1e-12.

Run: ``python benchmarks/bench_optimize.py [--rows 100000] [--B 200] [--c 5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from dpmic_dask.stats.characteristic import _layout, micr_from_counts  # noqa: E402
from dpmic_dask.stats.counting import pair_counts  # noqa: E402
from dpmic_dask.stats.grids import master_grid_family  # noqa: E402
from dpmic_dask.stats.kernels.optimize import family_max  # noqa: E402
from tests.legacy_optimize import legacy_micr_from_counts  # noqa: E402


def wide_pairs(rows: int, family):
    # Benchmark data only (bench_wide.py's generator); no privacy noise is drawn.
    gen = np.random.default_rng([150, rows, 0])
    hidden = gen.random(rows)
    cols = [np.sin((c % 7 + 1) * 3 * hidden) + 0.3 * gen.normal(size=rows) if c % 3 == 0
            else gen.normal(size=rows) for c in range(12)]
    return [pair_counts(cols[i], cols[j], (-4.0, 4.0), (-4.0, 4.0), family)
            for i in range(12) for j in range(i + 1, 12)]


def dense_pairs(rows: int, family):
    gen = np.random.default_rng(5)
    out = []
    for p in range(24):
        x = gen.random(rows)
        y = gen.random(rows) if p % 2 else (np.sin(6 * x) + 1) / 2 * 0.8 + 0.2 * gen.random(rows)
        out.append(pair_counts(x, y, (0.0, 1.0), (0.0, 1.0), family))
    return out


def cpu_per_pair(fn, counts, family) -> float:
    start = time.process_time()
    for c in counts:
        fn(c, family)
    return (time.process_time() - start) / len(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--B", type=int, default=200)
    parser.add_argument("--c", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    family = master_grid_family(args.B, args.c)
    no_table = np.zeros(0)

    def without_table(counts, fam):
        offsets, rows, fixed, kmax = _layout(fam)
        return family_max(np.ascontiguousarray(counts, np.int64), offsets, rows, fixed, kmax,
                          no_table)

    contenders = {"previous kernel": legacy_micr_from_counts, "kernel": micr_from_counts,
                  "kernel, no x log x table": without_table}
    print(f"MICr from master counts, B={args.B}, c={args.c}, {args.rows:,} rows "
          f"(CPU ms per pair, best of {args.repeat})")
    for name, make in (("wide", wide_pairs), ("dense", dense_pairs)):
        counts = make(args.rows, family)
        for fn in contenders.values():
            fn(counts[0], family)  # compile
        best = {key: float("inf") for key in contenders}
        for _ in range(args.repeat):
            for key, fn in contenders.items():
                best[key] = min(best[key], cpu_per_pair(fn, counts, family))
        worst = max(abs(legacy_micr_from_counts(c, family) - micr_from_counts(c, family))
                    for c in counts)
        base = best["previous kernel"]
        cells = "  ".join(f"{key} {t * 1e3:6.2f} ms ({base / t:4.2f}x)" for key, t in best.items())
        print(f"{name:>6} ({len(counts)} pairs): {cells}  max |MICr diff| {worst:.1e}", flush=True)


if __name__ == "__main__":
    main()
