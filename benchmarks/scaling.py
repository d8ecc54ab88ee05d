"""Scaling over workers: the tall, wide and per-unit releases on LocalClusters of
1, 2, 4, ..., N workers (one thread each, worker processes), with their
contenders in the same run.

* **tall**: ``--tall-rows`` x 10 float64 columns in Parquet (default 10^7 rows,
  20 files): ``pairwise`` against ``ddf.corr()`` and a fresh I/O floor (every
  value read once and summed, under a new task name each time);
* **wide**: ``--wide`` columns x rows in Parquet (default 150 x 10^5):
  ``pairwise`` against ``corr``;
* **per unit**: ``--unit-rows`` transactions over ``--customers`` customers
  (default 10^7 over 10^6, generated on the workers): ``pairwise`` per customer
  (``max_rows_per_unit=8``) against the same release per row.

For each case and worker count it prints the seconds (the faster of
``--repeat`` runs after a warm-up), the speed-up and efficiency against the
fewest workers measured (``T_w0 * w0 / (T_w * w)``), and from Dask's task stream
of the measured run: the work (task-seconds), the longest task and the driver-only
time (wall time not covered by any task). Targets (issue: scale-out) are printed
for the largest N at 16 workers: tall and wide efficiency >= 0.6, wide <= 1.5x
``corr``; at every N: tall <= 2x the I/O floor; at 2 workers: per customer <= 2x per row.

``--lean`` runs each contender only at the worker counts where a target reads
it (tall: the I/O floor at every count, ``corr`` never; wide: ``corr`` at the
largest count of 16 or more; per unit: per row at 2 workers), for a machine
lent for minutes. Each line also gives the peak resident memory of the
largest worker since its cluster started.

Run: ``python benchmarks/scaling.py [--workers 1,2] [--cases tall,wide,unit]``;
on a 16-core machine ``--workers 1,2,4,8,16``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pairwise import io_floor  # noqa: E402
from per_person import build_frame  # noqa: E402
from workers import peak_rss_bytes  # noqa: E402

FLOAT_BOUNDS = (-4.0, 4.0)


def write_parquet(root: Path, columns: int, rows: int, files: int) -> Path:
    """``rows`` x ``columns`` float64 (half of them related to one latent) in
    ``files`` Parquet files, once (benchmark data, not noise)."""
    target = root / f"scaling-{columns}x{rows}-{files}"
    if (target / "_done").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    per = -(-rows // files)
    for k in range(files):
        size = min(per, rows - k * per)
        gen = np.random.default_rng([columns, k])
        base = gen.random(size)
        data = {f"c{i:03d}": (np.sin((i % 7 + 1) * 3 * base) + 0.3 * gen.normal(size=size)
                              if i % 2 == 0 else gen.normal(size=size))
                for i in range(columns)}
        pd.DataFrame(data).to_parquet(target / f"part-{k:05d}.parquet", index=False)
    (target / "_done").touch()
    return target


def stream_figures(stream: list[dict], wall: float) -> tuple[float, float, float]:
    """(task-seconds of work, the longest task, driver-only seconds) of a task
    stream (``distributed.get_task_stream``)."""
    spans = []
    for task in stream:
        for part in task.get("startstops", ()):
            if part.get("action") == "compute":
                spans.append((part["start"], part["stop"]))
    if not spans:
        return 0.0, 0.0, wall
    work = sum(b - a for a, b in spans)
    longest = max(b - a for a, b in spans)
    spans.sort()
    covered, (lo, hi) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > hi:
            covered += hi - lo
            lo, hi = a, b
        else:
            hi = max(hi, b)
    covered += hi - lo
    return work, longest, max(0.0, wall - covered)


def timed(client, fn, repeat: int, timeline: Path | None = None
          ) -> tuple[float, tuple[float, float, float]]:
    """The faster of ``repeat`` runs of ``fn`` (after one warm-up) and its task stream
    (written to ``timeline`` as CSV when given: one line per task)."""
    from distributed import get_task_stream

    fn()
    best, figures = float("inf"), (0.0, 0.0, 0.0)
    for _ in range(max(1, repeat)):
        with get_task_stream(client) as ts:
            start, clock = time.perf_counter(), time.time()
            fn()
            wall = time.perf_counter() - start
        if wall < best:
            best, figures = wall, stream_figures(ts.data, wall)
            if timeline is not None:
                write_timeline(timeline, ts.data, clock)
    return best, figures


def write_timeline(path: Path, stream: list[dict], clock: float) -> None:
    """``task prefix, worker, what, start, stop`` (seconds from the run's start) of
    every part of every task of a task stream."""
    lines = ["task,worker,what,start,stop"]
    for task in stream:
        prefix = str(task.get("key", "?")).split(",")[0].strip("('\"").rsplit("-", 1)[0]
        for part in task.get("startstops", ()):
            lines.append(f"{prefix},{task.get('worker', '?')},{part.get('action')},"
                         f"{part['start'] - clock:.4f},{part['stop'] - clock:.4f}")
    path.write_text("\n".join(lines) + "\n")


def contenders(case: str, args, paths: dict) -> dict:
    """name -> function, the first being the release whose scaling is the target."""
    import dask.dataframe as dd

    import dpmic_dask  # noqa: F401  (registers .dpmic)

    # "none": every release without the check of public bounds, so per row and per
    # customer do the same work (per unit "auto" never checks); "auto": the default
    check = None if args.bounds_check == "none" else args.bounds_check
    if case in ("tall", "wide"):
        path = paths[case]
        ddf = dd.read_parquet(str(path))
        bounds = {c: FLOAT_BOUNDS for c in ddf.columns}
        out = {"pairwise": lambda: ddf.dpmic.pairwise(1.0, bounds=bounds, progress=False,
                                                      bounds_check=check),
               "corr": lambda: ddf.corr().compute()}
        if case == "tall":
            out["I/O floor"] = lambda: io_floor(path)
        return out
    frame, _ = build_frame(args.unit_rows, args.customers, args.unit_partitions)
    bounds = {"amount": (-0.5, 1.5), "basket": (-1.0, 1.0), "hour": (0.0, 24.0)}
    columns = list(bounds)
    return {"per customer": lambda: frame.dpmic.pairwise(
                1.0, bounds=bounds, columns=columns, privacy_unit="customer_id",
                max_rows_per_unit=8, progress=False, bounds_check=check),
            "per row": lambda: frame.dpmic.pairwise(1.0, bounds=bounds, columns=columns,
                                                    progress=False, bounds_check=check)}


def wanted(case: str, name: str, w: int, top: int) -> bool:
    """Whether a target reads contender ``name`` of ``case`` at ``w`` workers
    (``--lean``; the first contender of a case is always run)."""
    if case == "tall":
        return name == "I/O floor"
    if case == "wide":
        return w == top and top >= 16
    return w == 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2,4,8,16")
    parser.add_argument("--cases", default="tall,wide,unit")
    parser.add_argument("--tall-rows", type=int, default=10_000_000)
    parser.add_argument("--tall-files", type=int, default=20)
    parser.add_argument("--wide", default="150x100000", help="columns x rows")
    parser.add_argument("--unit-rows", type=int, default=10_000_000)
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--unit-partitions", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bounds-check", default="none", choices=("none", "auto"),
                        help="the releases' bounds_check (default none: no check)")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpmic-bench"))
    parser.add_argument("--timeline", type=Path, default=None,
                        help="a folder for each measured run's task stream, as CSV")
    parser.add_argument("--lean", action="store_true",
                        help="each contender only where a target reads it")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    workers = [int(w) for w in args.workers.split(",") if w]
    cases = [c for c in args.cases.split(",") if c]
    wide_cols, wide_rows = (int(v) for v in args.wide.split("x"))
    paths = {}
    if "tall" in cases:
        paths["tall"] = write_parquet(args.data_dir, 10, args.tall_rows, args.tall_files)
    if "wide" in cases:
        paths["wide"] = write_parquet(args.data_dir, wide_cols, wide_rows,
                                      max(1, wide_rows // 25_000))
    results: dict = {}
    for w in workers:
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            for case in cases:
                for k, (name, fn) in enumerate(contenders(case, args, paths).items()):
                    if args.lean and k and not wanted(case, name, w, workers[-1]):
                        continue
                    where = None
                    if args.timeline is not None:
                        args.timeline.mkdir(parents=True, exist_ok=True)
                        where = args.timeline / f"{case}-{name.replace(' ', '').replace('/', '')}-{w}.csv"
                    seconds, figures = timed(client, fn, args.repeat, where)
                    results[(case, name, w)] = (seconds, *figures)
                    work, longest, driver = figures
                    peak = max(client.run(peak_rss_bytes).values()) / 2**20
                    print(f"{case:5s} {name:13s} {w:3d} workers {seconds:8.2f} s  work "
                          f"{work:8.1f} task-s  longest {longest:6.2f} s  driver-only "
                          f"{driver:6.2f} s  peak worker {peak:6.0f} MiB", flush=True)
    print()
    base_w = workers[0]
    checks = []
    for case in cases:
        # in the order first run (the release whose scaling is the target first)
        names = list(dict.fromkeys(n for (c, n, _) in results if c == case))
        if not names:
            continue
        print(f"{case}: " + ", ".join(names))
        other = names[1] if len(names) > 1 else names[0]
        print(f"  {'workers':>7} " + " ".join(f"{n[:13]:>13}" for n in names)
              + f" {'speed-up':>9} {'efficiency':>10} {'vs ' + other[:10]:>13}")
        first = names[0]
        for w in workers:
            t = {n: results.get((case, n, w), (float("nan"),))[0] for n in names}
            speed = results[(case, first, base_w)][0] / t[first]
            eff = speed * base_w / w
            print(f"  {w:>7} " + " ".join(f"{t[n]:>13.2f}" for n in names)
                  + f" {speed:>9.2f} {eff:>10.2f} {t[first] / t[other]:>12.2f}x")
        top = workers[-1]
        if case in ("tall", "wide") and top >= 16:
            speed = results[(case, first, base_w)][0] / results[(case, first, top)][0]
            eff = speed * base_w / top
            checks.append((f"{case} efficiency at {top} workers >= 0.6", eff, eff >= 0.6))
        # the scale-out issue's ratio targets, at the worker counts they name
        at = {w: {n: results.get((case, n, w), (float("nan"),))[0] for n in names}
              for w in workers}
        if case == "wide" and top >= 16:
            ratio = at[top][first] / at[top]["corr"]
            checks.append((f"wide pairwise <= 1.5x corr at {top} workers", ratio, ratio <= 1.5))
        if case == "tall" and "I/O floor" in names:
            for w in workers:
                ratio = at[w][first] / at[w]["I/O floor"]
                checks.append((f"tall pairwise <= 2x the I/O floor at {w} workers", ratio,
                               ratio <= 2.0))
        if case == "unit" and 2 in workers:
            ratio = at[2][first] / at[2][names[1]]
            checks.append(("per customer <= 2x per row at 2 workers", ratio, ratio <= 2.0))
    for name, value, ok in checks:
        print(f"{'met ' if ok else 'MISS'} {name}: {value:.2f}")


if __name__ == "__main__":
    main()
