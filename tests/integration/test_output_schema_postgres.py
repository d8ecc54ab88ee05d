"""A SQL output table on a real PostgreSQL server whose schema drifts between
versions of a job: checked (and widened) before the charge, never after."""

import uuid

import pandas as pd
import psycopg
from sqlalchemy import inspect, text

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobio import sql_engine
from dpmic_dask.batch.joboutput import check_output
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.integration.test_jobs import write_input
from tests.jobfiles import write_job


def _job(tmp_path, postgres_url, name, table, statistics=("mic",), **sections):
    return write_job(tmp_path / name, ledger=postgres_url,
                     output={"sql_url": postgres_url, "sql_table": table},
                     privacy={"statistics": list(statistics)}, **sections)


def test_a_newer_job_adds_its_columns_to_the_output_table(postgres_url, tmp_path):
    write_input(tmp_path / "in")
    SQLLedger(postgres_url).init("d", Budget(5.0))
    run = lambda path, run_id: invoke("run", path, "--run-id", run_id)  # noqa: E731
    v1 = _job(tmp_path, postgres_url, "v1.toml", "dpmic_releases")
    first = run(v1, "day-1")
    assert first.exit_code == 0, first.output
    # version 2 of the same job also releases Kendall's tau: the table gains the
    # new columns (nullable) before the charge, and the night's rows are written
    v2 = _job(tmp_path, postgres_url, "v2.toml", "dpmic_releases", ("mic", "tau_a"))
    second = run(v2, "day-2")
    assert second.exit_code == 0, second.output
    out = pd.read_sql_table("dpmic_releases", sql_engine(postgres_url))
    assert len(out) == 6 and {"tau_a", "tau_a_ci95", "nonlinearity"} <= set(out.columns)
    assert out[out.run_id == "day-1"].tau_a.isna().all()
    assert out[out.run_id == "day-2"].tau_a.between(-1, 1).all()
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


def test_a_narrow_column_is_refused_before_the_charge(postgres_url, tmp_path):
    write_input(tmp_path / "in")
    SQLLedger(postgres_url).init("d", Budget(5.0))
    run = lambda path, run_id: invoke("run", path, "--run-id", run_id)  # noqa: E731
    for table, column in (("narrow", "job VARCHAR(3)"), ("small", "n SMALLINT")):
        with sql_engine(postgres_url).begin() as conn:
            conn.execute(text(f"CREATE TABLE {table} (run_id TEXT, {column})"))
        refused = run(_job(tmp_path, postgres_url, f"{table}.toml", table), "day-1")
        assert refused.exit_code == Exit.INVALID, refused.output
        line, = refused.output.strip().splitlines()
        name = column.split()[0]
        assert f"SQL table {table!r}: column {name!r}" in line
        assert SQLLedger(postgres_url).history("d") == []
        with sql_engine(postgres_url).connect() as conn:  # the probe row was rolled back
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0
    with sql_engine(postgres_url).begin() as conn:
        conn.execute(text("CREATE TABLE wide (run_id VARCHAR(64), x VARCHAR(8), n INTEGER)"))
    # wide enough for this job's names, though not for every integer: refused too
    # (n is a row count, written as a 64-bit integer)
    fits = run(_job(tmp_path, postgres_url, "wide.toml", "wide"), "day-1")
    assert fits.exit_code == Exit.INVALID and "column 'n'" in fits.output


