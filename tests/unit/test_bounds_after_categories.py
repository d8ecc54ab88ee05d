"""A release with private bounds for every column (``bounds="private"``) and
privately chosen categories: the categorical columns' axes reach the values as
the choice coded them (the private bounds step sets only the columns it
released; it once put the plan's worst-case placeholder back, clamping every
category past the second into one bin)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers .dpmic)
from dpmic_dask.release import executor

REGIONS = ["centre", "coast", "east", "north", "south", "west"]


@pytest.mark.parametrize("unit", [{}, {"privacy_unit": "cid", "max_rows_per_unit": 2}])
def test_categorical_bounds_survive_private_bounds(monkeypatch, unit):
    gen = np.random.default_rng(0)
    n = 20_000
    frame = pd.DataFrame({
        "cid": np.arange(n) // 2,
        "x": gen.uniform(0, 1, n),
        "region": gen.choice(REGIONS, n),
        "plan": gen.choice(["basic", "plus", "pro"], n),
    })
    seen = {}
    values = executor._values

    def spy(frame, request, selection, **kwargs):
        seen.update(zip(request.columns, request.bounds))
        seen["axes"] = dict(request.categories)
        return values(frame, request, selection, **kwargs)

    monkeypatch.setattr(executor, "_values", spy)
    result = frame.dpmic.pairwise(
        8.0, delta=1e-6, bounds="private", columns=["x", "region", "plan"], nulls="drop",
        categories={"region": "private",
                    "plan": {"private": ["basic", "plus", "pro", "legacy"]}},
        **({"min_rows": n // 2} if not unit else unit))
    assert list(result.private_categories["region"]) == REGIONS
    # legacy holds no row: it is kept with probability up to FALSE_KEEP / 8 whatever
    # eps is (the threshold's design)
    kept = list(result.private_categories["plan"])
    assert kept in (["basic", "plus", "pro"], ["basic", "plus", "pro", "legacy"])
    for column in ("region", "plan"):
        axis = seen["axes"][column]
        assert tuple(seen[column]) == tuple(map(float, axis.bounds))
        assert seen[column][1] == len(result.private_categories[column]) + 1  # "other"
