"""The same table in other file layouts: a release must not depend on how many
Parquet files hold the table (Dask joins a projection's files into fewer
partitions by how many columns it reads, and a plain ten-file table once failed
to release where the benchmarks' own layout ran).

Every benchmark that reads Parquet takes ``--layouts`` (default ``10,7``): after
its own run it rewrites its table into that many files (the same rows in the same
order, near-equal files) and times its release again on each, printing the
time against the benchmark's own layout. ``--layouts ""`` skips them.
"""

from __future__ import annotations

import time
from pathlib import Path

DEFAULT_LAYOUTS = "10,7"


def file_counts(text: str) -> list[int]:
    """``"10,7"`` -> ``[10, 7]`` (positive numbers of files)."""
    counts = [int(v) for v in text.split(",") if v.strip()]
    if any(c < 1 for c in counts):
        raise SystemExit("--layouts takes positive numbers of files, e.g. 10,7")
    return counts


def relayout(source: Path, files: int) -> Path:
    """``source`` (a folder of Parquet files) rewritten as ``files`` files, once."""
    import numpy as np
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    target = source.parent / f"{source.name}-files{files}"
    if (target / "_done").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    table = ds.dataset(str(source), format="parquet").to_table()
    cuts = np.linspace(0, table.num_rows, files + 1).astype(int)
    for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        pq.write_table(table.slice(lo, hi - lo), target / f"part-{k:05d}.parquet")
    (target / "_done").touch()
    return target


def time_layouts(source: Path, layouts: list[int], release, *, own_seconds: float,
                 cluster: dict, repeat: int = 1) -> list[str]:
    """Time ``release(ddf)`` on ``source`` rewritten in each of ``layouts`` (a fresh
    ``LocalCluster(**cluster)`` each, one warm-up run first); the printed lines."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    lines = []
    for files in layouts:
        path = relayout(source, files)
        with LocalCluster(**cluster) as local, Client(local):
            ddf = dd.read_parquet(str(path))
            release(ddf)  # warm-up: the workers' kernels, the file cache
            seconds = []
            for _ in range(max(1, repeat)):
                start = time.perf_counter()
                release(ddf)
                seconds.append(time.perf_counter() - start)
        best = min(seconds)
        lines.append(f"layout of {files} files: released in {best:.2f} s "
                     f"({best / own_seconds:.2f}x the benchmark's own layout)")
    return lines
