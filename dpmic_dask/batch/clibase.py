"""What every ``dpmic`` command shares: exit codes, the one place where library
errors become one-line messages (:func:`handles_errors`), output that survives a
closed standard output, and the common options.

Messages of unexpected (third-party) errors may quote data, so only their type
is printed unless the command was given ``--debug``.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from enum import IntEnum

import click

from dpmic_dask.batch.interrupts import Interrupted, message, signals_as_exceptions
from dpmic_dask.batch.joboutput import DeliveryError
from dpmic_dask.errors import (
    BudgetExceededError,
    DPMICError,
    LedgerError,
    ReleaseIncompleteError,
    RunClaimedError,
    UnavailableError,
    UnitMismatchError,
)


class Exit(IntEnum):
    """Exit codes a scheduler can act on: the one table of them (``dpmic --help``,
    docs/batch.md, docs/deployment.md and deploy/ list the same codes)."""

    OK = 0
    UNEXPECTED = 1  #: a bug or an unforeseen failure (type printed; --debug for details)
    INVALID = 2  #: the job, its input or output, or an argument is invalid
    BUDGET = 3  #: the budget cannot pay for the release; nothing was released
    LEDGER = 4  #: the ledger is missing, unreachable, uninitialised or corrupt
    UNAVAILABLE = 5  #: the Dask scheduler or a SQL server did not answer in time
    RUN_CLAIMED = 6  #: the run already charged without kept values, or is charging now
    OUTPUT = 7  #: released and journaled, but the output could not be written
    INTERRUPTED = 130  #: SIGINT (Ctrl-C): ``128 + signal``; one line says what was charged
    TERMINATED = 143  #: SIGTERM: ``128 + signal``; one line says what was charged


def exit_code(exc: BaseException) -> Exit:
    """The exit code for a library error."""
    for kind, code in ((DeliveryError, Exit.OUTPUT),
                       (BudgetExceededError, Exit.BUDGET),
                       (UnitMismatchError, Exit.INVALID), (LedgerError, Exit.LEDGER),
                       (UnavailableError, Exit.UNAVAILABLE), (RunClaimedError, Exit.RUN_CLAIMED),
                       (ReleaseIncompleteError, Exit.RUN_CLAIMED),
                       (DPMICError, Exit.INVALID)):
        if isinstance(exc, kind):
            return code
    return Exit.UNEXPECTED


def stdout_echo(message=None, err: bool = False, **kwargs) -> None:
    """``click.echo`` that treats a closed standard output (a reader such as
    ``| head -1`` that went away) as done: the line and later ones are dropped
    quietly; the command's outcome and exit code do not change."""
    try:
        click.echo(message, err=err, **kwargs)
    except BrokenPipeError:
        if err:
            raise
        _drop_stdout()


def _drop_stdout() -> None:
    """Point standard output at /dev/null (no error when Python flushes it at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests): nothing to do
        pass


def handles_errors(command):
    """Map library errors to one line on stderr and an :class:`Exit` code.

    SIGINT and SIGTERM end the command the same way (after the cluster is
    closed): one line saying whether the budget may have been charged, and exit
    code 130 or 143 (``128 + signal``); see :mod:`dpmic_dask.batch.interrupts`.
    """
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            with signals_as_exceptions():
                return command(*args, **kwargs)
        except Interrupted as exc:
            failure, code = message(exc), exc.exit_code
        except KeyboardInterrupt:  # a SIGINT outside the main thread's handler
            failure, code = message(Interrupted(signal.SIGINT)), Exit.INTERRUPTED
        except DPMICError as exc:
            failure = f"error: {exc}"
            code = exit_code(exc)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # third-party messages may quote data: name the type only
            if kwargs.get("debug"):
                raise
            failure = (f"error: unexpected {type(exc).__name__}; rerun with --debug for details "
                       "(they may show data values)")
            code = Exit.UNEXPECTED
        click.echo(failure, err=True)
        sys.exit(int(code))
    return wrapper


debug_option = click.option(
    "--debug", is_flag=True,
    help="Show the full traceback of an unexpected failure (it may quote data).")
ledger_option = click.option(
    "--ledger", "ledger_url", envvar="DPMIC_LEDGER", default="sqlite:///dpmic-ledger.db",
    show_default=True, help="Ledger URL: sqlite:///path.db or postgresql://... "
    "(env DPMIC_LEDGER).")
dataset_option = click.option("--dataset", required=True, help="Dataset id the budget belongs to.")
