"""Runs on real Dask clusters: a LocalCluster of worker processes, and a cluster
started from the command line (``dask scheduler`` + two ``dask worker``) on
127.0.0.1, one of whose workers is killed mid-job."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

from dpmic_dask.backends import count_frame
from dpmic_dask.stats.countspec import CountSpec
from dpmic_dask.stats.grids import master_grid_family
from tests.integration.frames import BOUNDS, generated, make_part

COLS = ("a", "b", "c", "d")


def spec(B=20, c=3):
    return CountSpec(COLS, tuple(BOUNDS[k] for k in COLS), None, master_grid_family(B, c))


def expected_counts(partitions, rows, s):
    import pandas as pd

    whole = pd.concat([make_part(i, rows) for i in range(partitions)], ignore_index=True)
    return count_frame(whole, s)


def test_local_cluster_with_processes():
    s = spec()
    want = expected_counts(6, 3000, s)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        ddf = generated(6, 3000)
        got = count_frame(ddf, s, split_every=3, progress=False)
        np.testing.assert_array_equal(got.counts, want.counts)
        result = ddf.dpmic.pairwise(1.0, bounds={k: BOUNDS[k] for k in COLS}, B=20, c=3,
                                    progress=False)
        exact = ddf.dpmic.pairwise_nonprivate(bounds={k: BOUNDS[k] for k in COLS}, B=20, c=3,
                                              progress=False)
    assert result.n == 18_000 and len(result.values) == 6
    assert np.max(np.abs(np.array(result.values) - exact.micr.to_numpy())) < 30 * result.noise_scale


def test_cli_cluster_survives_a_killed_worker(cli_cluster, tmp_path):
    import psutil

    client, workers = cli_cluster
    s = spec()
    partitions, rows = 24, 2000
    want = expected_counts(partitions, rows, s)

    # a normal release on the real cluster
    ddf = generated(8, rows)
    result = ddf.dpmic.pairwise(1.0, bounds={k: BOUNDS[k] for k in COLS}, B=20, c=3,
                                progress=False)
    assert result.n == 8 * rows

    # the worker process that builds partition 5 dies from inside that task
    marker = tmp_path / "killed.pid"
    worker_processes = {child.pid for proc in workers
                        for child in psutil.Process(proc.pid).children(recursive=True)}
    frame = generated(partitions, rows, die_at=5, marker=str(marker))
    got = count_frame(frame, s, split_every=4, progress=False)
    killed = int(marker.read_text())
    assert killed in worker_processes  # a real worker held the task when it died
    assert not psutil.pid_exists(killed) or psutil.Process(killed).status() == "zombie"
    assert got.rows == want.rows
    np.testing.assert_array_equal(got.counts, want.counts)


PLANTED = "SECRET-alice"

#: An analyst's notebook session: their own LocalCluster of worker processes
#: (whose stderr is this script's stderr) and Client, a CSV with a text cell in
#: a numeric column; the script prints the raised error and every log the
#: cluster kept.
USER_SESSION = textwrap.dedent("""
    import sys

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dpmic_dask as dm

    if __name__ == "__main__":
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            ddf = dd.read_csv(sys.argv[1], blocksize=None, dtype={"a": float})
            try:
                ddf.dpmic.pairwise(1.0, bounds={"a": (0, 100), "b": (0, 10)}, B=8, c=2,
                                   progress=False)
            except dm.DataReadError as exc:
                print("raised:", exc)
            print("worker logs:", client.get_worker_logs())
            print("scheduler logs:", client.get_scheduler_logs())
            print("plugins:", list(client.run_on_scheduler(
                lambda dask_scheduler: sorted(dask_scheduler.worker_plugins))))
""")


def test_a_users_own_local_cluster_never_logs_a_cell_value(tmp_path):
    frame = pd.DataFrame({"a": [str(i % 100) for i in range(400)], "b": [i % 10 for i in range(400)]})
    frame.loc[300, "a"] = PLANTED
    frame.to_csv(tmp_path / "cells.csv", index=False)
    (tmp_path / "session.py").write_text(USER_SESSION)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, str(tmp_path / "session.py"),
                           str(tmp_path / "cells.csv")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "raised: reading or counting column(s) ['a', 'b'] failed with ValueError" in output
    assert "Compute Failed" in output and "withheld" in output  # the failure was logged
    assert PLANTED not in output and "alice" not in output
    assert output.count("dpmic-redact-task-errors") >= 1


class _Restrictions(SchedulerPlugin):
    """A scheduler plugin keeping the worker restrictions each new graph brings."""

    name = "test-restrictions"

    def __init__(self):
        self.workers = {}

    def update_graph(self, scheduler, *, annotations=None, **kwargs):
        self.workers.update((annotations or {}).get("workers", {}))


def test_a_release_places_one_counting_task_on_each_worker(tmp_path):
    """On 4 worker processes of one thread: the release's 4 counting tasks are
    restricted to the 4 workers, each of its 8 Parquet files is read on the
    worker that counts it, and the values are those of one process."""
    gen = np.random.default_rng(5)  # test data only
    for f in range(8):
        part = pd.DataFrame(gen.normal(size=(2000, 6)), columns=list("abcdef"))
        part["b"] = np.cos(part["a"] * (f + 2))
        part.to_parquet(tmp_path / f"p{f}.parquet")
    bounds = {k: (-4.0, 4.0) for k in "abcdef"}
    whole = pd.concat([pd.read_parquet(tmp_path / f"p{f}.parquet") for f in range(8)],
                      ignore_index=True)
    exact = whole.dpmic.pairwise_nonprivate(bounds=bounds, B=60, c=5)
    seen = _Restrictions()
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        cluster.scheduler.add_plugin(seen)  # the scheduler runs in this process
        workers = sorted(cluster.scheduler.workers)
        got = dd.read_parquet(tmp_path).dpmic.pairwise_nonprivate(bounds=bounds, B=60, c=5,
                                                                   progress=False)
    pd.testing.assert_frame_equal(got, exact)
    counting = [w for k, w in seen.workers.items() if "count_binned_partitions" in str(k)]
    assert sorted(w for (w,) in counting) == workers
    reads = [w for k, w in seen.workers.items() if isinstance(k, tuple)]
    assert sorted(w for (w,) in reads) == sorted(workers * 2)
