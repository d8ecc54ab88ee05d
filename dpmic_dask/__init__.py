"""dpmic_dask: differentially private Maximal Information Coefficients on Dask.

The non-private statistics (:func:`micr`, :func:`mice`) carry no privacy
guarantee; their names and docstrings say so.
"""

from . import accessor as _accessor  # noqa: F401  (registers frame.dpmic)
from .accounting import Budget, InMemoryLedger, using_ledger
from .characteristic import CharacteristicMatrix
from .errors import (
    BudgetExceededError,
    BudgetMismatchError,
    ClusterError,
    DataReadError,
    DPMICError,
    InvalidDataError,
    InvalidParameterError,
    LedgerError,
    MissingValuesError,
    PrivacyLeakWarning,
    ReleaseIncompleteError,
    RunClaimedError,
    UnavailableError,
)
from .exact import mice, micr, micr_characteristic
from .ledger import SQLLedger
from .pipeline import private_mic, session_ledger
from .private_release import private_bounds
from .results import BoundsRelease, PairwiseResult, PrivacyReport, Release

__all__ = [
    "BoundsRelease",
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
    "PrivacyReport",
    "ReleaseIncompleteError",
    "RunClaimedError",
    "UnavailableError",
    "Release",
    "mice",
    "micr",
    "micr_characteristic",
    "private_bounds",
    "private_mic",
    "session_ledger",
    "using_ledger",
]

from ._version import __version__ as __version__  # noqa: E402
