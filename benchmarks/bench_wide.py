"""Wide tables: time and peak worker memory as the number of pairs grows.

Each case gets a fresh ``LocalCluster(n_workers=2, threads_per_worker=1,
memory_limit="4GiB")`` and a Parquet table of float64 columns (a third related
to one hidden variable, the rest independent), and times, in the same run:

* ``ddf.dpmic.pairwise(eps=1, delta=1e-7, bounds=...)`` (delta well below 1/N) at the default ``B`` and
  ``task_memory`` (every pair released);
* ``ddf.corr()`` on the same table (Dask's own pairwise statistic).

``--top-pairs`` cases time ``ddf.dpmic.top_pairs(20, eps=1, delta=1e-7, ...)``
instead (screening grid ``"auto"``), each on a fresh cluster of its own.

It prints seconds, seconds per million pair-rows, the peak resident memory of
the busiest worker, and the targets of the wide-table issues: at 100 columns x
10**6 rows peak worker memory <= 2 GiB and time <= 180 s; peak memory within
1.3x across 10, 30 and 100 columns; time per pair-row at 100 columns <= 1.5x
that at 10 columns; pairwise / corr <= 1.0 at 150 and <= 1.2 at 300 columns x 10**5 rows
and <= 1.5 at 100 columns x 10**6 rows; peak worker memory <= 2 GiB in every
case.

Run: ``python benchmarks/bench_wide.py [--cases 10x1000000,30x1000000,100x1000000,
150x100000,300x100000] [--also 400x100000] [--top-pairs 300x100000,1000x100000]``.
Tables are generated once into ``--data-dir``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from layouts import DEFAULT_LAYOUTS, file_counts, time_layouts  # noqa: E402
from workers import peak_rss_bytes  # noqa: E402

ROWS_PER_FILE = 250_000
#: At least this many files, so that ``corr`` (one task per partition) can use
#: both workers on a small table too (one file made it run on one).
MIN_FILES = 4


def table_files(rows: int) -> int:
    return max(MIN_FILES, -(-rows // ROWS_PER_FILE))


def write_table(root: Path, columns: int, rows: int) -> Path:
    """Generate the benchmark table once (benchmark data, not noise)."""
    files = table_files(rows)
    target = root / f"wide-{columns}x{rows}-{files}files"
    if (target / "_done").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    per = -(-rows // files)
    for k, start in enumerate(range(0, rows, per)):
        size = min(per, rows - start)
        gen = np.random.default_rng([columns, rows, k])
        hidden = gen.random(size)
        data = {}
        for c in range(columns):
            if c % 3 == 0:
                data[f"c{c:03d}"] = np.sin((c % 7 + 1) * 3 * hidden) + 0.3 * gen.normal(size=size)
            else:
                data[f"c{c:03d}"] = gen.normal(size=size)
        pd.DataFrame(data).to_parquet(target / f"part-{k:05d}.parquet", index=False)
    (target / "_done").touch()
    return target


def measure(path: Path, columns: int, rows: int, top_pairs: bool = False) -> dict:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dpmic_dask  # noqa: F401  (registers .dpmic)

    names = [f"c{c:03d}" for c in range(columns)]
    bounds = {name: (-4.0, 4.0) for name in names}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="4GiB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ddf = dd.read_parquet(str(path))
        # warm up: imports and the numba kernels, on a small slice of two columns
        ddf[names[:2]].head(2000, compute=True).dpmic.pairwise(
            1.0, bounds={n: bounds[n] for n in names[:2]})
        start = time.perf_counter()
        if top_pairs:
            result = ddf.dpmic.top_pairs(20, 1.0, delta=1e-7, bounds=bounds, progress=False)
        else:
            result = ddf.dpmic.pairwise(1.0, delta=1e-7, bounds=bounds, progress=False)
        pairwise = time.perf_counter() - start
        peak = max(client.run(peak_rss_bytes).values()) / 2**20
        corr = float("nan")
        if not top_pairs:
            start = time.perf_counter()
            ddf.corr().compute()
            corr = time.perf_counter() - start
    pairs = columns * (columns - 1) // 2
    return {"columns": columns, "rows": rows, "pairs": pairs, "pairwise": pairwise,
            "corr": corr, "peak": peak, "per_pair_row": pairwise / (pairs * rows) * 1e6,
            "B": result.B, "mechanism": result.mechanism, "sigma": result.noise_scale,
            "top_pairs": top_pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases",
                        default="10x1000000,30x1000000,100x1000000,150x100000,300x100000")
    parser.add_argument("--also", default="", help="extra cases, e.g. 400x100000")
    parser.add_argument("--top-pairs", default="",
                        help="cases timed with top_pairs(20, ...), e.g. 300x100000,1000x100000")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpmic-bench"))
    parser.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                        help="the first case's table rewritten in these numbers of files, "
                             "pairwise timed on each (benchmarks/layouts.py)")
    args = parser.parse_args()
    parse = lambda text: [tuple(int(v) for v in case.split("x"))  # noqa: E731
                          for case in text.split(",") if case]
    cases = [(c, r, False) for c, r in parse(args.cases + "," + args.also)]
    cases += [(c, r, True) for c, r in parse(args.top_pairs)]
    rows_out = []
    for columns, rows, top in cases:
        path = write_table(args.data_dir, columns, rows)
        rows_out.append(measure(path, columns, rows, top))
        r = rows_out[-1]
        head = (f"{r['columns']:>4} cols x {r['rows']:>9,} rows ({r['pairs']:>7,} pairs, "
                f"B={r['B']}, {r['mechanism']}): ")
        if top:
            print(head + f"top_pairs(20) {r['pairwise']:7.1f} s, "
                  f"peak worker {r['peak']:6.0f} MiB", flush=True)
        else:
            print(head + f"pairwise {r['pairwise']:7.1f} s, corr {r['corr']:6.1f} s "
                  f"(pairwise / corr {r['pairwise'] / r['corr']:5.2f}), "
                  f"{r['per_pair_row']:.4f} s per M pair-rows, peak worker {r['peak']:6.0f} MiB",
                  flush=True)
    if cases and not cases[0][2]:
        columns, rows, _ = cases[0]
        bounds = {f"c{c:03d}": (-4.0, 4.0) for c in range(columns)}
        print(f"{columns} cols x {rows:,} rows, own layout: {table_files(rows)} files")
        for line in time_layouts(
                write_table(args.data_dir, columns, rows), file_counts(args.layouts),
                lambda ddf: ddf.dpmic.pairwise(1.0, delta=1e-7, bounds=bounds, progress=False),
                own_seconds=rows_out[0]["pairwise"],
                cluster=dict(n_workers=2, threads_per_worker=1, processes=True,
                             memory_limit="4GiB", dashboard_address=None)):
            print(line, flush=True)
    by = {(r["columns"], r["rows"]): r for r in rows_out if not r["top_pairs"]}
    print()
    checks = []
    if (100, 10**6) in by:
        r = by[(100, 10**6)]
        checks.append(("100 cols x 1e6: peak worker <= 2048 MiB", r["peak"], r["peak"] <= 2048))
        checks.append(("100 cols x 1e6: pairwise <= 180 s", r["pairwise"], r["pairwise"] <= 180))
    flat = [by[(c, 10**6)]["peak"] for c in (10, 30, 100) if (c, 10**6) in by]
    if len(flat) >= 2:
        ratio = max(flat) / min(flat)
        checks.append(("peak memory 10/30/100 cols within 1.3x", ratio, ratio <= 1.3))
    if (10, 10**6) in by and (100, 10**6) in by:
        ratio = by[(100, 10**6)]["per_pair_row"] / by[(10, 10**6)]["per_pair_row"]
        checks.append(("time per pair-row, 100 vs 10 cols <= 1.5x", ratio, ratio <= 1.5))
    for columns, rows, limit in ((150, 10**5, 1.0), (300, 10**5, 1.2), (100, 10**6, 1.5)):
        if (columns, rows) in by:
            r = by[(columns, rows)]
            ratio = r["pairwise"] / r["corr"]
            checks.append((f"{columns} cols x 1e{len(str(rows)) - 1}: pairwise / corr <= {limit:g}",
                           ratio, ratio <= limit))
    if rows_out:
        peak = max(r["peak"] for r in rows_out)
        checks.append(("every case: peak worker <= 2048 MiB", peak, peak <= 2048))
    for name, value, ok in checks:
        print(f"{name:<48} {value:10.2f}  {'ok' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
