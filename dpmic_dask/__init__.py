"""dpmic_dask: differentially private Maximal Information Coefficients on Dask.

The non-private statistics (:func:`micr`, :func:`mice`) carry no privacy
guarantee; their names and docstrings say so.
"""

from . import accessor as _accessor  # noqa: F401  (registers frame.dpmic)
from .characteristic import CharacteristicMatrix
from .accounting import Budget, InMemoryLedger
from .errors import (
    BudgetExceededError,
    BudgetMismatchError,
    ClusterError,
    DataReadError,
    DPMICError,
    LedgerError,
    InvalidDataError,
    InvalidParameterError,
    MissingValuesError,
    PrivacyLeakWarning,
    RunClaimedError,
    UnavailableError,
)
from .exact import mice, micr, micr_characteristic
from .ledger import SQLLedger
from .pipeline import private_mic, session_ledger
from .results import PairwiseResult, Release

__all__ = [
    "Budget",
    "BudgetExceededError",
    "BudgetMismatchError",
    "CharacteristicMatrix",
    "ClusterError",
    "DataReadError",
    "DPMICError",
    "InMemoryLedger",
    "LedgerError",
    "SQLLedger",
    "InvalidDataError",
    "InvalidParameterError",
    "MissingValuesError",
    "PairwiseResult",
    "PrivacyLeakWarning",
    "RunClaimedError",
    "UnavailableError",
    "Release",
    "mice",
    "micr",
    "micr_characteristic",
    "private_mic",
    "session_ledger",
]

__version__ = "0.1.0.dev0"
