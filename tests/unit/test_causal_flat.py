"""Columns whose released statistics put (nearly) every row in one category, bin
or side of the cut: said in a warning after the charge and in the report, on the
released-tables path and both copula paths (signs at released medians; bins at
released quantiles)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.causal import causal_graph
from dpmic_dask.errors import BoundsWarning, NoiseWarning
from dpmic_dask.privacy.accounting import InMemoryLedger
from tests.statistical.helpers import rerun_once


def _release(frame, eps=5.0, **kwargs):
    ledger = InMemoryLedger(uncapped=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = causal_graph(frame, eps, ledger=ledger, **kwargs)
    assert len(ledger.charges()) == 1
    return graph, [w for w in caught if "every row" in str(w.message)
                   or "at most one category" in str(w.message)]


def categorical(n=20_000, constant=True):
    gen = np.random.default_rng(1)  # test data only
    a = gen.integers(0, 3, n)
    return pd.DataFrame({"a": a, "b": (a + gen.integers(0, 2, n)) % 3,
                         "k": np.zeros(n, dtype=int) if constant else gen.integers(0, 3, n),
                         "d": gen.integers(0, 3, n)})


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_a_constant_categorical_column_is_said_not_left_to_the_noise(delta):
    cats = {c: [0, 1, 2] for c in "abkd"}
    flagged = 0
    for _ in range(20):
        graph, said = _release(categorical(), categories=cats, delta=delta, test="chisq")
        flat = graph.report().flat
        assert flat in ((), ("k",))
        assert [w.category for w in said] == ([NoiseWarning] if flat else [])
        assert ("columns ['k']: at most one category" in str(graph.report())) == bool(flat)
        flagged += bool(flat)
    # a noise category passes the visibility rule now and then (a few releases in a
    # hundred); a column that varies never reads as flat
    assert flagged >= 15, flagged
    graph, said = _release(categorical(constant=False), categories=cats, delta=delta,
                           test="chisq")
    assert graph.report().flat == () and said == []


def bounded(n):
    gen = np.random.default_rng(2)  # test data only
    x = gen.normal(size=n)
    return pd.DataFrame({"x": x, "y": 50 + 10 * x + gen.normal(size=n),
                         "z": gen.normal(size=n)})


@pytest.mark.parametrize("n, eps, delta, statistic", [(20_000, 1.0, 0.0, "signs"),
                                                      (200_000, 5.0, 1e-6, "tau")])
@rerun_once  # the signs path missed the flat column in about 1 release in 200
def test_a_column_beyond_its_bounds_is_said_on_both_copula_paths(n, eps, delta, statistic):
    frame = bounded(n)
    graph, said = _release(frame, eps, bounds={"x": (-5, 5), "y": (-10, 10), "z": (-5, 5)},
                           delta=delta)
    assert graph.report().statistic == statistic
    assert graph.report().flat == ("y",)
    assert [w.category for w in said] == [BoundsWarning]
    assert "columns ['y']: (nearly) every row" in str(graph.report())
    graph, said = _release(frame, eps, bounds={"x": (-5, 5), "y": (0, 100), "z": (-5, 5)},
                           delta=delta)
    assert graph.report().flat == () and said == []
    assert ("x", "y") in {tuple(sorted(e)) for e in graph.skeleton}


def test_a_column_partly_beyond_its_bound_is_said_where_the_copula_bins_it():
    """23% of a date column beyond its upper bound (clamped, tied there) gave the
    copula test a confident false edge a - c (|z| 17) and no word, though the
    released histogram showed the pile (23% in its top bin, 53 rows in the next).
    The pile is now said; bounds that hold the values say nothing."""
    gen = np.random.default_rng(15)  # test data only
    n = 100_000
    a = gen.normal(0, 1, n)
    b = a + gen.normal(0, 1, n)
    frame = pd.DataFrame({"a": a, "signup": pd.Timestamp("2024-01-01")
                          + pd.to_timedelta(60 * b + 180, unit="D"),
                          "c": b + gen.normal(0, 1, n)})
    said = {}
    for hi in ("2025-01-01", "2024-09-01"):
        ledger = InMemoryLedger(uncapped=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph = causal_graph(frame, 1.0, delta=1e-6, ledger=ledger,
                                 bounds={"a": (-5, 5), "c": (-9, 9),
                                         "signup": ("2023-01-01", hi)})
        said[hi] = (graph.report(), [str(w.message) for w in caught
                                     if issubclass(w.category, BoundsWarning)])
    report, warned = said["2024-09-01"]
    ((name, side, share),) = report.piled
    assert (name, side) == ("signup", "upper") and 0.2 < share < 0.26
    assert [m for m in warned if m.startswith("Rows piled at a public bound (signup")]
    assert "rows piled at a public bound (signup" in str(report)
    assert said["2025-01-01"][0].piled == () and not said["2025-01-01"][1]
