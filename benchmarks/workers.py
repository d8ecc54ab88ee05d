"""What the benchmarks measure on Dask workers (imported by the scripts beside it).

``client.run`` sends a function by reference: a LocalCluster's workers start with
the driver's ``sys.path``, on which this folder is when a script here runs.
"""


def peak_rss_bytes() -> int:
    """This process's peak resident memory (``VmHWM``), in bytes; 0 if unknown."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0
