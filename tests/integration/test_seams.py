"""The seams: every mechanism through the Dask backend on a real cluster, the
backend registry, the request's column order, exports and accessor registration."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import dpmic_dask as dm
from dpmic_dask.backends import backend_for
from dpmic_dask.backends.dask import DaskBackend
from dpmic_dask.backends.pandas import PandasBackend
from dpmic_dask.release.accessor import DPMICAccessor
from tests.integration.frames import BOUNDS, table

COLS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def cluster_client():
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.mark.parametrize("mechanism,delta", [("micr-gauss", 1e-6), ("micr-geom", 0.0),
                                             ("micr-lap", 0.0)])
def test_every_mechanism_runs_through_the_cluster(cluster_client, mechanism, delta):
    # at a huge eps the noise is far below the lattice of the values (or zero on counts),
    # so the cluster-side statistic must equal the exact one of the same counts
    df = table(6000)
    ddf = dd.from_pandas(df, npartitions=3)
    bounds = {k: BOUNDS[k] for k in COLS}
    result = ddf.dpmic.pairwise(1e9, bounds=bounds, delta=delta, mechanism=mechanism, B=12,
                                c=2, ledger=dm.InMemoryLedger(uncapped=True), progress=False)
    exact = df.dpmic.pairwise_nonprivate(bounds=bounds, B=12, c=2)
    assert result.mechanism == mechanism and result.statistic == "micr"
    # 8 noise scales (1e-6 at least): two independent draws differ by more with
    # probability below 1e-8 (micr-gauss here: sigma 2.4e-7, so 1e-6 alone failed
    # about once in 60 runs)
    scale = result.noise_scale if np.isfinite(result.noise_scale) else 0.0
    atol = max(1e-6, 8 * scale)
    np.testing.assert_allclose(result.values, exact.micr.to_numpy(), atol=atol)
    same_local = df.dpmic.pairwise(1e9, bounds=bounds, delta=delta, mechanism=mechanism, B=12,
                                   c=2, ledger=dm.InMemoryLedger(uncapped=True))
    np.testing.assert_allclose(result.values, same_local.values, atol=atol)


def test_columns_subset_keeps_the_requested_order():
    df = table(2000)
    bounds = {k: BOUNDS[k] for k in COLS}
    result = df.dpmic.pairwise(1e9, bounds=bounds, columns=["d", "a", "c"], B=8, c=1,
                               ledger=dm.InMemoryLedger(uncapped=True))
    assert result.columns == ("d", "a", "c")
    assert result.pairs == (("d", "a"), ("d", "c"), ("a", "c"))
    exact = df.dpmic.pairwise_nonprivate(bounds=bounds, B=8, c=1, columns=["d", "a", "c"])
    np.testing.assert_allclose(result.values, exact.micr.to_numpy(), atol=1e-6)


def test_backends_are_found_by_type_and_base_type():
    class MyFrame(pd.DataFrame):
        pass

    assert isinstance(backend_for(table(10)), PandasBackend)
    assert isinstance(backend_for(MyFrame({"a": [1.0]})), PandasBackend)
    assert isinstance(backend_for(dd.from_pandas(table(10), npartitions=1)), DaskBackend)
    with pytest.raises(dm.InvalidDataError, match="pandas or Dask"):
        backend_for(np.zeros((3, 2)))


def test_accessor_is_registered_on_pandas_and_dask_and_never_raises_on_init():
    assert isinstance(pd.DataFrame({"a": [1.0]}).dpmic, DPMICAccessor)
    assert isinstance(dd.from_pandas(pd.DataFrame({"a": [1.0]}), npartitions=1).dpmic,
                      DPMICAccessor)
    odd = DPMICAccessor(object())  # stores anything; problems surface when it is used
    with pytest.raises(dm.InvalidDataError, match="pandas or Dask"):
        odd.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)})


def test_public_names_are_exported():
    for name in dm.__all__:
        assert getattr(dm, name) is not None, name
    errors = [dm.BudgetExceededError, dm.BudgetMismatchError, dm.ClusterError, dm.DataReadError,
              dm.InvalidDataError, dm.InvalidParameterError, dm.LedgerError,
              dm.MissingValuesError, dm.RunClaimedError, dm.UnavailableError]
    assert all(issubclass(e, dm.DPMICError) for e in errors)
    assert issubclass(dm.PrivacyLeakWarning, UserWarning)
    assert dm.__version__.count(".") >= 2


def test_stage_log_records_carry_no_data(caplog):
    secret = 0.123456789
    df = table(3000)
    df.loc[7, "a"] = secret
    with caplog.at_level("INFO", logger="dpmic_dask"):
        result = df.dpmic.pairwise(1.0, bounds={k: BOUNDS[k] for k in COLS}, B=8, c=1,
                                   ledger=dm.InMemoryLedger(uncapped=True))
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("dpmic_dask")]
    assert any(m.startswith("validated: 4 columns, 6 pairs, micr-lap") for m in messages)
    assert any(m.startswith("counted 3000 rows of 4 columns in") for m in messages)
    assert any(result.charge_id in m and m.startswith("charged micr-lap") for m in messages)
    assert "released 6 values (micr-lap)" in messages
    text = "\n".join(messages)
    assert "0.1234" not in text and not any(f"{v:.4f}" in text for v in result.values)


def test_a_selection_with_a_cost_is_refused_not_left_uncharged():
    from dpmic_dask.privacy.accounting import PrivacyCost
    from dpmic_dask.privacy.selection import AllPairs
    from dpmic_dask.release.executor import run_charged
    from dpmic_dask.release.pipeline import release_pairs
    from dpmic_dask.release.request import pairwise_request

    class CostlyAll(AllPairs):
        @property
        def cost(self):
            return PrivacyCost(0.5)

    df = table(100)
    request = pairwise_request(df.dtypes, eps=1.0, bounds={k: BOUNDS[k] for k in COLS})
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match="selections that cost"):
        run_charged(release_pairs(df, request, selection=CostlyAll()), ledger=ledger)
    assert ledger.charges() == []
