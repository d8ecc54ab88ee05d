"""Job files with column kinds: bounds as TOML dates, casts, booleans, nulls = "drop";
``dpmic validate --schema`` refuses from the input's schema what ``run`` would."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobs import load_job
from tests.cli import invoke
from tests.jobfiles import write_job

SECRET = "tok_live_93f1c2"


def customer_table(n=6000, seed=2):
    gen = np.random.default_rng(seed)  # test data only
    days = gen.uniform(0, 730, n)
    return pd.DataFrame({
        "signup": pd.Timestamp("2023-01-01") + pd.to_timedelta(days, unit="D"),
        "churned": (days < 365) ^ (gen.uniform(size=n) < 0.1),
        "amount": pd.array(np.where(gen.uniform(size=n) < 0.1, None,
                                    np.round(50 + 30 * np.sin(days / 58)).astype(int)),
                           dtype="Int64"),
        "epoch_s": (1_672_531_200 + days * 86400).astype("int64"),
        "stamp_text": (pd.Timestamp("2023-01-01") + pd.to_timedelta(days, unit="D")).strftime(
            "%Y-%m-%dT%H:%M:%S"),
        "token": [SECRET] * n,
    })


def kinds_job(folder, columns, eps=2.0, **privacy) -> str:
    """The job file over ``folder/data.parquet`` (dataset "kinds"); ``privacy`` are
    the keys of its [privacy] section besides ``eps``."""
    return str(write_job(folder / "job.toml", name="kinds", dataset="kinds",
                         input={"paths": [str(folder / "data.parquet")]}, columns=columns,
                         eps=eps, privacy=privacy))


START, END = dt.date(2023, 1, 1), dt.date(2025, 1, 1)
MIXED = {
    "signup": [START, END],
    "churned": {"kind": "boolean"},
    "amount": [0, 100],
    "epoch_s": {"kind": "timestamp", "unit": "s",
                "bounds": [dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc), END]},
    "stamp_text": {"kind": "timestamp", "bounds": [START, END]},
}


@pytest.fixture()
def folder(tmp_path):
    customer_table().to_parquet(tmp_path / "data.parquet")
    return tmp_path


def validate_and_run(folder, job) -> pd.DataFrame:
    """``validate --schema``, a budget of eps 5 for dataset "kinds", ``run``: each
    exits 0; the released rows, indexed by pair."""
    checked = invoke(["validate", "--schema", job])
    assert checked.exit_code == Exit.OK, checked.output
    init = invoke(["budget", "init", "--ledger", f"sqlite:///{folder / 'ledger.db'}",
                                "--dataset", "kinds", "--eps", "5"])
    assert init.exit_code == Exit.OK, init.output
    ran = invoke(["run", job, "--run-id", "one"])
    assert ran.exit_code == Exit.OK, ran.output
    (written,) = (folder / "out").glob("*.parquet")
    return pd.read_parquet(written).set_index(["x", "y"])


def test_a_mixed_job_validates_and_runs(folder):
    job = kinds_job(folder, MIXED, nulls="drop", min_rows=4000)
    loaded = load_job(job)
    assert loaded.kinds["epoch_s"] == {"kind": "timestamp", "unit": "s"}
    assert loaded.bounds["churned"] == (0, 1) and loaded.min_rows == 4000
    assert invoke(["validate", job]).exit_code == Exit.OK
    out = validate_and_run(folder, job)
    assert (out.n == 4000).all()  # the public minimum, not the rows kept
    # the same instant three ways: read alike (exact MIC about 1; churned about 0.49).
    # Margins of 3 ci95: a fixed 0.9 failed by chance in about 2% of runs per pair
    # (Laplace noise of scale 0.031); a column read wrongly (about 0) still fails
    for pair in [("signup", "epoch_s"), ("signup", "stamp_text")]:
        assert out.mic[pair] > 0.9 - 3 * out.ci95[pair] > 0.4, pair
    assert out.mic[("signup", "churned")] > 0.45 - 3 * out.ci95[("signup", "churned")] > 0.05


def test_a_parquet_decimal_column_is_a_number_in_a_job(tmp_path):
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(34)  # test data only
    cents = gen.integers(0, 100_000, 4000)
    amount = [None if k % 50 == 0 else decimal.Decimal(int(c)).scaleb(-2)
              for k, c in enumerate(cents)]
    spend = 2 * cents / 100 + gen.normal(0, 20, len(cents))
    pq.write_table(pa.table({"amount": pa.array(amount, type=pa.decimal128(12, 2)),
                             "spend": spend, "token": [SECRET] * len(cents)}),
                   tmp_path / "data.parquet")
    job = kinds_job(tmp_path, {"amount": {"bounds": [0, 1000], "fill": 500},
                               "spend": {"bounds": [-100, 2100], "fill": 0}}, nulls="fill")
    out = validate_and_run(tmp_path, job)
    assert out.mic[("amount", "spend")] > 0.5 and (out.n == 4000).all()
    # without fill values the nulls are refused, before the charge
    refused = kinds_job(tmp_path, {"amount": [0, 1000], "spend": [-100, 2100]})
    ran = invoke(["run", refused, "--run-id", "two"])
    assert ran.exit_code == Exit.INVALID and "'amount'" in ran.output and "missing" in ran.output
    assert SECRET not in ran.output
    left = invoke(["budget", "show", "--ledger", f"sqlite:///{tmp_path / 'ledger.db'}",
                                "--dataset", "kinds"])
    assert left.exit_code == Exit.OK and "in 1 release(s)" in left.output  # the first run only


@pytest.mark.parametrize("columns,refusal", [
    # a string column given numeric bounds: no kind reads it (named, no value)
    ({"token": [0, 1], "amount": [0, 100]}, "'token'"),
    # a time column given bounds that are not times or numbers
    ({"signup": ["soon", "later"], "amount": [0, 100]}, "columns.signup.bounds"),
    # an integer column cast with a unit but bounds that are not times
    ({"epoch_s": {"kind": "timestamp", "unit": "s", "bounds": [True, False]},
      "amount": [0, 100]}, "columns.epoch_s.bounds"),
])
def test_validate_with_the_schema_refuses_what_run_would(folder, columns, refusal):
    job = kinds_job(folder, columns)
    checked = invoke(["validate", "--schema", job])
    assert checked.exit_code == Exit.INVALID, checked.output
    assert refusal in checked.output and SECRET not in checked.output
    assert len(checked.output.strip().splitlines()) == 1
    assert invoke(["budget", "init", "--ledger", f"sqlite:///{folder / 'ledger.db'}",
                   "--dataset", "kinds", "--eps", "5"]).exit_code == Exit.OK
    ran = invoke(["run", job, "--run-id", "x"])
    assert ran.exit_code == Exit.INVALID, ran.output
    assert refusal in ran.output and SECRET not in ran.output
    assert "remaining budget" not in ran.output


def test_job_file_kind_keys_are_checked(tmp_path):
    (tmp_path / "data.parquet").write_bytes(b"")
    bad = [({"kind": "colour", "bounds": [0, 1]}, "columns.a.kind must be one of"),
           ({"unit": "s", "bounds": [0, 1]}, "columns.a.unit needs columns.a.kind"),
           ({"kind": "number", "unit": "s", "bounds": [0, 1]}, "columns.a.unit must be one of"),
           ([0, 1], "needs min_rows")]
    for a, message in bad:
        privacy = {"nulls": "drop"} if "min_rows" in message else {}
        with pytest.raises(Exception, match=message):
            load_job(kinds_job(tmp_path, {"a": a, "b": [0, 1]}, eps=1.0, **privacy))
    # numbers written as text were refused as "not dates or times for a timestamp
    # column" (a kind the user never named)
    with pytest.raises(Exception, match="holds a number written as text: write numbers "
                                        "without quotes"):
        load_job(kinds_job(tmp_path, {"a": ["0", "1"], "b": [0, 1]}, eps=1.0))


def epoch(kind, unit=None):
    """Columns of a time and epoch seconds cast to ``kind`` (with ``unit``, if given)."""
    return {"signup": [START, END], "epoch_s": {"kind": kind, "unit": unit, "bounds": [START, END]}}


@pytest.mark.parametrize("kind", ["timestamp", "date"])
def test_an_epoch_column_cast_without_its_unit_is_refused_before_any_charge(folder, kind):
    """Issue #34: int64 epoch seconds cast without a unit were read as nanoseconds
    (one bin, a value of 0 released and charged, validate said ok)."""
    from dpmic_dask.privacy.accounting import ledger_from_url

    url = f"sqlite:///{folder / 'ledger.db'}"
    job = kinds_job(folder, epoch(kind))
    assert invoke(["budget", "init", "--ledger", url, "--dataset", "kinds",
                                "--eps", "5"]).exit_code == Exit.OK
    refusal = (f"column 'epoch_s' holds int64 numbers; a cast to {kind} needs their unit: "
               f"kinds={{'epoch_s': ('{kind}', 's')}} (in a job file columns.epoch_s.unit = "
               '"s"')
    checked = invoke(["validate", "--schema", job])
    assert checked.exit_code == Exit.INVALID, checked.output
    assert refusal in checked.output and len(checked.output.strip().splitlines()) == 1
    assert "1672" not in checked.output and "1673" not in checked.output  # no value
    ran = invoke(["run", job, "--run-id", "no-unit"])
    assert ran.exit_code == Exit.INVALID, ran.output
    assert refusal in ran.output and "remaining budget" not in ran.output
    assert ledger_from_url(url).spent("kinds") == 0
    assert not (folder / "out").exists() or not list((folder / "out").glob("*.parquet"))
    # with its unit the same job validates, runs and releases the relation
    job = kinds_job(folder, epoch(kind, "s"))
    checked = invoke(["validate", "--schema", job])
    assert checked.exit_code == Exit.OK, checked.output
    ran = invoke(["run", job, "--run-id", "unit"])
    assert ran.exit_code == Exit.OK, ran.output
    assert ledger_from_url(url).spent("kinds") == 2
    (written,) = (folder / "out").glob("*.parquet")
    out = pd.read_parquet(written).set_index(["x", "y"])
    assert out.mic[("signup", "epoch_s")] > 0.9
