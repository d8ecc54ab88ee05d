"""Settling a run key: two different jobs that share one, deliveries per
destination, empty releases, concurrent writers, a full ledger disk, a closed
standard output and the loser of a race for a key."""

import dataclasses
import html
import shutil
import sqlite3
import subprocess
import sys

import pandas as pd
import pyarrow.parquet as pq
import pytest
from sqlalchemy import create_engine, inspect

import dpmic_dask as dm
from dpmic_dask.batch import joboutput, outputnames
from dpmic_dask.batch import runner as batch
from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.batch.journal import find_run
from dpmic_dask.batch.outputnames import DeliveryError
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.privacy.ledgerdb import SQLiteDB
from tests.integration.test_release_journal import every_file, history, invoke, job_env


def run_files(folder):
    """The run files of an output folder (its ``_pages/`` of HTML pages left out)."""
    return [name for name in every_file(folder) if name != "_pages"]

SELECT_NOTHING = "[select]\nthreshold = 1.0\nmax_pairs = 2\n"
#: Two independent columns released with little noise: no noisy MIC reaches 1.
QUIET = {"b = { bounds = [-1.5, 1.5] }\n": "", "eps = 1.0": "eps = 200.0"}


@pytest.fixture
def env(tmp_path):
    """Parquet input, a SQLite ledger with a budget of 1,000, and job files."""
    return job_env(tmp_path, 1000.0)


def two_teams(tmp_path, job):
    """teamA/nightly.toml and teamB/nightly.toml: no [job] name, one dataset, other
    columns and outputs."""
    for team in ("teamA", "teamB"):
        (tmp_path / team).mkdir()
    a = job("teamA/nightly.toml", replace={'name = "nightly"\n': "",
                                     "c = { bounds = [0, 1] }\n": "",
                                     f'{tmp_path / "out"}': f'{tmp_path / "outA"}'})
    b = job("teamB/nightly.toml", replace={'name = "nightly"\n': "",
                                     f'{tmp_path / "out"}': f'{tmp_path / "outB"}'})
    return a, b


# ---------------------------------------------------------------- one file, two jobs


@pytest.mark.parametrize("first, second", [
    # the same job name on two datasets, one output folder
    ({"job": {"name": "nightly", "dataset": "d"}, "run": "2026-11-27"},
     {"job": {"name": "nightly", "dataset": "d2"}, "run": "2026-11-27"}),
    # a name and a run id that meet at "--": run-a--b--c both ways
    ({"job": {"name": "c", "dataset": "d"}, "run": "a--b"},
     {"job": {"name": "b--c", "dataset": "d"}, "run": "a"}),
])
def test_a_run_never_overwrites_another_jobs_file(env, first, second):
    """A run whose file already exists, written by another job, is refused before
    its charge; the other job's file is left as it was."""
    tmp_path, ledger, job = env
    SQLLedger(ledger).init("d2", Budget(1000.0))
    a = job("a.toml", job=first["job"])
    b = job("b.toml", job=second["job"])
    done = invoke("run", a, "--run-id", first["run"])
    assert done.exit_code == Exit.OK, done.output
    (written,) = run_files(tmp_path / "out")
    charge = pq.read_table(tmp_path / "out" / written).column("charge_id")[0].as_py()
    refused = invoke("run", b, "--run-id", second["run"])
    assert refused.exit_code != Exit.OK, refused.output
    assert "already exists" in refused.output and "nothing was charged" in refused.output
    assert run_files(tmp_path / "out") == [written]
    assert pq.read_table(tmp_path / "out" / written).column("charge_id")[0].as_py() == charge
    assert len(SQLLedger(ledger).history("d")) == 1
    assert SQLLedger(ledger).history("d2") == []
    again = invoke("run", a, "--run-id", first["run"])  # its own file: settled
    assert again.exit_code == Exit.OK and "already released and delivered" in again.output


