"""A SQL output table on a real PostgreSQL server whose schema drifts between
versions of a job: checked (and widened) before the charge, never after."""

import pandas as pd
from click.testing import CliRunner
from sqlalchemy import text

from dpmic_dask.accounting import Budget
from dpmic_dask.cli import Exit, main
from dpmic_dask.jobio import sql_engine
from dpmic_dask.ledger import SQLLedger
from tests.integration.test_jobs import JOB, write_input


def _job(tmp_path, postgres_url, name, table, statistics='["mic"]'):
    text_ = JOB.format(input=tmp_path / "in", output="unused", ledger=postgres_url, eps=1.0)
    text_ = text_.replace('path = "unused"', f'sql_url = "{postgres_url}"\nsql_table = "{table}"')
    text_ = text_.replace("eps = 1.0", f"eps = 1.0\nstatistics = {statistics}")
    path = tmp_path / name
    path.write_text(text_)
    return path


def test_a_newer_job_adds_its_columns_to_the_output_table(postgres_url, tmp_path):
    write_input(tmp_path / "in")
    SQLLedger(postgres_url).init("d", Budget(5.0))
    run = lambda path, run_id: CliRunner().invoke(main, ["run", str(path), "--run-id", run_id])  # noqa: E731
    v1 = _job(tmp_path, postgres_url, "v1.toml", "dpmic_releases")
    first = run(v1, "day-1")
    assert first.exit_code == 0, first.output
    # version 2 of the same job also releases Kendall's tau: the table gains the
    # new columns (nullable) before the charge, and the night's rows are written
    v2 = _job(tmp_path, postgres_url, "v2.toml", "dpmic_releases", '["mic", "tau"]')
    second = run(v2, "day-2")
    assert second.exit_code == 0, second.output
    out = pd.read_sql_table("dpmic_releases", sql_engine(postgres_url))
    assert len(out) == 6 and {"tau", "tau_ci95", "nonlinearity"} <= set(out.columns)
    assert out[out.run_id == "day-1"].tau.isna().all()
    assert out[out.run_id == "day-2"].tau.between(-1, 1).all()
    assert len(SQLLedger(postgres_url).history("d")) == 2
    # a table whose column cannot hold the job's values is refused before the charge
    with sql_engine(postgres_url).begin() as conn:
        conn.execute(text('CREATE TABLE other (run_id TEXT, mic TIMESTAMP)'))
    clash = run(_job(tmp_path, postgres_url, "v3.toml", "other"), "day-3")
    assert clash.exit_code == Exit.INVALID, clash.output
    assert "column 'mic'" in clash.output and "TIMESTAMP" in clash.output
    assert len(SQLLedger(postgres_url).history("d")) == 2
    # a table with a NOT NULL column the job does not write, likewise
    with sql_engine(postgres_url).begin() as conn:
        conn.execute(text("CREATE TABLE strict (run_id TEXT, owner TEXT NOT NULL)"))
    strict = run(_job(tmp_path, postgres_url, "v4.toml", "strict"), "day-4")
    assert strict.exit_code == Exit.INVALID and "'owner' is NOT NULL" in strict.output
    assert len(SQLLedger(postgres_url).history("d")) == 2
