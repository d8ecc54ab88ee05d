"""Worker preload of the local clusters the package starts (``dpmic run``,
``dpmic demo``): ``preload=["dpmic_dask.batch.localworker"]``.

Each worker process installs the task-error log redaction before it runs any
task, and ignores SIGINT: a Ctrl-C in a terminal reaches every process of the
foreground group, and the command that started the workers closes them itself
(without the tracebacks of workers dying mid-task).
"""

from __future__ import annotations

import logging
import signal
import threading

from dpmic_dask.batch.cluster import install_redaction


class _CancelledTasks(logging.Filter):
    """Drops the warning a worker logs when a task it runs is cancelled: here that
    happens only when the command closes the cluster early (an error, Ctrl-C)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "CancelledError" not in str(record.msg) and not any(
            "CancelledError" in str(arg) for arg in (
                record.args if isinstance(record.args, tuple) else ()))


def dask_setup(worker) -> None:
    """Called by Dask in each worker process as it starts."""
    install_redaction()
    logging.getLogger("distributed.worker.state_machine").addFilter(_CancelledTasks())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