@pytest.mark.parametrize("form", ["parquet", "csv"])
def test_a_file_holding_another_release_is_never_replaced_by_a_rerun(env, form):
    """A run's file replaced by another release (written by hand, or by a job before
    the check above): the rerun says so and writes nothing over it. A CSV's charge
    ids are read as text (an id of digits and an ``e`` is not a number)."""
    tmp_path, ledger, job = env
    path = job(output={"path": str(tmp_path / "out"), "format": form})
    assert invoke("run", path, "--run-id", "r").exit_code == Exit.OK
    (written,) = run_files(tmp_path / "out")
    file = tmp_path / "out" / written
    if form == "csv":
        table = pd.read_csv(file, dtype={"charge_id": str})
        assert invoke("run", path, "--run-id", "r").exit_code == Exit.OK  # its own: settled
        table["charge_id"] = "12e3"  # another release's id that pandas would read as 12000
        table.to_csv(file, index=False)
    else:
        table = pq.read_table(file).to_pandas()
        table["charge_id"] = "12e3"
        table.to_parquet(file)
    again = invoke("run", path, "--run-id", "r")
    assert again.exit_code == Exit.OUTPUT, again.output
    assert "holds another release" in again.output and "dpmic deliver" in again.output
    kept = (pd.read_csv(file, dtype=str) if form == "csv" else pq.read_table(file).to_pandas())
    assert set(kept["charge_id"]) == {"12e3"}


# ---------------------------------------------------------------- one key, two jobs


def test_another_job_with_the_same_key_is_refused_not_settled(env):
    tmp_path, ledger, job = env
    a, b = two_teams(tmp_path, job)
    first = invoke("run", a, "--run-id", "2026-11-23")
    assert first.exit_code == 0, first.output
    second = invoke("run", b, "--run-id", "2026-11-23")
    assert second.exit_code == Exit.INVALID, second.output
    line, = second.output.strip().splitlines()
    assert "different job" in line and "[job] name" in line and "nothing was charged" in line
    assert every_file(tmp_path / "outB") == []
    delivered = invoke("deliver", b, "--run-id", "2026-11-23")
    assert delivered.exit_code == Exit.INVALID and "different job" in delivered.output
    assert every_file(tmp_path / "outB") == []
    assert len(history(ledger)) == 1
    again = invoke("run", a, "--run-id", "2026-11-23")  # the job that charged: settled
    assert again.exit_code == 0 and "already released and delivered" in again.output


def test_the_same_release_written_otherwise_or_moved_elsewhere_settles(env):
    """``eps = 1`` for ``eps = 1.0`` (or an output moved after a lost disk) made a
    paid run "a different job", whose advice was a new run id: a second charge for
    a release kept in the journal. Numbers are read by value and the output is not
    part of the job: the rerun delivers the kept values to the new output, nothing
    charged. A run charged with the older fingerprint settles too."""
    from dpmic_dask.batch.jobplan import job_fingerprint

    tmp_path, ledger, job = env
    path = job()
    assert invoke("run", path, "--run-id", "r").exit_code == 0
    (tmp_path / "out" / "run-r--nightly.parquet").unlink()
    text = path.read_text()
    assert "eps = 1.0" in text
    path.write_text(text.replace("eps = 1.0", "eps = 1").replace(
        f'"{tmp_path / "out"}"', f'"{tmp_path / "moved"}"'))
    again = invoke("run", path, "--run-id", "r")
    assert again.exit_code == 0, again.output
    assert run_files(tmp_path / "moved") == ["run-r--nightly.parquet"]
    assert len(history(ledger)) == 1
    assert invoke("run", path, "--run-id", "s").exit_code == 0
    with sqlite3.connect(tmp_path / "ledger.db") as conn:  # as an older version kept it
        conn.execute("UPDATE dpmic_release_journal SET fingerprint = ? WHERE run_id = 's'",
                     (job_fingerprint(load_job(path), older=True),))
    (tmp_path / "moved" / "run-s--nightly.parquet").unlink()
    settled = invoke("run", path, "--run-id", "s")
    assert settled.exit_code == 0 and "delivered its journaled values" in settled.output
    assert len(history(ledger)) == 2


