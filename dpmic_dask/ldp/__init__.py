"""The local model: each person randomizes their own row (eps-LDP), the server
estimates every pair's MIC from the reports (issue #27, SPEC section 8).

Client: :func:`randomize` (and :func:`write_reports` / :func:`read_reports` to keep
the public design with the reports). Server: :func:`pairwise`. Nothing here touches
the central ledger: the guarantee is each client's.
"""

from dpmic_dask.ldp.client import make_design, randomize, randomize_not_private_seeded
from dpmic_dask.ldp.result import LocalPairwiseResult
from dpmic_dask.ldp.server import pairwise
from dpmic_dask.ldp.storage import read_design, read_reports, write_reports

__all__ = [
    "LocalPairwiseResult",
    "make_design",
    "pairwise",
    "randomize",
    "randomize_not_private_seeded",
    "read_design",
    "read_reports",
    "write_reports",
]
