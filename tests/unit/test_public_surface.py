"""The public surface: one spelling per statistic, ``causal_graph`` a declared
method of ``frame.dpmic``, and one name per kind of plan."""

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.causal import causal_graph
from dpmic_dask.release.accessor import DPMICAccessor
from tests.jobfiles import write_job

BOUNDS = {"a": (0, 1), "b": (0, 1)}


def frame(n=400):
    gen = np.random.default_rng(3)
    a = gen.uniform(0, 1, n)
    return pd.DataFrame({"a": a, "b": np.clip(a + gen.normal(0, 0.1, n), 0, 1)})


@pytest.mark.parametrize("method", ["pairwise", "plan", "top_pairs", "pairs_above"])
def test_tau_is_a_deprecated_spelling_of_tau_a_that_warns_at_the_callers_line(method):
    df = frame()
    ledger = dm.InMemoryLedger(uncapped=True)
    call = {
        "pairwise": lambda s: df.dpmic.pairwise(1.0, bounds=BOUNDS, B=8, c=2, statistics=s,
                                                ledger=ledger),
        "plan": lambda s: df.dpmic.plan(1.0, bounds=BOUNDS, B=8, c=2, statistics=s),
        "top_pairs": lambda s: df.dpmic.top_pairs(1, 1.0, bounds=BOUNDS, B=8, c=2,
                                                  statistics=s, ledger=ledger),
        "pairs_above": lambda s: df.dpmic.pairs_above(0.5, 1.0, bounds=BOUNDS, max_pairs=1,
                                                      B=8, c=2, statistics=s, ledger=ledger),
    }[method]
    with pytest.warns(FutureWarning, match="'tau' is deprecated.*'tau_a'") as record:
        old = call(("mic", "tau"))
    assert [w.filename for w in record if w.category is FutureWarning] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = call(("mic", "tau_a"))  # the new spelling is silent
    assert type(old) is type(new)


def test_tau_in_a_job_file_warns_and_means_tau_a(tmp_path):
    def job(statistics):
        return write_job(tmp_path / f"job-{statistics}.toml", name="j",
                         input={"paths": [f"{tmp_path}/*.parquet"]},
                         columns={"a": [0, 1], "b": [0, 1]},
                         privacy={"statistics": ["mic", statistics]},
                         output={"path": f"{tmp_path}/out"}, cluster=None,
                         ledger=f"sqlite:///{tmp_path}/l.db")

    with pytest.warns(FutureWarning, match="privacy.statistics: 'tau' is deprecated"):
        old = load_job(job("tau"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = load_job(job("tau_a"))
    assert old.statistics == new.statistics


def test_causal_graph_is_a_declared_method_of_the_accessor():
    method = DPMICAccessor.__dict__["causal_graph"]
    assert inspect.isfunction(method) and "CPDAG" in method.__doc__
    assert "causal_graph" in dir(frame().dpmic)
    df = frame(2_000)
    ledger = dm.InMemoryLedger(uncapped=True)
    g = df.dpmic.causal_graph(1e6, bounds=BOUNDS, test="tau", bins=4, ledger=ledger)
    direct = causal_graph(df, 1e6, bounds=BOUNDS, test="tau", bins=4, ledger=ledger)
    assert type(g) is type(direct) and list(g.edges.columns) == list(direct.edges.columns)


def test_the_mechanisms_noise_plan_is_plan_noise_and_the_old_name_warns():
    import dpmic_dask.privacy.mechanisms as mechanisms
    from dpmic_dask.release.plan import plan_release

    assert "plan_release" not in mechanisms.__all__ and "plan_noise" in mechanisms.__all__
    with pytest.warns(FutureWarning, match="use plan_noise"):
        old = mechanisms.plan_release
    assert old is mechanisms.plan_noise and old is not plan_release


def test_dir_lists_what_the_docs_teach_and_nothing_else():
    """``dir(dpmic_dask)`` is ``__all__`` (submodules stay importable, unlisted), and
    every name in it is taught by the README or docs/api.md."""
    from pathlib import Path

    assert dir(dm) == sorted([*dm.__all__, "__version__"])
    assert "stats" not in dir(dm) and dm.stats.exact.mice is dm.mice  # importable by name
    root = Path(dm.__file__).resolve().parent.parent
    taught = (root / "README.md").read_text() + (root / "docs" / "api.md").read_text()
    assert [name for name in dm.__all__ if name not in taught] == []


def test_a_results_parquet_file_carries_its_charge_and_report(tmp_path):
    """``to_parquet`` wrote the bare table: no charge id, and with private bounds
    nothing of the bounds the values were computed at (a job's output has both).
    The file's metadata holds the charge id and the report."""
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(1)  # test data only
    a = gen.normal(size=50_000)
    frame = pd.DataFrame({"a": a, "b": a + gen.normal(size=a.size)})
    result = frame.dpmic.pairwise(eps=2.0, bounds="private", columns=["a", "b"],
                                  ledger=InMemoryLedger(uncapped=True))
    result.to_parquet(tmp_path / "r.parquet")
    meta = pq.read_schema(tmp_path / "r.parquet").metadata
    assert meta[b"dpmic.charge_id"].decode() == result.privacy.charge_id
    assert meta[b"dpmic.report"].decode() == result.report()
    assert "Private bounds used: a [" in result.report()
    back = pd.read_parquet(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(back, result.to_pandas())
    result.to_parquet("memory://results/r.parquet")  # an fsspec URL, as pandas takes
    pd.testing.assert_frame_equal(pd.read_parquet("memory://results/r.parquet"),
                                  result.to_pandas())
