"""The per-unit step's cost: a release per customer against the same release per
row, with the bounding filtered in place (``bound_contributions``) and with the
kept rows shuffled (``bound_contributions_shuffled``, the former way), in one run
on one LocalCluster.

The table is ``per_person.build_frame``'s transactions (``--rows`` over
``--customers``, generated on the workers; one customer owns 1% of the rows), the
release ``pairwise`` of three columns, ``max_rows_per_unit = 8``. Printed for each:
the fastest of ``--repeat`` runs (taken in turns) after a warm-up, the ratio to the row-level
release, the work (task-seconds, the least of the runs: less moved by other load
on shared cores than the wall time) and the peak resident memory of any worker (sampled every 0.2 s).
Targets (issue #37): per customer <= 2x row level, peak worker memory <= 1 GiB.

Run: ``python benchmarks/unit_bounding.py [--rows 1e7] [--customers 1e6] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from per_person import PeakMemory, build_frame  # noqa: E402
from scaling import stream_figures  # noqa: E402

BOUNDS = {"amount": (-0.5, 1.5), "basket": (-1.0, 1.0), "hour": (0.0, 24.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--customers", type=float, default=1e6)
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cases", default="row,filtered,shuffled")
    args = parser.parse_args()
    from dask.distributed import Client, LocalCluster, get_task_stream

    import dpmic_dask  # noqa: F401  (the accessor)
    from dpmic_dask.release import bounding, steps

    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit="4GiB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        frame, rows = build_frame(int(args.rows), int(args.customers), args.partitions)
        print(f"table: {rows:,} rows over {int(args.customers):,} customers, "
              f"{args.partitions} partitions, {args.workers} workers x 1 thread", flush=True)
        ways = {"filtered": bounding.bound_contributions,
                "shuffled": bounding.bound_contributions_shuffled}

        def release(case):
            if case == "row":
                return frame.dpmic.pairwise(1.0, bounds=BOUNDS, progress=False)
            steps.bound_contributions = ways[case]
            return frame.dpmic.pairwise(1.0, bounds=BOUNDS, privacy_unit="customer_id",
                                        max_rows_per_unit=8, progress=False)

        cases = args.cases.split(",")
        for case in cases:
            release(case)  # warm-up
        times = {case: float("inf") for case in cases}
        peaks = dict.fromkeys(cases, 0)
        work = {case: float("inf") for case in cases}
        for _ in range(max(1, args.repeat)):  # round robin: load changes hit every case
            for case in cases:
                with PeakMemory(client) as mem, get_task_stream(client) as stream:
                    start = time.perf_counter()
                    release(case)
                    seconds = time.perf_counter() - start
                times[case] = min(times[case], seconds)
                peaks[case] = max(peaks[case], mem.peak)
                spent = stream_figures(stream.data, seconds)[0]
                work[case] = min(work[case], spent)
                print(f"  {case}: {seconds:.1f} s, work {spent:.1f} task-s", flush=True)
        for case in cases:
            ratio = f"  {times[case] / times['row']:.2f}x row level" if "row" in times else ""
            print(f"{case:9s} {times[case]:7.1f} s{ratio}  work {work[case]:6.1f} task-s  "
                  f"peak worker memory {peaks[case] / 2**30:.2f} GiB", flush=True)
        steps.bound_contributions = bounding.bound_contributions


if __name__ == "__main__":
    main()
