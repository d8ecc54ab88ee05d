"""The registry of pair statistics: names, the labels users ask for, and the one
count layout that holds what several statistics declare.

The built-in statistics register themselves in :mod:`dpmic_dask.stats.statistics`
(the package imports them); a new statistic is one module plus one
:func:`register` call there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpmic_dask.stats.grids import count_layout

if TYPE_CHECKING:  # pragma: no cover - annotations only: the registry holds instances
    from dpmic_dask.stats.statistics.base import PairStatistic

_REGISTRY: dict[str, PairStatistic] = {}


def register(statistic: PairStatistic) -> PairStatistic:
    """Make ``statistic`` available under ``statistic.name``."""
    _REGISTRY[statistic.name] = statistic
    return statistic


def get_statistic(name: str) -> PairStatistic:
    """The registered statistic called ``name`` (``KeyError`` names the known ones)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown statistic {name!r}; known: {sorted(_REGISTRY)}") from None


def public_statistics() -> dict[str, str]:
    """What ``statistics=(...)`` accepts -> registry name: MICr's label (the
    released MIC, always first) and each companion's label and aliases."""
    names = {_REGISTRY["micr"].label: "micr"}
    for statistic in _REGISTRY.values():
        if statistic.companion:
            names.update(dict.fromkeys((statistic.label, *statistic.aliases), statistic.name))
    return names


def union_layout(statistics, B: int, c: int):
    """The one count layout holding every grid the ``statistics`` declare (the
    master family and the union of their extra grids), counted in one pass."""
    return count_layout(B, c, tuple(m for s in statistics for m in s.grids(B, c)))
