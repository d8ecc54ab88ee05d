"""Starting or attaching to a Dask cluster for batch jobs, safely.

* **Enforced timeouts.** Before a :class:`distributed.Client` is created, the
  scheduler address is probed: a plain TCP connect (a refused port fails at
  once), then Dask's own ``identity`` request, each under a hard deadline. A
  port that accepts TCP but never speaks Dask (a dashboard, a silent socket)
  fails after ``timeout`` seconds with a message naming the address, instead
  of hanging the job.
* **No task error reaches a log with its message.** A failing task makes the
  worker log ``Compute Failed`` with the exception's text and traceback, which
  may quote cell values (``could not convert string to float: 'SECRET'``).
  :class:`TaskErrorRedactor` rewrites such records to name the task and the
  exception type only. It is installed in this process and, through
  :class:`RedactionPlugin`, on every worker of a cluster the package starts
  or attaches to (workers that join later get it too). The Dask backend calls
  :func:`attach` on whatever ``distributed`` client runs its graphs -- a
  client the analyst created too -- before the first task is submitted.
* **Bounded start-up.** A local cluster has at most :data:`WORKERS_PER_CORE`
  worker processes per CPU core, and all of them must have started within the
  timeout; a cluster that fails or is interrupted while it starts is closed
  quietly before the error goes on.
* **No dashboard unless asked.** A local cluster's scheduler and workers serve
  no HTTP routes and bind their (empty) HTTP servers to a random loopback port.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import socket
import time
from contextlib import ExitStack, contextmanager
from urllib.parse import urlparse

import dask
from distributed import Client, LocalCluster
from distributed.comm import connect
from distributed.core import Status

from dpmic_dask.backends.redaction import (  # noqa: F401  (re-exported for batch users)
    REDACTED_LOGGERS,
    TaskErrorRedactor,
    attach,
    install_redaction,
)
from dpmic_dask.batch.interrupts import deferred, noisy_loggers_silenced
from dpmic_dask.errors import ClusterError, InvalidParameterError

DEFAULT_TIMEOUT = 30.0
#: Seconds a new local cluster's worker processes may take to start when no
#: timeout is given: longer than a scheduler's answer, since on a loaded host (other
#: jobs starting their own clusters) starting processes is slow but not a failure.
LOCAL_START_TIMEOUT = 120.0
_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[^\s/]+$")


def check_address(address: str, name: str = "cluster.scheduler") -> str:
    """Shape check of a scheduler address, ``tcp://host:port`` (no connection)."""
    if not isinstance(address, str) or not _ADDRESS.match(address):
        raise ClusterError(f"{name} must look like tcp://host:port")
    if address.startswith(("tcp://", "tls://")):
        parsed = urlparse(address)
        try:
            port = parsed.port
        except ValueError:
            port = None
        if not parsed.hostname or port is None:
            raise ClusterError(f"{name} must look like tcp://host:port (with a port number)")
    return address


def check_timeout(timeout, name: str = "timeout") -> float:
    """A timeout in seconds, in ``(0, 3600]``."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
        0 < float(timeout) <= 3600
    ):
        raise ClusterError(f"{name} must be a number of seconds in (0, 3600]")
    return float(timeout)


async def _identity(address: str, timeout: float) -> dict:
    comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
    try:
        await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), timeout)
        return await asyncio.wait_for(comm.read(), timeout)
    finally:
        comm.abort()


def probe_scheduler(address: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Raise :class:`ClusterError` unless a Dask scheduler answers at ``address``
    within ``timeout`` seconds."""
    address = check_address(address)
    timeout = check_timeout(timeout)
    if address.startswith(("tcp://", "tls://")):
        parsed = urlparse(address)
        try:
            socket.create_connection((parsed.hostname, parsed.port), timeout=timeout).close()
        except ConnectionRefusedError:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                               "connection refused") from None
        except socket.timeout:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: no answer "
                               f"within {timeout:g} s") from None
        except OSError as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                               f"{exc.strerror or type(exc).__name__}") from None
    try:
        reply = asyncio.run(_identity(address, timeout))
    except (asyncio.TimeoutError, TimeoutError):
        reply = None
        reason = f"it accepted the connection but gave no Dask answer within {timeout:g} s"
    except Exception as exc:  # noqa: BLE001 - comm errors of any kind
        reply = None
        reason = f"the Dask handshake failed ({type(exc).__name__})"
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        if reply is not None:
            reason = "the process there is not a Dask scheduler"
        raise ClusterError(f"cannot use {address} as the Dask scheduler: {reason}")


