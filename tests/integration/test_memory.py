"""Worker peak memory depends on the partition size and the per-task budget, not on
the number of rows (a counting task groups partitions up to ``task_memory``)."""

import pytest
from distributed import Client, LocalCluster

import dpmic_dask  # noqa: F401  (registers the .dpmic accessor)
from tests.integration.frames import BOUNDS, generated

COLS = ("a", "b", "c", "d")


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def worker_peak(partitions: int, rows: int) -> int:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ddf = generated(partitions, rows)
        ddf.dpmic.pairwise_nonprivate(bounds={k: BOUNDS[k] for k in COLS}, B=150, c=5,
                                      progress=False, task_memory=16 * 2**20)
        return max(client.run(peak_rss_bytes).values())


@pytest.mark.slow
def test_peak_memory_is_flat_in_rows():
    rows = 100_000
    small = worker_peak(4, rows)
    large = worker_peak(40, rows)  # 10x the rows, same partitions
    assert large <= 1.25 * small + 64 * 2**20, (small, large)
