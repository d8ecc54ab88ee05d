"""Local model end to end: a planted table is randomized on the 'devices', written
to Parquet with its design, read back as pandas and as Dask, and estimated."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpmic_dask.ldp import pairwise, randomize, read_design, read_reports, write_reports
from dpmic_dask.ldp.estimate import mic_of_joint
from dpmic_dask.privacy.accounting import InMemoryLedger, using_ledger
from dpmic_dask.stats.counting import bins as equal_width_bins
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.testing import ENV_FLAG, seeded_noise

BOUNDS = {"x": (0.0, 1.0), "y": (-1.5, 1.5), "z": (0.0, 1.0), "w": (0.0, 1.0)}


def planted(n: int) -> pd.DataFrame:
    gen = np.random.default_rng(7)  # test data only
    x = gen.uniform(0, 1, n)
    return pd.DataFrame({
        "x": x,
        "y": np.sin(6 * x) + gen.normal(0, 0.2, n),  # strong, not monotone
        "z": gen.uniform(0, 1, n),  # independent of everything
        "w": gen.uniform(0, 1, n),  # independent of everything
    })


def coarse_target(df: pd.DataFrame, a: str, b: str, m: int, B: int, c: int) -> float:
    """Exact (non-private) MICr of the table on the same public grid."""
    i = equal_width_bins(df[a].to_numpy(), BOUNDS[a], m)
    j = equal_width_bins(df[b].to_numpy(), BOUNDS[b], m)
    return mic_of_joint(np.bincount(i * m + j, minlength=m * m) / len(df), m,
                        master_grid_family(B, c))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dpmic_dask.errors.PrivacyLeakWarning")
@pytest.mark.parametrize("eps", [2.0, 4.0])
def test_planted_table(tmp_path, monkeypatch, eps):
    """Seeded (NOT private) randomness, so that the outcome is reproducible; the
    secure path is exercised by the tests below and by tests/unit/test_ldp_*."""
    monkeypatch.setenv(ENV_FLAG, "1")
    df = planted(120_000)
    ledger = InMemoryLedger(uncapped=True)
    with using_ledger(ledger), seeded_noise(int(eps * 10), not_private=True):
        reports = randomize(df, eps, bounds=BOUNDS)
        path = tmp_path / "reports.parquet"
        write_reports(reports, path)
        result = pairwise(read_reports(path))
    assert ledger.charges() == []  # the local model charges nothing centrally
    table = result.to_pandas().set_index(["x", "y"])
    design = reports.attrs["dpmic_ldp"]
    strong = table.loc[("x", "y")]
    target = coarse_target(df, "x", "y", design["bins"], design["B"], design["c"])
    assert strong["mic"] > 0.5
    # one interval of many: allow 1.5 half-widths (coverage is measured in the benchmark)
    assert abs(strong["mic"] - target) <= 1.5 * strong["ci95"]
    for pair in [("x", "z"), ("x", "w"), ("z", "w"), ("y", "z")]:
        row = table.loc[pair]
        truth = coarse_target(df, *pair, design["bins"], design["B"], design["c"])
        assert truth < 0.01  # the sample's own dependence on the grid is tiny
        assert abs(row["mic"] - truth) <= 1.5 * row["ci95"], (pair, row["mic"], row["ci95"])
        assert row["mic"] < 0.05
        assert row["raw_mic"] > row["mic"]  # the plug-in was biased upward, corrected
    text = result.report()
    assert "Local model" in text and f"epsilon = {eps:g} per person" in text
    assert "nothing is charged" in text and text.startswith("NOT PRIVATE")
    assert set(table["model"]) == {"local"}


def test_dask_equals_pandas(tmp_path):
    df = planted(20_000)
    reports = randomize(df, 1.0, bounds=BOUNDS, protocol="olh")
    path = tmp_path / "reports.parquet"
    write_reports(reports, path)
    local = pairwise(reports, replicates=20).to_pandas()
    ddf = dd.from_pandas(reports, npartitions=7)
    spread = pairwise(ddf, design=reports.attrs["dpmic_ldp"], replicates=20).to_pandas()
    pd.testing.assert_frame_equal(local, spread)
    from_file = pairwise(dd.read_parquet(path), design=read_design(path), replicates=20)
    pd.testing.assert_frame_equal(local, from_file.to_pandas())


def test_plot_and_matrix(tmp_path):
    import matplotlib  # noqa: F401  (the test extra has it: a missing one fails)
    df = planted(5_000)
    result = pairwise(randomize(df, 2.0, bounds=BOUNDS), replicates=20)
    m = result.matrix()
    assert m.shape == (4, 4) and np.isnan(np.diag(m.to_numpy())).all()
    result.plot(path=tmp_path / "local.png")
    assert (tmp_path / "local.png").stat().st_size > 0
