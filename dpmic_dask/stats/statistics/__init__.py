"""Pair statistics behind one small protocol, and their registry.

A statistic says how its counts are laid out for given parameters, how a value
is computed from a pair's counts, and its replace-one sensitivity. The engine
maps any registered statistic over the reduced counts of every pair; adding a
statistic is one module here plus its tests, and one :func:`register` line
below (the registry itself is :mod:`dpmic_dask.stats.statistics.registry`).
"""

from __future__ import annotations

from dpmic_dask.stats.statistics.base import PairStatistic
from dpmic_dask.stats.statistics.mice import MICe
from dpmic_dask.stats.statistics.micr import MICr
from dpmic_dask.stats.statistics.registry import (
    get_statistic,
    public_statistics,
    register,
    union_layout,
)
from dpmic_dask.stats.statistics.tau import KendallTau

register(MICr())
register(MICe())
register(KendallTau())

__all__ = ["KendallTau", "MICe", "MICr", "PairStatistic", "get_statistic", "public_statistics",
           "register", "union_layout"]
