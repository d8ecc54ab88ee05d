"""dpmic_dask: differentially private Maximal Information Coefficients on Dask.

The non-private statistics (:func:`micr`, :func:`mice`) carry no privacy
guarantee; their names and docstrings say so.
"""

from dpmic_dask import causal as causal  # noqa: F401  (also provides frame.dpmic.causal_graph)
from dpmic_dask import (
    config,  # the engine's knobs: config.set(task_memory=...), config.get(...)
    ldp,  # the local model: ldp.randomize, ldp.pairwise
)
from dpmic_dask.errors import (
    BoundsWarning,
    BudgetExceededError,
    BudgetMismatchError,
    ClusterError,
    DataReadError,
    DPMICError,
    InvalidDataError,
    InvalidParameterError,
    LargeEpsilonWarning,
    LedgerError,
    MissingValuesError,
    NoiseWarning,
    PrivacyLeakWarning,
    ReleaseIncompleteError,
    RunClaimedError,
    UnavailableError,
    UnitMismatchError,
    UnusedParameterWarning,
)
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger, using_ledger
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.release.accessor import DPMICAccessor as _DPMICAccessor  # noqa: F401  (registers frame.dpmic)
from dpmic_dask.release.boundsresult import BoundsRelease
from dpmic_dask.release.boundsspec import PrivateBounds
from dpmic_dask.release.charge import session_ledger
from dpmic_dask.release.choose_categories import CategoriesRelease, private_categories
from dpmic_dask.release.one_pair import private_mic
from dpmic_dask.release.private_bounds import private_bounds
from dpmic_dask.release.report import PrivacyReport, Release
from dpmic_dask.release.results import PairwiseResult
from dpmic_dask.release.units import contribution_bound
from dpmic_dask.stats.characteristic import CharacteristicMatrix
from dpmic_dask.stats.exact import mice, micr, micr_characteristic

__all__ = [
    "BoundsRelease",
    "BoundsWarning",
    "Budget",
    "BudgetExceededError",
    "BudgetMismatchError",
    "CategoriesRelease",
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
    "NoiseWarning",
    "LargeEpsilonWarning",
    "PairwiseResult",
    "PrivacyLeakWarning",
    "UnusedParameterWarning",
    "PrivacyReport",
    "PrivateBounds",
    "ReleaseIncompleteError",
    "RunClaimedError",
    "UnavailableError",
    "UnitMismatchError",
    "Release",
    "mice",
    "micr",
    "micr_characteristic",
    "private_bounds",
    "private_categories",
    "private_mic",
    "session_ledger",
    "causal",
    "config",
    "contribution_bound",
    "ldp",
    "using_ledger",
]

from dpmic_dask._version import __version__ as __version__  # noqa: E402


def __dir__() -> list[str]:
    """What the package teaches (``__all__``): its submodules stay importable by
    name (``dpmic_dask.stats``, ``dpmic_dask.testing``) but are not listed."""
    return sorted([*__all__, "__version__"])
