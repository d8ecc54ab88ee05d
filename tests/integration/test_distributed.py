"""Runs on real Dask clusters: a LocalCluster of worker processes, and a cluster
started from the command line (``dask scheduler`` + two ``dask worker``) on
127.0.0.1, one of whose workers is killed mid-job."""


import numpy as np
from distributed import Client, LocalCluster

from dpmic_dask.backends import count_frame
from dpmic_dask.counting import CountSpec
from dpmic_dask.grids import master_grid_family
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
