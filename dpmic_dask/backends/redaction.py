"""No task error reaches a log with its message.

A failing task makes the worker log ``Compute Failed`` with the exception's
text and traceback, which may quote cell values (``could not convert string to
float: 'SECRET'``). :class:`TaskErrorRedactor` rewrites such records to name the
task and the exception type only. :func:`attach` installs it in this process
and, through a worker plugin, on every worker of a ``distributed`` client's
cluster (workers that join later get it too). The Dask backend attaches it to
whatever client runs its graphs -- a client the analyst created too -- before
the first task is submitted; batch clusters (:mod:`dpmic_dask.batch.cluster`)
attach it when they start.
"""

from __future__ import annotations

import logging
import re
import weakref

from distributed.diagnostics.plugin import WorkerPlugin

from dpmic_dask.errors import ClusterError

#: Loggers whose records may carry task exceptions (a handler filter covers
#: the rest wherever logging is configured through handlers).
REDACTED_LOGGERS = ("distributed", "distributed.worker", "distributed.core",
                    "distributed.scheduler", "distributed.client", "distributed.nanny",
                    "distributed.worker.state_machine", "distributed.utils")
_WITHHELD = "details withheld by dpmic_dask: task errors may quote data values"


class TaskErrorRedactor(logging.Filter):
    """Rewrites log records that carry a task's exception text or traceback.

    The record keeps its first line (``Compute Failed``), the task key and the
    exception *type*; the message, arguments, ``exc_info`` and stack are dropped.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("distributed") or getattr(record, "dpmic_redacted", False):
            return True
        template = str(record.msg)
        args = record.args if isinstance(record.args, tuple) else ()
        carries_error = (
            record.exc_info is not None
            or record.exc_text
            or any(isinstance(a, BaseException) for a in args)
            or "Compute Failed" in template
            or "Traceback" in template
            or "Exception" in template
        )
        if not carries_error:
            return True
        headline = template.split("\n", 1)[0].strip() or "task failure"
        if "%" in headline:
            headline = headline.split("%", 1)[0].rstrip(" :")
        kind = _exception_kind(record, args)
        key = f" (task {args[0]!s:.200})" if "Compute Failed" in template and args else ""
        record.msg = f"{headline}{key}: {kind} [{_WITHHELD}]"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        record.dpmic_redacted = True
        return True


def _exception_kind(record, args) -> str:
    if record.exc_info and record.exc_info[0] is not None:
        return record.exc_info[0].__name__
    for arg in args:
        if isinstance(arg, BaseException):
            return type(arg).__name__
    for arg in args:  # "Exception: %r" receives the exception's text, e.g. "ValueError('...')"
        match = re.match(r"^['\"]?([A-Za-z_][A-Za-z0-9_.]*)\(", str(arg))
        if match:
            return match.group(1)
    return "an exception"


_REDACTOR = TaskErrorRedactor()


def install_redaction() -> None:
    """Install :class:`TaskErrorRedactor` on this process's ``distributed`` loggers
    and on every handler of those loggers and of the root logger (idempotent)."""
    loggers = [logging.getLogger(name) for name in REDACTED_LOGGERS] + [logging.getLogger()]
    for logger in loggers:
        if _REDACTOR not in logger.filters:
            logger.addFilter(_REDACTOR)
        for handler in logger.handlers:
            if _REDACTOR not in handler.filters:
                handler.addFilter(_REDACTOR)


class RedactionPlugin(WorkerPlugin):
    """Installs the redactor in each worker process (and each one that joins)."""

    name = "dpmic-redact-task-errors"
    idempotent = True

    def setup(self, worker):
        install_redaction()


def _redaction_plugin():
    return RedactionPlugin()




#: Clients whose workers already have the redaction, with the scheduler address
#: it was registered at (a client that reconnects elsewhere registers it again).
_ATTACHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def attach(client) -> None:
    """Install the log redaction in this process and on every worker of
    ``client``'s cluster, including workers that join later.

    Idempotent and cheap to repeat: the plugin is registered under one name
    (the scheduler keeps a single copy), and each client is registered once per
    scheduler. Raises :class:`ClusterError` (naming the exception type only) if
    the workers cannot install it, so that no task runs on a cluster whose logs
    could quote data values.
    """
    install_redaction()
    address = getattr(getattr(client, "scheduler", None), "address", None)
    try:
        if _ATTACHED.get(client) == address:
            return
    except TypeError:  # pragma: no cover - an unhashable client: register every time
        pass
    try:
        client.register_plugin(_redaction_plugin())
    except Exception as exc:  # noqa: BLE001 - distributed raises many kinds
        raise ClusterError(
            "cannot install the log redaction on the Dask workers "
            f"({type(exc).__name__}); nothing was computed") from None
    try:
        _ATTACHED[client] = address
    except TypeError:  # pragma: no cover
        pass