#: Worker processes a local cluster may have per CPU core of this machine: more
#: only slow start-up down (500 workers on 2 cores took minutes to start).
WORKERS_PER_CORE = 4


def max_local_workers() -> int:
    """The most worker processes a local cluster may start on this machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return WORKERS_PER_CORE * max(1, cores)


def check_local_workers(workers, name: str = "cluster.workers") -> int:
    """The number of worker processes of a local cluster: an integer from 1 to
    :func:`max_local_workers` (raises :class:`InvalidParameterError` otherwise)."""
    limit = max_local_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= limit:
        hint = "; set cluster.scheduler to use a larger cluster" if name.startswith(
            "cluster.") else ""
        raise InvalidParameterError(
            f"{name} must be an integer from 1 to {limit} ({WORKERS_PER_CORE} per CPU core "
            f"of this machine) for a local cluster{hint}")
    return workers


def local_cluster_options(workers: int, memory_limit: int | None = None) -> dict:
    """Options of a quiet local cluster: no dashboard, no HTTP routes, loopback only;
    worker processes ignore SIGINT (the command that started them closes them).
    The package's preload runs first, then any configured in
    ``distributed.worker.preload``. ``memory_limit``: bytes per worker (Dask's
    default, the machine's memory over the workers, without it)."""
    configured = dask.config.get("distributed.worker.preload", None) or []
    configured = [configured] if isinstance(configured, str) else list(configured)
    options = dict(n_workers=workers, threads_per_worker=1, processes=True,
                   host="127.0.0.1", dashboard_address="127.0.0.1:0",
                   worker_dashboard_address=None, scheduler_kwargs={"dashboard": False},
                   preload=["dpmic_dask.batch.localworker", *configured])
    if memory_limit is not None:
        options["memory_limit"] = int(memory_limit)
    return options


def _quiet_http_config():
    return dask.config.set({"distributed.scheduler.http.routes": [],
                            "distributed.worker.http.routes": []})


def _closing(resource, wait: float):
    """An exit callback closing ``resource`` (a client or cluster). After a failure
    or an interruption it closes quietly: ``distributed`` logs nothing, errors of
    a half-started cluster are dropped, and the cluster is not closed again at
    exit (its worker processes are daemons, ended with this process)."""
    def close(exc_type, exc, tb):
        if exc_type is None:
            resource.close()
            return False
        _close_quietly(resource, wait)
        return False

    return close


def _close_quietly(resource, wait: float) -> None:
    with noisy_loggers_silenced():
        try:
            if hasattr(resource, "scale"):
                _end_worker_processes(resource)
                resource.close(timeout=wait)
            else:
                resource.close()
        except Exception:  # noqa: BLE001, S110 - a half-started cluster; nothing to add
            pass
    if getattr(resource, "status", None) is not None and hasattr(resource, "shutdown_on_close"):
        if resource.status != Status.closed:
            resource.shutdown_on_close = False  # distributed's exit hook would retry, loudly


def _end_worker_processes(cluster) -> None:
    """SIGTERM to the worker processes of ``cluster``'s nannies that are still
    starting: a worker blocked in its start-up would hold the cluster's close
    (running workers are closed by their nannies)."""
    nannies = [*getattr(cluster, "_created", ()), *getattr(cluster, "workers", {}).values()]
    for nanny in nannies:
        if getattr(nanny, "status", None) not in (Status.init, Status.starting):
            continue
        process = getattr(getattr(nanny, "process", None), "process", None)
        pid = getattr(process, "pid", None)
        if isinstance(pid, int) and pid > 0:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass


def _start_local(stack: ExitStack, workers: int, timeout: float,
                 memory_limit: int | None = None):
    """A client on a new local cluster whose ``workers`` processes all started
    within ``timeout`` seconds (else :class:`ClusterError`)."""
    stack.enter_context(_quiet_http_config())
    with deferred():  # a signal waits until the new object is registered for closing
        # the scheduler only: quick (its workers, scaled below, take memory_limit)
        cluster = LocalCluster(**local_cluster_options(0, memory_limit))
        stack.push(_closing(cluster, timeout))
    with deferred():
        client = Client(cluster, timeout=f"{timeout}s")
        stack.push(_closing(client, timeout))
    # tornado would log the failure of the background start as a second traceback
    with _logger_silenced("tornado.application"):
        cluster.scale(workers)
        _wait_for_workers(cluster, client, workers, timeout)
    return client


@contextmanager
def _logger_silenced(name: str):
    logger = logging.getLogger(name)
    before, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = before


def _wait_for_workers(cluster, client, workers: int, timeout: float) -> None:
    """Until ``workers`` workers are up; :class:`ClusterError` after ``timeout``
    seconds, or as soon as one of them failed to start."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClusterError(
                f"the local Dask cluster did not start its {workers} worker process(es) "
                f"within {timeout:g} s (cluster.timeout); nothing was charged")
        try:
            client.wait_for_workers(workers, timeout=min(0.5, left))
            return
        except (TimeoutError, asyncio.TimeoutError):
            pass
        if any(getattr(w, "status", None) == Status.failed
               for w in list(cluster.workers.values())):
            raise ClusterError(
                "the local Dask cluster could not start its worker processes (see the "
                "workers' log above, e.g. a failing distributed.worker.preload); nothing "
                "was charged")


def open_cluster(*, scheduler: str | None, workers: int = 2,
                 timeout: float | None = None, memory_limit: int | None = None) -> ExitStack:
    """A context holding a Dask client: on ``scheduler`` if given (probed first,
    under ``timeout``, default :data:`DEFAULT_TIMEOUT`), else on a new quiet local
    cluster of ``workers`` processes (at most :func:`max_local_workers`) that must
    start within ``timeout`` (default :data:`LOCAL_START_TIMEOUT`), each with
    ``memory_limit`` bytes when given.
    Task-failure logs are redacted on every process involved. A failure or an
    interruption (:class:`~dpmic_dask.batch.interrupts.Interrupted`) while it starts
    closes what was started, quietly, before the error propagates."""
    if timeout is None:
        timeout = DEFAULT_TIMEOUT if scheduler else LOCAL_START_TIMEOUT
    timeout = check_timeout(timeout, "cluster.timeout")
    if not scheduler:
        check_local_workers(workers, "workers")
    install_redaction()
    stack = ExitStack()
    try:
        if scheduler:
            probe_scheduler(scheduler, timeout)
            with deferred():
                client = Client(scheduler, timeout=f"{timeout}s")
                stack.push(_closing(client, timeout))
        else:
            client = _start_local(stack, workers, timeout, memory_limit=memory_limit)
        attach(client)
    except ClusterError as exc:
        stack.__exit__(type(exc), exc, None)
        raise
    except Exception as exc:  # noqa: BLE001 - distributed raises many kinds
        stack.__exit__(type(exc), exc, None)
        kind = type(exc).__name__
        where = scheduler or "a local cluster"
        raise ClusterError(f"cannot start or reach the Dask cluster ({where}): {kind}") from None
    except BaseException as exc:  # an interruption: close what started, then go on
        stack.__exit__(type(exc), exc, None)
        raise
    return stack
