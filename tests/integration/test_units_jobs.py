"""Job files per unit: ``[privacy] unit`` and ``max_rows_per_unit``, a budget made
with ``dpmic budget init --unit``, the output and the ledger carrying the unit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobs import JobError, load_job
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.jobfiles import write_job

UNIT = {"unit": "customer_id", "max_rows_per_unit": 8}


@pytest.fixture
def setup(tmp_path):
    gen = np.random.default_rng(2)  # test data only
    sizes = gen.integers(1, 30, 400)
    cid = np.repeat([f"c{i:04d}" for i in range(400)], sizes)
    a = np.repeat(gen.random(400), sizes)
    frame = pd.DataFrame({"customer_id": cid, "a": a,
                          "b": np.sin(6 * a) + 0.05 * gen.normal(size=cid.size)})
    (tmp_path / "in").mkdir()
    frame.iloc[: len(frame) // 2].to_parquet(tmp_path / "in" / "part-0.parquet")
    frame.iloc[len(frame) // 2:].to_parquet(tmp_path / "in" / "part-1.parquet")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    made = invoke("budget", "init", "--ledger", ledger, "--dataset", "sales", "--eps", 5,
                  "--unit", "customer_id")
    assert made.exit_code == Exit.OK and "per customer_id" in made.output, made.output
    assert invoke("budget", "init", "--ledger", ledger, "--dataset", "rows", "--eps", 5).exit_code == Exit.OK

    def job(dataset="sales", unit=UNIT, b=(-1.5, 1.5)):  # noqa: B006 - never changed
        return write_job(tmp_path / "job.toml", name="per-customer", dataset=dataset,
                         columns={"a": [0, 1], "b": b}, eps=2.0, privacy=unit,
                         output={"path": str(tmp_path / "out"), "format": "csv"})

    return tmp_path, ledger, job


def test_a_job_per_customer_runs_and_says_so(setup):
    tmp_path, ledger, job = setup
    assert load_job(job()).privacy_unit == ("customer_id",)
    ran = invoke("run", job(), "--run-id", "r1")
    assert ran.exit_code == Exit.OK, ran.output
    out = pd.concat(pd.read_csv(p) for p in sorted((tmp_path / "out").glob("*.csv")))
    assert list(out.privacy_unit) == ["customer_id"] and list(out.max_rows_per_unit) == [8]
    assert "customer_id" not in set(out.x) | set(out.y)
    (record,) = SQLLedger(ledger).history("sales")
    assert "per customer_id, at most 8 rows each" in record.description
    assert SQLLedger(ledger).budget_for("sales").privacy_unit == "customer_id"


def test_a_job_of_another_unit_is_refused_before_reading(setup):
    _, ledger, job = setup
    row_level = invoke("run", job(unit={}), "--run-id", "r2")
    # an invalid job, not a broken ledger: exit 2, one line
    assert row_level.exit_code == Exit.INVALID and "one privacy unit" in row_level.output
    assert len(row_level.output.strip().splitlines()) == 1
    per_unit_on_rows = invoke("run", job(dataset="rows"), "--run-id", "r3")
    assert per_unit_on_rows.exit_code == Exit.INVALID
    assert "one privacy unit" in per_unit_on_rows.output
    assert len(per_unit_on_rows.output.strip().splitlines()) == 1
    assert SQLLedger(ledger).history("sales") == [] == SQLLedger(ledger).history("rows")
    shown = invoke("budget", "show", "--ledger", ledger, "--dataset", "sales")
    assert shown.exit_code == Exit.OK and "unit:      customer_id " in shown.output
    shown = invoke("budget", "show", "--ledger", ledger, "--dataset", "rows")
    assert shown.exit_code == Exit.OK and "unit:      one row " in shown.output


def test_a_unit_mismatch_is_still_a_ledger_error(setup):
    from dpmic_dask.batch.clibase import exit_code
    from dpmic_dask.errors import LedgerError, UnitMismatchError
    from dpmic_dask.release.units import check_ledger_unit

    _, ledger, _ = setup
    with pytest.raises(UnitMismatchError, match="one privacy unit") as info:
        check_ledger_unit(SQLLedger(ledger), "sales", None)
    assert isinstance(info.value, LedgerError) and exit_code(info.value) == Exit.INVALID
    assert exit_code(LedgerError("corrupt")) == Exit.LEDGER


@pytest.mark.parametrize("unit,match", [
    ({"unit": "customer_id"}, "go together"),
    ({"max_rows_per_unit": 4}, "go together"),
    ({"unit": 3, "max_rows_per_unit": 4}, "column name"),
    ({"unit": "a", "max_rows_per_unit": 4}, "never released"),
])
def test_bad_unit_keys_are_refused(setup, unit, match):
    _, _, job = setup
    with pytest.raises(JobError, match=match):
        load_job(job(unit=unit))


def test_a_job_per_customer_with_private_bounds_runs_and_charges_once(setup):
    tmp_path, ledger, job = setup
    ran = invoke("run", job(b={"bounds": "private"}), "--run-id", "rb")
    assert ran.exit_code == Exit.OK, ran.output
    out = pd.concat(pd.read_csv(p) for p in sorted((tmp_path / "out").glob("*.csv")))
    assert list(out.privacy_unit) == ["customer_id"]
    (record,) = SQLLedger(ledger).history("sales")
    assert "private bounds" in record.description
    assert "per customer_id, at most 8 rows each" in record.description
