"""Every removed edge carries the statistic of the test that removed it, on every
path: exact (its value from the data, recomputed here), released tables (the
noise-aware statistic of the released table, recomputed from the tables the
result carries) and per-test private decisions (the noisy value, on the side of
the threshold that removes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.causal import causal_graph, causal_graph_exact
from dpmic_dask.causal.citests import tau_threshold
from dpmic_dask.causal.noisychisq import noisy_chisq
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.privacy.costs import measure_for

NAMES = ["a", "b", "c", "d"]
CATEGORIES = {c: [0, 1, 2] for c in NAMES}


def chain(n: int = 20_000, seed: int = 3) -> pd.DataFrame:
    """a -> b -> c over 3 categories, d independent of all (test data, not noise)."""
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 3, n)
    b = np.where(gen.random(n) < 0.6, a, gen.integers(0, 3, n))
    c = np.where(gen.random(n) < 0.6, b, gen.integers(0, 3, n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": gen.integers(0, 3, n)})


def stratified(frame: pd.DataFrame, x: str, y: str, given: tuple, test: str) -> float:
    """Pearson's chi-square or G summed over the strata of ``given``, from the rows."""
    total = 0.0
    groups = [((), frame)] if not given else frame.groupby(list(given))
    for _, part in groups:
        observed = pd.crosstab(part[x], part[y]).to_numpy(dtype=float)
        expected = np.outer(observed.sum(1), observed.sum(0)) / observed.sum()
        if test == "chisq":
            total += float(((observed - expected) ** 2 / expected).sum())
        else:
            seen = observed > 0
            total += 2.0 * float((observed[seen] * np.log(observed[seen] / expected[seen])).sum())
    return total


@pytest.mark.parametrize("test", ["chisq", "g"])
def test_exact_removed_edges_carry_their_test_statistic(test):
    frame = chain()
    g = causal_graph_exact(frame, categories=CATEGORIES, test=test, max_condition_size=1)
    assert ("a", "c") in g.separating_sets and ("a", "d") in g.separating_sets
    assert set(g.separation_statistic) == set(g.separating_sets)
    for (x, y), value in g.separation_statistic.items():
        want = stratified(frame, x, y, g.separating_sets[(x, y)], test)
        assert value == pytest.approx(want, rel=1e-9, abs=1e-9), (x, y)


def test_released_tables_removed_edges_carry_the_noisy_tables_statistic():
    frame = chain()
    eps, delta = 20.0, 1e-6
    g = causal_graph(frame, eps, delta=delta, categories=CATEGORIES, test="chisq",
                     max_condition_size=1, ledger=InMemoryLedger(uncapped=True))
    # d is independent of all and a of c given b: most of those four pairs are
    # removed (each kept with probability about alpha)
    assert len(g.separating_sets) >= 2
    assert set(g.separation_statistic) == set(g.separating_sets)
    law = measure_for(delta).total(eps, delta).law
    order = {c: k for k, c in enumerate(NAMES)}
    exact = causal_graph_exact(frame, categories=CATEGORIES, test="chisq", max_condition_size=1)
    differs = 0
    for (x, y), value in g.separation_statistic.items():
        given = g.separating_sets[(x, y)]
        level = len(given)
        columns = tuple(sorted((x, y) + given, key=order.get))
        joint = g.released_tables[level][columns]
        axes = [columns.index(c) for c in given + (x, y)]
        table = np.transpose(joint, axes).reshape(-1, joint.shape[columns.index(x)],
                                                  joint.shape[columns.index(y)])
        variance = law.variance(g.report().parts[level][2])
        assert value == pytest.approx(noisy_chisq(table, variance)[0], rel=1e-9), (x, y)
        if (x, y) in exact.separation_statistic:
            differs += value != exact.separation_statistic[(x, y)]
    assert differs  # the released value, not the exact one


@pytest.mark.parametrize("test, delta", [("tau", 0.0), ("g", 1e-6)])
def test_per_test_private_removed_edges_carry_their_noisy_value(test, delta):
    frame = chain()
    # tau ranks values: the codes as bounded numbers (unordered categories are refused)
    coding = (dict(categories=CATEGORIES) if test == "g" else
              dict(bounds={c: (0, 2) for c in NAMES}, bins=3))

    def release():
        return causal_graph(frame, 50.0, delta=delta, test=test, max_condition_size=1,
                            ledger=InMemoryLedger(uncapped=True), **coding)

    g = release()
    assert g.separating_sets and set(g.separation_statistic) == set(g.separating_sets)
    values = np.array(list(g.separation_statistic.values()))
    assert np.isfinite(values).all()
    # the noisy value the decision read lies where it removes the edge: |Z| below the
    # threshold for tau, G minus its threshold below 0 for the G-test
    limit = tau_threshold(0.05) if test == "tau" else 0.0
    assert (values < limit).all()
    # fresh noise in each release: a value read off the data without it (the
    # statistic or its margin) would repeat exactly
    again = release().separation_statistic
    shared = set(again) & set(g.separation_statistic)
    assert shared and all(again[k] != g.separation_statistic[k] for k in shared)
