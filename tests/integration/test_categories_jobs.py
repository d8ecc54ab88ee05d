"""Categorical columns in job files: ``columns.region.categories = [...]``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.cli import Exit
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.jobfiles import write_job

REGIONS = ["north", "south", "east"]


@pytest.fixture
def setup(tmp_path):
    gen = np.random.default_rng(2)  # test data only
    n = 4000
    region = gen.choice(["north", "south", "east", "west"], n)
    amount = np.array([{"north": 10, "south": 20, "east": 30}.get(r, 40) for r in region])
    frame = pd.DataFrame({"region": region, "amount": amount + gen.normal(0, 2, n),
                          "noise": gen.uniform(0, 1, n)})
    folder = tmp_path / "in"
    folder.mkdir()
    frame.iloc[: n // 2].to_parquet(folder / "part-0.parquet")
    frame.iloc[n // 2:].to_parquet(folder / "part-1.parquet")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(10.0))

    def job(categories=REGIONS, name="job.toml", region=None, **given):  # noqa: B006
        region = region or {"categories": categories}
        return write_job(tmp_path / name, name="regions", eps=2.0,
                         columns={"region": region, "amount": [0, 50], "noise": [0, 1]},
                         **given)

    return tmp_path, ledger, job



def test_a_categorical_column_in_a_job_file(setup):
    tmp_path, ledger, job = setup
    path = job()
    checked = invoke("validate", path)
    assert checked.exit_code == Exit.OK, checked.output
    ran = invoke("run", path, "--run-id", "cat-1")
    assert ran.exit_code == Exit.OK, ran.output
    out = pd.read_parquet(tmp_path / "out").set_index(["x", "y"])
    assert len(out) == 3
    assert out.loc[("region", "amount"), "mic"] > 0.8
    (record,) = SQLLedger(ledger).history("d")
    assert record.cost.epsilon == 2.0


def test_private_categories_in_a_job_file(setup):
    tmp_path, ledger, job = setup
    path = job(categories={"private": ["north", "south", "east", "mars"]})
    ran = invoke("run", path, "--run-id", "cat-2")
    assert ran.exit_code == Exit.OK, ran.output
    (record,) = SQLLedger(ledger).history("d")
    assert record.cost.epsilon == 2.0 and record.mechanism.startswith("categories-lap+")
    assert "private categories for ['region']" in record.description


@pytest.mark.parametrize("categories,words", [
    ("north", "must be a list"),
    ({"guess": ["a"]}, "must be a list,"),
])
def test_bad_category_lists_are_refused(setup, categories, words):
    _, _, job = setup
    bad = invoke("validate", job(categories=categories))
    assert bad.exit_code == Exit.INVALID and words in bad.output


def test_a_categorical_column_cannot_have_bounds(setup):
    _, _, job = setup
    path = job(region={"categories": ["north", "south"], "bounds": [0, 1]})
    bad = invoke("validate", path)
    assert bad.exit_code == Exit.INVALID and "does not apply to a categorical" in bad.output


def test_categories_from_the_values_that_occur_in_a_job_file(setup, tmp_path):
    out, _, job = setup
    ledger = f"sqlite:///{tmp_path / 'approx.db'}"
    SQLLedger(ledger).init("d", Budget(10.0, 1e-5))
    path = job(categories="private", privacy={"delta": 1e-5}, ledger=ledger)
    checked = invoke("validate", path)
    assert checked.exit_code == Exit.OK, checked.output
    ran = invoke("run", path, "--run-id", "cat-3")
    assert ran.exit_code == Exit.OK, ran.output
    (record,) = SQLLedger(ledger).history("d")
    assert record.mechanism.startswith("categories-lap-sel+")
    assert 0 < record.cost.approx_delta < 1e-5 and record.cost.epsilon == 2.0
    released = pd.read_parquet(out / "out").set_index(["x", "y"])
    assert released.loc[("region", "amount"), "mic"] > 0.8  # all four regions are common
    # a pure budget cannot hold the bad event: refused before anything is read
    pure = job(categories="private", name="pure.toml")
    bad = invoke("run", pure, "--run-id", "cat-4")
    assert bad.exit_code == Exit.INVALID and "delta > 0" in bad.output
