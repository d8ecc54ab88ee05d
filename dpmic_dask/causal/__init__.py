"""Causal discovery: the PC algorithm with private independence tests.

:func:`causal_graph` releases a differentially private CPDAG (one budget charge,
fixed in advance); :func:`causal_graph_exact` is the same search without noise
(NOT PRIVATE, for references). See ``docs/causal.md``.
"""

from dpmic_dask.causal import accessor as _accessor  # noqa: F401  (frame.dpmic.causal_graph)
from dpmic_dask.causal.discover import causal_graph, causal_graph_exact
from dpmic_dask.causal.result import CausalGraph, CausalReport

__all__ = ["CausalGraph", "CausalReport", "causal_graph", "causal_graph_exact"]
