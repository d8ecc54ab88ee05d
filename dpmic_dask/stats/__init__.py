"""Exact statistics: grids, counting, OptimizeAxis, MICr, MICe and Kendall's tau.

Nothing here is private and nothing here touches Dask: pure functions of arrays
and count tables, and the registry of pair statistics (:mod:`.statistics`).
"""
