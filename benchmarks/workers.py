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


def reset_peak_rss() -> bool:
    """Reset this process's peak resident memory to its current one (Linux: ``5`` to
    ``/proc/self/clear_refs``), so that a later :func:`peak_rss_bytes` is the peak
    since this call; False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True
