"""Exception and warning types raised by dpmic_dask.

Every message built here names arguments and columns, never data values: an
error message is an output channel too, and nothing derived from the data may
leave the library without passing through a mechanism.
"""

from __future__ import annotations

import warnings


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


class LedgerError(DPMICError):
    """The privacy ledger is missing, unreachable, corrupt or not initialised."""


class PrivacyLeakWarning(UserWarning):
    """Something was requested that weakens or voids the privacy guarantee."""


# A privacy warning must never be swallowed by a "once per location" filter.
warnings.simplefilter("always", PrivacyLeakWarning)