def test_another_job_never_writes_an_undelivered_release(env, monkeypatch):
    tmp_path, ledger, job = env
    a, b = two_teams(tmp_path, job)
    real = pd.DataFrame.to_parquet

    def full(self, path, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    assert invoke("run", a, "--run-id", "r").exit_code == Exit.OUTPUT
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)
    for command in ("run", "deliver"):
        result = invoke(command, b, "--run-id", "r")
        assert result.exit_code == Exit.INVALID, result.output
        assert every_file(tmp_path / "outB") == []
    assert invoke("deliver", a, "--run-id", "r").exit_code == 0
    assert run_files(tmp_path / "outA") == ["run-r--nightly.parquet"]


def test_a_kept_release_is_delivered_to_this_destination_if_it_was_not(env):
    """'Delivered' is per destination: a release journaled before fingerprints
    were kept and delivered elsewhere is still written to this job's output."""
    tmp_path, ledger, job = env
    path = job()
    assert invoke("run", path, "--run-id", "r").exit_code == 0
    with sqlite3.connect(tmp_path / "ledger.db") as conn:  # as an older version left it
        conn.execute("UPDATE dpmic_release_journal SET fingerprint = NULL")
        conn.execute("UPDATE dpmic_journal_deliveries SET destination = '/elsewhere/x'")
    (tmp_path / "out" / "run-r--nightly.parquet").unlink()
    again = invoke("run", path, "--run-id", "r")
    assert again.exit_code == 0, again.output
    assert "delivered its journaled values" in again.output
    assert run_files(tmp_path / "out") == ["run-r--nightly.parquet"]
    done = invoke("run", path, "--run-id", "r")
    assert done.exit_code == 0 and "already released and delivered" in done.output


def test_a_select_job_settles_whatever_task_memory_the_shell_sets(env):
    """The task memory sizes tasks and changes no value: a [select] run charged under
    one setting (``DASK_DPMIC__TASK_MEMORY`` in a shell) is delivered under another;
    runs journaled when the fingerprint held it are the same job where they were."""
    import dask

    from dpmic_dask.batch.jobplan import job_fingerprint

    tmp_path, ledger, job = env
    path = job("select.toml", replace={"[cluster]": SELECT_NOTHING + "[cluster]", **QUIET})
    with dask.config.set({"dpmic.task_memory": "512 MiB"}):
        assert invoke("run", path, "--run-id", "r1").exit_code == Exit.OK
        legacy = job_fingerprint(load_job(path), legacy=True)
    assert legacy != job_fingerprint(load_job(path), legacy=True)
    again = invoke("run", path, "--run-id", "r1")
    assert again.exit_code == Exit.OK and "already released and delivered" in again.output
    delivered = invoke("deliver", path, "--run-id", "r1")
    assert delivered.exit_code == Exit.OK, delivered.output
    # a run journaled with the former fingerprint (it held the task memory in force)
    with dask.config.set({"dpmic.task_memory": "512 MiB"}):
        assert invoke("run", path, "--run-id", "r2").exit_code == Exit.OK
    with sqlite3.connect(tmp_path / "ledger.db") as conn:
        conn.execute("UPDATE dpmic_release_journal SET fingerprint = ? WHERE run_id = 'r2'",
                     (legacy,))
    with dask.config.set({"dpmic.task_memory": "512 MiB"}):  # as it was accepted before
        settled = invoke("run", path, "--run-id", "r2")
    assert settled.exit_code == Exit.OK and "already released" in settled.output
    assert len(SQLLedger(ledger).history("d")) == 2


# ---------------------------------------------------------------- empty releases


