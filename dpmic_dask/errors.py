"""Exception and warning types raised by dpmic_dask.

Every message built here names arguments and columns, never data values: an
error message is an output channel too, and nothing derived from the data may
leave the library without passing through a mechanism.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any


class DPMICError(Exception):
    """Base class for dpmic_dask errors."""


class InvalidParameterError(DPMICError, ValueError):
    """An argument has a value the library cannot accept (bounds, B, c, eps, ...)."""


class InvalidDataError(DPMICError, TypeError):
    """The data has a type or shape the library cannot use (checked from schema, not values)."""


class MissingValuesError(DPMICError, ValueError):
    """Missing values were found and the chosen null policy does not allow them."""


class BudgetExceededError(DPMICError):
    """A release would spend more privacy budget than the ledger allows."""


class BudgetMismatchError(DPMICError, ValueError):
    """The budget is of the wrong kind for the release (a pure-DP budget asked to pay
    an approximate-DP release): a configuration problem, not an exhausted budget."""


class DataReadError(DPMICError):
    """Reading or counting the data failed underneath the library (a reader, Dask,
    a worker). The message names the columns and the exception type only: the
    original message may quote cell values and is withheld."""


class UnavailableError(DPMICError):
    """A service the job needs (the Dask scheduler, a SQL input or output) cannot
    be reached in time. Nothing was charged; retrying later may succeed."""


class ClusterError(UnavailableError):
    """The Dask cluster cannot be started or reached (the message names the
    address and the reason, never data)."""


class LedgerError(DPMICError):
    """The privacy ledger is missing, unreachable, corrupt or not initialised."""


class UnitMismatchError(LedgerError):
    """The dataset's budget is for another privacy unit than the release asks for:
    the release (its job or arguments) is invalid, the ledger is intact. A
    :class:`LedgerError` too, so that code catching that keeps catching it; the
    command line exits 2 (invalid job), not 4 (ledger)."""


class RunClaimedError(DPMICError):
    """A batch run id has already charged this dataset (a concurrent run, or one
    that died after charging); nothing is charged again."""


class ReleaseIncompleteError(DPMICError):
    """The budget was charged, but a later pass over the data failed (the data
    changed or became unreadable between the passes of a release of several
    steps). Every check that can refuse runs before the charge; this is raised
    only for what no check can foresee. The charge stays recorded: the message
    says so and names it, and never claims that nothing was charged."""


class PrivacyLeakWarning(UserWarning):
    """Something was requested that weakens or voids the privacy guarantee."""


class LargeEpsilonWarning(PrivacyLeakWarning):
    """A release charged at an ``eps`` above
    :data:`dpmic_dask.release.charge.LARGE_EPSILON`: accounted correctly, but a
    guarantee that lets one person change the odds of any outcome by a factor of
    ``e^eps`` protects little. Shown before the charge; the release goes on."""


class BoundsWarning(UserWarning):
    """Bounds that waste the grid or could not be found: private bounds left
    unresolved by the noise, public bounds far wider than the data (stated from
    released quantities only), or categories chosen privately of which none was
    kept (the column is one bin). The privacy guarantee is intact."""


#: A release whose values' ``ci95`` exceeds this warns (:class:`NoiseWarning`) before
#: the charge, from public quantities, and after, with how many values are within
#: their noise (:mod:`dpmic_dask.release.report`); pages say it too.
NOISY_CI95 = 0.25


class NoiseWarning(UserWarning):
    """A release whose noise may swamp its values (``ci95`` above
    :data:`NOISY_CI95`). The privacy guarantee is intact."""


class UnusedParameterWarning(UserWarning):
    """A parameter given that the release does not use as given (``delta`` for a
    pure mechanism: the release is pure eps-DP). The privacy guarantee is intact."""


# A privacy warning must never be swallowed by a "once per location" filter.
warnings.simplefilter("always", PrivacyLeakWarning)


def user_stacklevel(skip: int = 1) -> int:
    """The ``stacklevel`` that makes a warning issued ``skip`` frames below the
    caller of this function point at the first frame outside the package: the
    user's own line (``frame.dpmic.pairwise(...)``), however deep the package's
    own calls run."""
    frame: Any = sys._getframe(skip)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("dpmic_dask"):
        frame = frame.f_back
        level += 1
    return level


def shown(message: str, category, stacklevel: int) -> None:
    """Warn as the caller's filters say (an ignored warning stays ignored), except
    that a warnings-as-errors filter only shows it: what runs after a charge must
    never refuse."""
    try:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    except category:
        with warnings.catch_warnings():
            warnings.simplefilter("always", category)
            warnings.warn(message, category, stacklevel=stacklevel + 1)


def counted(number: int | None, noun: str, plural: str | None = None) -> str:
    """``"1 pair"``, ``"3 pairs"``: a count and its noun as messages say them."""
    return f"{number} {noun if number == 1 else (plural or noun + 's')}"
