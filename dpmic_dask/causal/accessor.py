"""``frame.dpmic.causal_graph``: the causal wing's part of the accessor.

The accessor (:class:`dpmic_dask.release.accessor.DPMICAccessor`) lives in the
release wing, below this one, so it cannot import causal discovery: it declares
the method ``causal_graph`` (signature, docstring) and this module provides the
work (:mod:`dpmic_dask.release.provided`) on import (``import dpmic_dask``
imports it before any frame can be used).
"""

from __future__ import annotations

from dpmic_dask.causal.discover import causal_graph
from dpmic_dask.release.provided import provide_method

provide_method("causal_graph", causal_graph)
