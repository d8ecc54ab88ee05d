"""``frame.dpmic.causal_graph``: the causal wing adds its method to the accessor.

The accessor lives in the release wing, below this one, so it cannot import
causal discovery; this module attaches the method when the wing is imported
(``import dpmic_dask.causal``), the way optional backends register themselves.
"""

from __future__ import annotations

from dpmic_dask.causal.discover import causal_graph
from dpmic_dask.release.accessor import DPMICAccessor


def accessor_causal_graph(self, eps, **arguments):
    """Release a differentially private causal graph (CPDAG) of the frame, once.

    ``frame.dpmic.causal_graph(eps, bounds=..., ...)`` is
    :func:`dpmic_dask.causal.causal_graph` on the frame: the same arguments,
    one charge of the whole budget, a :class:`~dpmic_dask.causal.CausalGraph`.
    """
    return causal_graph(self._frame, eps, **arguments)


accessor_causal_graph.__name__ = "causal_graph"
DPMICAccessor.causal_graph = accessor_causal_graph  # type: ignore[attr-defined]
