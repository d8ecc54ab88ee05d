"""SIGINT and SIGTERM in the command line: one line, a conventional exit code.

While a command runs under :func:`signals_as_exceptions`, the first SIGINT or
SIGTERM raises :class:`Interrupted` in the main thread; later ones are ignored
while the command unwinds (the cluster is closed on the way out). From the
first signal on, the log records of ``distributed``, ``tornado`` and
``asyncio`` in this process are dropped: a cluster torn down mid-start or
mid-computation logs tracebacks that say nothing useful to the operator.
Steps that must not be cut in half (creating a cluster object and registering
it for clean-up) run under :func:`deferred`: a signal then waits for the step.

Whether the budget may have been charged is tracked conservatively:
:func:`note_charge_possible` is called just before a release asks the ledger to
charge (:func:`dpmic_dask.release.charge.charge_budget`); before that an
interruption certainly charged nothing.
"""

from __future__ import annotations

import logging
import signal
import threading
from contextlib import contextmanager

from dpmic_dask.privacy.charges import (  # noqa: F401  (re-exported)
    charge_possible,
    note_charge_possible,
    note_nothing_charged,
)

#: Loggers silenced once the process is interrupted.
NOISY_LOGGERS = ("distributed", "tornado", "asyncio")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """The process received SIGINT or SIGTERM (a ``BaseException``, like
    :class:`KeyboardInterrupt`, so that ``except Exception`` does not swallow it).

    Parameters
    ----------
    signum : int
        The signal received.
    """

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        """``128 + signum``: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # pragma: no cover - only SIGINT and SIGTERM are handled
            return f"signal {self.signum}"


class _State:
    interrupted: int | None = None
    deferring: int = 0
    pending: int | None = None


_STATE = _State()


def interrupted() -> bool:
    """Whether a SIGINT or SIGTERM arrived during the current command."""
    return _STATE.interrupted is not None


def message(exc: Interrupted) -> str:
    """The one line printed for an interruption, truthful about the budget."""
    if not charge_possible():
        return f"interrupted ({exc.name}); nothing was charged"
    return (f"interrupted ({exc.name}) while the release ran: if it reached its charge, the "
            "budget was charged ('dpmic budget history' shows it)")


def _noisy_loggers() -> list[logging.Logger]:
    names = [name for name in list(logging.root.manager.loggerDict)
             if name.split(".", 1)[0] in NOISY_LOGGERS]
    return [logging.getLogger(name) for name in sorted({*names, *NOISY_LOGGERS})]


def silence_noisy_loggers() -> None:
    """Drop every record of :data:`NOISY_LOGGERS` (and their children) from now on."""
    for logger in _noisy_loggers():
        logger.disabled = True


@contextmanager
def noisy_loggers_silenced():
    """Drop the records of :data:`NOISY_LOGGERS` within the block only (after an
    interruption they stay dropped)."""
    loggers = _noisy_loggers()
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        if not interrupted():
            for logger, disabled in zip(loggers, before):
                logger.disabled = disabled


def _handler(signum, frame):
    if _STATE.interrupted is not None or _STATE.pending is not None:
        return  # already unwinding (or about to): let the clean-up finish
    if _STATE.deferring:
        _STATE.pending = signum
        return
    _interrupt(signum)


def _interrupt(signum):
    _STATE.interrupted = signum
    silence_noisy_loggers()
    raise Interrupted(signum)


@contextmanager
def deferred():
    """Within the block, a signal is held and raised when the block ends: for
    steps that must not be cut in half (an object that holds processes or
    threads, created but not yet registered for clean-up)."""
    _STATE.deferring += 1
    try:
        yield
    finally:
        _STATE.deferring -= 1
        if not _STATE.deferring and _STATE.pending is not None:
            signum, _STATE.pending = _STATE.pending, None
            _interrupt(signum)


@contextmanager
def signals_as_exceptions():
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` (once).

    Outside the main thread (where signal handlers cannot be set) it does nothing.
    The previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _STATE.interrupted = None
    note_nothing_charged()
    _STATE.pending = None
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    for signum in SIGNALS:
        signal.signal(signum, _handler)
    try:
        yield
    finally:
        _STATE.interrupted = _STATE.pending = None  # (charge_possible stays for the message)
        for signum, handler in previous.items():
            if handler is not None:  # None: set outside Python, cannot be restored
                signal.signal(signum, handler)