def test_an_empty_release_creates_string_columns(postgres_url, tmp_path):
    write_input(tmp_path / "in")
    SQLLedger(postgres_url).init("d", Budget(500.0))
    run = lambda path, run_id: invoke("run", path, "--run-id", run_id)  # noqa: E731
    # two independent columns with little noise: no noisy MIC reaches 1
    empty = _job(tmp_path, postgres_url, "empty.toml", "rel", eps=200.0,
                 columns={"a": [0, 1], "c": [0, 1]},
                 select={"threshold": 1.0, "max_pairs": 2})
    first = run(empty, "r1")
    assert first.exit_code == 0, first.output
    with sql_engine(postgres_url).connect() as conn:
        kinds = dict(conn.execute(text(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'rel'")).all())
    assert kinds["x"] == "text" and kinds["y"] == "text" and kinds["n"] == "bigint"
    later = run(_job(tmp_path, postgres_url, "plain.toml", "rel"), "r2")
    assert later.exit_code == 0, later.output


def test_concurrent_deliveries_to_one_table_write_the_rows_once(postgres_url, tmp_path,
                                                                monkeypatch):
    """The first delivery stops after its check for the run's rows; the second
    must wait for it (a lock held until the first commits), not insert too."""
    import threading
    import time

    from dpmic_dask.batch import joboutput
    from dpmic_dask.batch.jobs import load_job
    from dpmic_dask.batch.journal import find_run

    write_input(tmp_path / "in")
    SQLLedger(postgres_url).init("d", Budget(5.0))
    path = _job(tmp_path, postgres_url, "job.toml", "rel")
    assert invoke("run", path, "--run-id", "r").exit_code == 0
    with sql_engine(postgres_url).begin() as conn:
        conn.execute(text("DELETE FROM rel"))
    job = load_job(path)
    rows = find_run(SQLLedger(postgres_url), "d", job.name, "r").rows()
    inside, go = threading.Event(), threading.Event()
    real, calls = pd.DataFrame.to_sql, []

    def paused(self, *args, **kwargs):
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            inside.set()
            go.wait()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_sql", paused)
    results = []
    first = threading.Thread(target=lambda: results.append(joboutput.deliver(job, rows, "r")))
    first.start()
    inside.wait()
    second = threading.Thread(target=lambda: results.append(joboutput.deliver(job, rows, "r")))
    second.start()
    # until the second delivery is done, or waits for a lock another session holds;
    # each look ends its transaction: pg_stat_activity is a snapshot taken once per
    # transaction, so polling inside one would never see the wait begin
    deadline = time.monotonic() + 60
    with sql_engine(postgres_url).connect() as conn:
        waiting = 0
        while second.is_alive() and not waiting and time.monotonic() < deadline:
            waiting = conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()")).scalar()
            conn.rollback()
            time.sleep(0.01)
    stuck = not waiting and second.is_alive()  # neither ended nor waited for a lock
    go.set()
    first.join()
    second.join()
    assert not stuck, "the second delivery neither ended nor waited for the first"
    assert len(results) == 2
    with sql_engine(postgres_url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM rel")).scalar() == len(rows)


def test_a_new_output_table_is_probed_before_the_charge_and_left_uncreated(postgres_url,
                                                                            tmp_path):
    write_input(tmp_path / "in")
    SQLLedger(postgres_url).init("d", Budget(5.0))
    # a role that may connect and read, but not create a table: refused before the charge
    role = "nocreate_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        # this test's own database: other tests' databases keep their rights
        conn.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    other = postgres_url.replace("//dpmic@", f"//{role}@")
    path = write_job(tmp_path / "ro.toml", ledger=postgres_url,
                     output={"sql_url": other, "sql_table": "fresh"})
    try:
        refused = invoke("run", path, "--run-id", "r1")
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
    assert refused.exit_code != 0 and "cannot be created" in refused.output, refused.output
    assert "nothing was charged" in refused.output
    assert SQLLedger(postgres_url).spent("d") == 0
    # the owner's probe leaves no table; the delivery then creates it with the rows
    path = _job(tmp_path, postgres_url, "ok.toml", "fresh")
    check_output(load_job(path), "r2")
    assert not inspect(sql_engine(postgres_url)).has_table("fresh")
    done = invoke("run", path, "--run-id", "r2")
    assert done.exit_code == 0, done.output
    assert len(pd.read_sql_table("fresh", sql_engine(postgres_url))) == 3
