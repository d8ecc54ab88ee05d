"""SQL columns declared as times: read from times or ISO 8601 text only, never
from numbers (no unit is declared) nor by guessing a text layout; a refusal
charges nothing and quotes no value."""

import datetime as dt
import sqlite3

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobio import JobIOError, conform
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.jobfiles import write_job

ROWS = 3000
START = pd.Timestamp("2024-01-01")


def _warehouse(tmp_path, stored):
    """A SQLite table ``t(x REAL, ts <declared>)`` where ``x`` follows the day of
    ``ts`` closely; ``stored(day)`` is what the ``ts`` column holds per row."""
    gen = np.random.default_rng(3)  # test data only
    day = gen.integers(0, 365, ROWS)
    x = day + gen.normal(0, 3, ROWS)
    path = tmp_path / "in.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x REAL, ts TIMESTAMP)")
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(float(x[i]), stored(int(day[i]))) for i in range(ROWS)])
    con.commit()
    con.close()
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(5.0))
    job = write_job(tmp_path / "job.toml", ledger=ledger,
                    input={"sql_url": f"sqlite:///{path}", "sql_table": "t"},
                    columns={"x": [-20, 400],
                             "ts": [dt.date(2024, 1, 1), dt.date(2025, 1, 1)]})
    return job, ledger


def _epoch_seconds(day):
    return int((START + pd.Timedelta(days=day)).timestamp())


def _day_first(day):
    return (START + pd.Timedelta(days=day)).strftime("%d/%m/%Y")


def _iso(day):
    return (START + pd.Timedelta(days=day)).strftime("%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize("stored, words", [
    (_epoch_seconds, "holds numbers"),
    (_day_first, "ISO 8601 text only"),
])
def test_a_time_column_holding_numbers_or_other_layouts_is_refused(tmp_path, stored, words):
    job, ledger = _warehouse(tmp_path, stored)
    result = invoke("run", job, "--run-id", "r1")
    assert result.exit_code == Exit.INVALID, result.output
    assert words in result.output and "'ts'" in result.output
    # no value the column holds appears in the message
    assert not any(str(stored(day)) in result.output for day in range(365))
    assert SQLLedger(ledger).history("d") == []


def test_a_time_column_in_iso_text_is_read_as_its_times(tmp_path):
    job, ledger = _warehouse(tmp_path, _iso)
    result = invoke("run", job, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    out = pd.concat(pd.read_parquet(f) for f in sorted((tmp_path / "out").rglob("*.parquet")))
    # x follows the day closely: read as its times, the pair's MIC is near 1 (the
    # noise at eps = 1 and 3,000 rows is about 0.1; read as 1970 it was near 0)
    assert float(out.mic.iloc[0]) > 0.6
    assert len(SQLLedger(ledger).history("d")) == 1


def _iso_offset(day):
    return (START + pd.Timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%S+01:00")


def test_a_time_column_in_iso_text_with_offsets_is_read_as_its_instants(tmp_path):
    """SQLite keeps what was written: ISO text with an offset in a column typed
    TIMESTAMP was refused as not ISO 8601 (the very layout the message gave as an
    example). Read as the instants it names."""
    job, ledger = _warehouse(tmp_path, _iso_offset)
    result = invoke("run", job, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    out = pd.concat(pd.read_parquet(f) for f in sorted((tmp_path / "out").rglob("*.parquet")))
    assert float(out.mic.iloc[0]) > 0.6
    mixed = pd.DataFrame({"ts": ["2024-02-01T09:30:00+01:00", "2024-02-01 09:30:00", None]})
    read = conform(mixed, {"ts": "datetime64[us]"}).ts
    assert list(read.iloc[:2]) == [pd.Timestamp("2024-02-01 08:30"),
                                   pd.Timestamp("2024-02-01 09:30")]
    assert read.isna().iloc[2]


def test_conform_reads_times_and_iso_text_and_refuses_numbers():
    times = pd.DataFrame({"ts": pd.Series([dt.datetime(2024, 2, 1, 9, 30), None],
                                          dtype=object)})
    assert conform(times, {"ts": "datetime64[us]"}).ts.iloc[0] == pd.Timestamp("2024-02-01 09:30")
    offset = pd.DataFrame({"ts": ["2024-02-01T09:30:00+01:00"]})
    assert (conform(offset, {"ts": "datetime64[us, UTC]"}).ts.iloc[0]
            == pd.Timestamp("2024-02-01 08:30", tz="UTC"))
    for held in ([1706745600, 1706832000], [1.5e9, None],
                 pd.Series([dt.datetime(2024, 1, 1), 1706745600], dtype=object)):
        for target in ("datetime64[us]", "date32[pyarrow]", "timedelta64[us]"):
            with pytest.raises(JobIOError, match="holds numbers") as info:
                conform(pd.DataFrame({"ts": held}), {"ts": target})
            assert "1706745600" not in str(info.value)
    with pytest.raises(JobIOError, match="ISO 8601") as info:
        conform(pd.DataFrame({"ts": ["02/01/2024"]}), {"ts": "datetime64[us]"})
    assert "02/01" not in str(info.value)
    # pandas reads "now" and "today" as the clock when it converts them: refused
    for word in ("now", "today"):
        with pytest.raises(JobIOError, match="ISO 8601") as info:
            conform(pd.DataFrame({"ts": ["2024-02-01", word]}), {"ts": "datetime64[us]"})
        assert word not in str(info.value).lower().replace("know", "")


def test_a_query_column_without_a_reported_type_takes_the_jobs_declared_kind(tmp_path):
    """SQLite reports no type for a query's columns: they were assumed numeric, so
    a column of dates with date bounds was refused as "bounds must be two finite
    real numbers". The job's own declarations give the type (dates here)."""
    job, ledger = _warehouse(tmp_path, _iso)
    text = job.read_text()
    job.write_text(text.replace('sql_table = "t"', 'sql_query = "SELECT x, ts FROM t"'))
    assert "sql_query" in job.read_text()
    result = invoke("run", job, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    out = pd.concat(pd.read_parquet(f) for f in sorted((tmp_path / "out").rglob("*.parquet")))
    assert float(out.mic.iloc[0]) > 0.6


def test_a_query_column_declared_boolean_is_read_from_zero_and_one(tmp_path):
    """SQLite reports no type for a query's columns: a job declaring a 0/1 column
    boolean is read as booleans (a value other than 0 and 1 is refused before the
    charge), as it was before query columns took the job's declared kinds."""
    path = tmp_path / "flags.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x REAL, flag INTEGER)")
    gen = np.random.default_rng(3)  # test data only
    flags = gen.integers(0, 2, ROWS)
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(float(f + gen.normal(0, 0.1)), int(f)) for f in flags])
    con.commit()
    con.close()
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(5.0))
    job = write_job(tmp_path / "job.toml", ledger=ledger,
                    input={"sql_url": f"sqlite:///{path}",
                           "sql_query": "SELECT x, flag FROM t"},
                    columns={"x": [-1, 2]}, replace={
                        "x = { bounds = [-1, 2] }":
                        'x = { bounds = [-1, 2] }\nflag = { kind = "boolean" }'})
    result = invoke("run", job, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    out = pd.concat(pd.read_parquet(f) for f in sorted((tmp_path / "out").rglob("*.parquet")))
    assert float(out.mic.iloc[0]) > 0.6