def test_an_empty_release_writes_string_columns(env):
    tmp_path, ledger, job = env
    sql = f"sqlite:///{tmp_path / 'out.db'}"
    empty = job("empty.toml", replace={'name = "nightly"': 'name = "empty"',
                                 "[cluster]": SELECT_NOTHING + "[cluster]", **QUIET})
    result = invoke("run", empty, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    schema = pq.read_schema(tmp_path / "out" / "run-r1--empty.parquet")
    assert str(schema.field("x").type) == "string" and str(schema.field("n").type) == "int64"
    assert pd.read_parquet(tmp_path / "out" / "run-r1--empty.parquet").empty
    to_sql = job("sql.toml", replace={'name = "nightly"': 'name = "empty-sql"',
                                "[cluster]": SELECT_NOTHING + "[cluster]", **QUIET,
                                f'path = "{tmp_path / "out"}"':
                                f'sql_url = "{sql}"\nsql_table = "rel"'})
    assert invoke("run", to_sql, "--run-id", "r1").exit_code == 0
    types = {c["name"]: c["type"].python_type for c in
             inspect(create_engine(sql)).get_columns("rel")}
    assert types["x"] is str and types["y"] is str
    assert pd.read_sql_table("rel", create_engine(sql)).empty
    plain = job("plain.toml", replace={'name = "nightly"': 'name = "plain"',
                                 f'path = "{tmp_path / "out"}"':
                                 f'sql_url = "{sql}"\nsql_table = "rel"'})
    later = invoke("run", plain, "--run-id", "r1")  # a release with pairs, same table
    assert later.exit_code == 0, later.output
    assert len(pd.read_sql_table("rel", create_engine(sql))) == 3


# ---------------------------------------------------------------- concurrent writers


def test_each_file_delivery_writes_its_own_temporary_file(env, monkeypatch):
    tmp_path, ledger, job = env
    path = job()
    assert invoke("run", path, "--run-id", "r").exit_code == 0
    loaded = load_job(path)
    entry = find_run(SQLLedger(ledger), "d", "nightly", "r")
    names = []
    real = pd.DataFrame.to_parquet

    def spy(self, target, *args, **kwargs):
        names.append(str(target))
        return real(self, target, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", spy)
    for _ in range(2):
        joboutput.deliver(loaded, entry.rows(), "r")
    assert len(set(names)) == 2 and all(n.endswith(".tmp") for n in names)
    assert run_files(tmp_path / "out") == ["run-r--nightly.parquet"]


# ---------------------------------------------------------------- a full ledger disk


class FullDisk:
    """A ledger cursor whose commit fails as SQLite's does on a full file system."""

    def __init__(self, cur):
        self.cur = cur

    def execute(self, statement, *args):
        if statement == "COMMIT":
            self.cur.execute("ROLLBACK")
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorname = "SQLITE_FULL"
            raise error
        return self.cur.execute(statement, *args)

    def __getattr__(self, name):
        return getattr(self.cur, name)


def test_a_full_ledger_file_system_is_not_called_corrupt(env, monkeypatch):
    """The charge's commit fails with SQLITE_FULL (the audit's full tmpfs):
    intact, nothing charged, and not called corrupt."""
    tmp_path, ledger, job = env
    real = SQLLedger.open_charge

    def full(self, *args, **kwargs):
        opened = real(self, *args, **kwargs)
        opened.cur = FullDisk(opened.cur)
        return opened

    monkeypatch.setattr(SQLLedger, "open_charge", full)
    result = invoke("run", job(), "--run-id", "r")
    assert result.exit_code == Exit.LEDGER, result.output
    line, = result.output.strip().splitlines()
    assert "full or failing" in line and "corrupt" not in line
    assert "nothing was charged" in line
    monkeypatch.setattr(SQLLedger, "open_charge", real)
    assert history(ledger) == []
    assert invoke("run", job(), "--run-id", "r").exit_code == 0


def test_sqlite_full_and_io_errors_are_classified(tmp_path):
    db = SQLiteDB(tmp_path / "ledger.db")
    for name in ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_IOERR_WRITE"):
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorname = name
        problem = db.classify(error)
        assert problem is not None and "full or failing" in str(problem)
        assert "corrupt" not in str(problem)
    from psycopg import errors

    from dpmic_dask.privacy.ledgerdb import PostgresDB

    for error in (errors.DiskFull("no space"), errors.IoError("io")):
        problem = PostgresDB("postgresql://x").classify(error)
        assert problem is not None and "full or failing" in str(problem)


# ---------------------------------------------------------------- stdout, races


def test_a_closed_stdout_after_delivery_is_done(env, monkeypatch):
    tmp_path, ledger, job = env
    import click

    real = click.echo

    def closed(message=None, err=False, **kwargs):
        if not err:
            raise BrokenPipeError(32, "Broken pipe")
        return real(message, err=err, **kwargs)

    monkeypatch.setattr(click, "echo", closed)
    result = invoke("run", job(), "--run-id", "r")
    assert result.exit_code == 0, result.output
    assert "unexpected" not in result.output
    monkeypatch.setattr(click, "echo", real)
    assert [r["release"] for r in history(ledger)] == ["delivered"]


def test_a_real_closed_pipe_exits_0(env):
    tmp_path, ledger, job = env
    path = job()
    proc = subprocess.Popen([sys.executable, "-m", "dpmic_dask.batch.cli", "run", str(path),
                             "--run-id", "r"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()  # the reader went away before the first line
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait() == 0, err
    assert "BrokenPipe" not in err and "Exception ignored" not in err
    assert [r["release"] for r in history(ledger)] == ["delivered"]


@pytest.mark.parametrize("delivered", [True, False])
def test_the_loser_of_a_race_for_a_key_settles_from_the_winner(env, monkeypatch, delivered):
    """The winner charged between the loser's look at the journal and its own
    charge (simulated: the loser's first look finds nothing)."""
    tmp_path, ledger, job = env
    path = job()
    assert invoke("run", path, "--run-id", "r").exit_code == 0
    if not delivered:
        with sqlite3.connect(tmp_path / "ledger.db") as conn:
            conn.execute("DELETE FROM dpmic_journal_deliveries")
        (tmp_path / "out" / "run-r--nightly.parquet").unlink()
    real, looks = batch.find_run, []

    def late(*args):
        looks.append(args)
        return None if len(looks) == 1 else real(*args)

    monkeypatch.setattr(batch, "find_run", late)
    loser = invoke("run", path, "--run-id", "r")
    assert loser.exit_code == 0, loser.output
    assert len(history(ledger)) == 1
    assert run_files(tmp_path / "out") == ["run-r--nightly.parquet"]
    expected = "already released and delivered" if delivered else "delivered its journaled"
    assert expected in loser.output


def test_help_lists_every_exit_code():
    text = " ".join(invoke("--help").output.split())
    for code in ("0 success", "1 unexpected", "2 invalid", "3 budget", "4 ledger",
                 "5 Dask", "6 run id", "7 released and journaled", "130 interrupted",
                 "143 ended by SIGTERM"):
        assert code in text, code


def test_a_sqlite_delivery_checks_for_its_rows_under_the_write_lock(env):
    """The check for a run's rows and their insertion are one step: while another
    writer holds the output database's write lock, a delivery waits for it (here
    it gives up after the output's 1 s timeout) instead of deciding from a read."""
    tmp_path, ledger, job = env
    out = tmp_path / "out.db"
    path = job(replace={f'path = "{tmp_path / "out"}"':
                  f'sql_url = "sqlite:///{out}"\nsql_table = "rel"\ntimeout = 1'})
    assert invoke("run", path, "--run-id", "r").exit_code == 0
    loaded = load_job(path)
    rows = find_run(SQLLedger(ledger), "d", "nightly", "r").rows()
    holder = sqlite3.connect(out, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(joboutput.DeliveryError):
            joboutput.deliver(loaded, rows, "r")
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert "there already" in joboutput.deliver(loaded, rows, "r")
    assert len(pd.read_sql_table("rel", create_engine(f"sqlite:///{out}"))) == 3


class FailingReads:
    """A ledger connection whose reads fail as SQLite's do on a failing disk."""

    def __init__(self, conn):
        self.conn = conn

    def cursor(self):
        cur = self.conn.cursor()

        class Cursor:
            def execute(self, statement, *args):
                if statement.startswith("SELECT"):
                    error = sqlite3.OperationalError("disk I/O error")
                    error.sqlite_errorname = "SQLITE_IOERR_READ"
                    raise error
                return cur.execute(statement, *args)

            def __getattr__(self, name):
                return getattr(cur, name)

        return Cursor()

    def __getattr__(self, name):
        return getattr(self.conn, name)


def test_a_failing_ledger_disk_is_not_called_uninitialised_or_corrupt(env, monkeypatch):
    tmp_path, ledger, job = env
    real = SQLiteDB.connect
    monkeypatch.setattr(SQLiteDB, "connect", lambda self, create: FailingReads(real(self, create)))
    result = invoke("budget", "history", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == Exit.LEDGER, result.output
    assert "full or failing" in result.output and "corrupt" not in result.output


def test_the_failure_table_documents_these_outcomes():
    from tests.integration.test_batch_faults import documented_exit

    assert documented_exit("the run key") == Exit.INVALID
    assert documented_exit("SQL output table with a column too narrow") == Exit.INVALID
    assert documented_exit("the ledger's file system") == Exit.LEDGER
    assert documented_exit("standard output closed") == Exit.OK
    assert documented_exit("concurrent deliveries") == Exit.OK


def test_dpmic_report_rebuilds_a_run_page_with_the_release_notes(env):
    """The release's report text is kept beside its page, so a page rebuilt from
    the run's file alone (``dpmic report``) has its notes, not only its rows'."""
    tmp_path, ledger, job = env
    done = invoke("run", job("a.toml"), "--run-id", "night")
    assert done.exit_code == Exit.OK, done.output
    pages = tmp_path / "out" / "_pages"
    (page,) = pages.glob("*.html")
    (kept,) = pages.glob("*.txt")
    report = find_run(SQLLedger(ledger), "d", "nightly", "night").report()
    assert report and kept.read_text(encoding="utf-8") == report + "\n"
    page.unlink()
    rebuilt = invoke("report", str(tmp_path / "out"))
    assert rebuilt.exit_code == Exit.OK, rebuilt.output
    text = html.unescape(page.read_text())
    assert report.splitlines()[0] in text and report.splitlines()[-1] in text
    assert "Rebuilt from the delivered rows alone" not in text
    kept.unlink()  # without it: the rows' own account, saying what it lacks
    assert invoke("report", str(tmp_path / "out")).exit_code == Exit.OK
    assert "Rebuilt from the delivered rows alone" in page.read_text()
    # a rerun writes the lost text again from the journal, and nothing else
    shown = page.read_text()
    again = invoke("run", job("a.toml"), "--run-id", "night")
    assert again.exit_code == Exit.OK, again.output
    assert "report text was missing: wrote it again" in again.output
    assert kept.read_text(encoding="utf-8") == report + "\n" and page.read_text() == shown
    assert len(SQLLedger(ledger).history("d")) == 1


def test_a_rerun_writes_a_missing_page_again_and_charges_nothing(env):
    tmp_path, ledger, job = env
    path = job("a.toml")
    done = invoke("run", path, "--run-id", "night")
    assert done.exit_code == Exit.OK, done.output
    (page,) = (tmp_path / "out" / "_pages").glob("*.html")
    first = page.read_text()
    page.unlink()
    again = invoke("run", path, "--run-id", "night")
    assert again.exit_code == Exit.OK, again.output
    assert "page was missing: wrote it again" in again.output and page.is_file()
    assert "Run night of job" in page.read_text() and "Run night of job" in first
    # with the release's own report, kept in the journal with its rows
    report = find_run(SQLLedger(ledger), "d", "nightly", "night").report()
    assert report and report.splitlines()[0] in html.unescape(page.read_text())
    assert "Rebuilt from the delivered rows alone" not in page.read_text()
    assert len(SQLLedger(ledger).history("d")) == 1
    third = invoke("run", path, "--run-id", "night")  # all there: nothing to do
    assert third.exit_code == Exit.OK and "nothing to do" in third.output


def test_deliver_to_another_output_when_the_old_one_is_gone(env):
    tmp_path, ledger, job = env
    path = job("a.toml")
    done = invoke("run", path, "--run-id", "night")
    assert done.exit_code == Exit.OK, done.output
    (written,) = run_files(tmp_path / "out")
    kept = pq.read_table(tmp_path / "out" / written).to_pandas()
    # the output's disk is gone: a file now sits where the folder was
    shutil.rmtree(tmp_path / "out")
    (tmp_path / "out").write_text("not a folder")
    lost = invoke("deliver", path, "--run-id", "night")
    assert lost.exit_code != Exit.OK and "not a folder" in lost.output
    moved = invoke("deliver", path, "--run-id", "night", "--to", tmp_path / "elsewhere")
    assert moved.exit_code == Exit.OK, moved.output
    assert "nothing was charged" in moved.output
    again = pq.read_table(tmp_path / "elsewhere" / written).to_pandas()
    pd.testing.assert_frame_equal(again, kept)
    assert (tmp_path / "elsewhere" / "_pages" / written.replace(".parquet", ".html")).is_file()
    url = f"sqlite:///{tmp_path / 'out.db'}"
    to_sql = invoke("deliver", path, "--run-id", "night", "--to-sql", url, "--table", "rel")
    assert to_sql.exit_code == Exit.OK, to_sql.output
    table = pd.read_sql_table("rel", create_engine(url))
    assert list(table.charge_id.unique()) == list(kept.charge_id.unique())
    assert len(table) == len(kept)
    assert len(SQLLedger(ledger).history("d")) == 1
    for args, message in ((("--to-sql", url), "needs --table"),
                          (("--table", "rel"), "goes with --to-sql"),
                          (("--to", tmp_path / "x", "--to-sql", url), "not both")):
        bad = invoke("deliver", path, "--run-id", "night", *args)
        assert bad.exit_code == Exit.INVALID and message in bad.output


def test_a_causal_run_is_delivered_to_a_folder_only(env):
    _, _, job = env
    graph_job = dataclasses.replace(load_job(job("a.toml")), causal={"alpha": 0.05})
    with pytest.raises(dm.InvalidParameterError, match="writes files"):
        outputnames.retarget(graph_job, sql_url="sqlite://", sql_table="t")
    moved = outputnames.retarget(graph_job, folder="/tmp/x")
    assert moved.output_path == "/tmp/x" and moved.causal == graph_job.causal


@pytest.mark.parametrize("form", ["parquet", "csv"])
def test_a_delivery_never_writes_over_another_release_of_the_same_name(env, form):
    """A file of this run's name written by another release between the check
    before the charge and the delivery (a concurrent job of the same name on
    another dataset): the delivery is refused where the file is written, and the
    other release's file is left as it was; this run's own file is replaced."""
    tmp_path, ledger, job = env
    loaded = load_job(job(output={"path": str(tmp_path / "out"), "format": form}))
    assert invoke("run", loaded.source, "--run-id", "r").exit_code == Exit.OK
    entry = find_run(SQLLedger(ledger), "d", "nightly", "r")
    (written,) = run_files(tmp_path / "out")
    file = tmp_path / "out" / written
    assert joboutput.deliver(loaded, entry.rows(), "r") == str(file)  # its own: fine
    theirs = entry.rows().assign(charge_id="12e3")  # the other release's file
    theirs.to_csv(file, index=False) if form == "csv" else theirs.to_parquet(file, index=False)
    before = file.read_bytes()
    with pytest.raises(DeliveryError, match="holds another release"):
        joboutput.deliver(loaded, entry.rows(), "r")
    assert file.read_bytes() == before


def test_deliver_to_a_folder_never_replaces_another_release_and_reruns_then_settle(env):
    tmp_path, ledger, job = env
    SQLLedger(ledger).init("d2", Budget(1000.0))
    first = job("a.toml")
    other = job("b.toml", job={"name": "nightly", "dataset": "d2"},
                replace={f'{tmp_path / "out"}': f'{tmp_path / "shared"}'})
    assert invoke("run", first, "--run-id", "night").exit_code == Exit.OK
    assert invoke("run", other, "--run-id", "night").exit_code == Exit.OK
    (theirs,) = run_files(tmp_path / "shared")
    charge = pq.read_table(tmp_path / "shared" / theirs).column("charge_id")[0].as_py()
    # the same file name in the shared folder holds d2's release: never replaced
    refused = invoke("deliver", first, "--run-id", "night", "--to", tmp_path / "shared")
    assert refused.exit_code == Exit.OUTPUT, refused.output
    assert "holds another release" in refused.output
    assert pq.read_table(tmp_path / "shared" / theirs).column("charge_id")[0].as_py() == charge
    # the job's own output is lost; delivered elsewhere, a retry of the run settles
    shutil.rmtree(tmp_path / "out")
    (tmp_path / "out").write_text("not a folder")
    moved = invoke("deliver", first, "--run-id", "night", "--to", tmp_path / "elsewhere")
    assert moved.exit_code == Exit.OK, moved.output
    retry = invoke("run", first, "--run-id", "night")
    assert retry.exit_code == Exit.OK, retry.output
    assert "already released and delivered to" in retry.output and "elsewhere" in retry.output
    assert len(SQLLedger(ledger).history("d")) == 1


@pytest.mark.parametrize("constraint, refused", [("tau_a REAL NOT NULL", True),
                                                 ("tau_a REAL", False)])
def test_an_output_table_that_cannot_take_an_empty_tau_is_refused_before_the_charge(
        env, constraint, refused):
    """Kendall's tau of a pair with a categorical column is empty (NULL): a table
    declaring it NOT NULL passed the probe (a value in every column) and the run
    failed after its charge, again at every retry. Refused before the charge; a
    CHECK that mic lies in [0, 1] (it is clamped there) is not refused."""
    from dpmic_dask.batch.outputrows import expected_columns

    tmp_path, ledger, job = env
    sql = f"sqlite:///{tmp_path / 'out.db'}"
    path = job(replace={'c = { bounds = [0, 1] }': 'note = { categories = ["x", "y"] }',
                        f'path = "{tmp_path / "out"}"': f'sql_url = "{sql}"\nsql_table = "rel"',
                        "eps = 1.0": 'eps = 1.0\nstatistics = ["mic", "tau_a"]'})
    kinds = {str: "TEXT", int: "INTEGER", float: "REAL"}
    declared = [f"{name} {kinds[kind]}" for name, kind in
                expected_columns(load_job(path)).items() if name != "tau_a"]
    with sqlite3.connect(tmp_path / "out.db") as conn:
        conn.execute(f"CREATE TABLE rel ({', '.join(declared)}, {constraint}, "
                     "CHECK (mic BETWEEN 0 AND 1))")
    result = invoke("run", path, "--run-id", "r")
    if refused:
        assert result.exit_code == Exit.INVALID, result.output
        assert "column 'tau_a' cannot be empty (NOT NULL)" in result.output
        assert history(ledger) == []
    else:
        assert result.exit_code == 0, result.output
        assert len(pd.read_sql_table("rel", create_engine(sql))) == 3
