"""Causal discovery on a LocalCluster of worker processes: the level tables are
counted on the workers and match the in-process counts exactly."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

from dpmic_dask.causal import causal_graph, causal_graph_exact
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger


def frame(n=20_000, seed=3):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, n), rng.integers(0, 4, n)
    c = np.clip(np.rint((a + b) / 2 + rng.normal(0, 0.5, n)), 0, 3)
    d = np.where(rng.random(n) < 0.7, c, rng.integers(0, 4, n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d}).astype(float)


def test_causal_graph_on_worker_processes():
    data = frame()
    bounds = {k: (0.0, 4.0) for k in data}
    local = causal_graph_exact(data, test="tau", bounds=bounds, bins=4)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        ddf = dd.from_pandas(data, npartitions=5)
        remote = causal_graph_exact(ddf, test="tau", bounds=bounds, bins=4)
        ledger = InMemoryLedger()
        ledger.set_budget("d", Budget(2.0))
        private = causal_graph(ddf, 2.0, test="tau", bounds=bounds, bins=4, ledger=ledger,
                               dataset="d")
        remote_copula = causal_graph_exact(ddf, bounds=bounds)  # the default: copula
        private_copula = causal_graph(ddf, 2.0, bounds=bounds)
        # zCDP: the bins at released quantiles, their lookups shipped to the workers
        zcdp_copula = causal_graph(ddf, 2.0, delta=1e-6, bounds=bounds)
    local_copula = causal_graph_exact(data, bounds=bounds)
    # the exact copula: the marginal histograms' pass, then the grids on their quantiles
    assert remote_copula.report().test == "copula" and remote_copula.report().passes == 2
    assert zcdp_copula.released_bins is not None and zcdp_copula.report().passes == 2
    assert np.array_equal(remote_copula.released_tau.to_numpy(),
                          local_copula.released_tau.to_numpy())  # exact grids summed
    assert np.array_equal(remote_copula.graph, local_copula.graph)
    assert private_copula.report().passes == 2  # the margins' pass (row count), the grids
    assert np.array_equal(remote.graph, local.graph)
    assert remote.statistic == local.statistic  # the same exact counts, summed on workers
    assert remote.report().passes == local.report().passes == len(local.report().levels)
    assert len(ledger.charges("d")) == 1 and private.report().passes >= 1
