"""The batch path under bad input and faults: no leaks, no hangs, no lost budget.

Every scenario's exit code is looked up in the "Failure modes" table of
docs/deployment.md, so the table and the behaviour cannot drift apart.
"""

import multiprocessing as mp
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.joboutput import destination
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.privacy.accounting import Budget, PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.privacy.ledgerdb import SCHEMA_VERSION
from tests.cli import invoke, process_env
from tests.integration.test_jobs import write_input
from tests.jobfiles import write_job

ROOT = Path(__file__).resolve().parents[2]
SECRET = "SECRET-alice"


def failure_table() -> dict:
    """First column -> exit code of the table in docs/deployment.md."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    section = text.split("## Failure modes", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].isdigit():
            rows[cells[0]] = int(cells[1])
    return rows


def documented_exit(prefix: str) -> int:
    matches = [code for what, code in failure_table().items() if what.startswith(prefix)]
    assert len(matches) == 1, prefix
    return matches[0]


def test_failure_table_lists_every_exit_code():
    assert set(failure_table().values()) == {int(code) for code in Exit}


@pytest.fixture
def env(tmp_path):
    """A job over Parquet input with a budget of 5 in a SQLite ledger."""
    write_input(tmp_path / "in")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(5.0))

    def job(text_replacements=(), name="job.toml", **sections):
        return str(write_job(tmp_path / name, replace=text_replacements, **sections))

    return tmp_path, ledger, job


def poisoned_csv(folder: Path) -> Path:
    """A CSV whose text cell sits past Dask's dtype-inference sample."""
    gen = np.random.default_rng(4)  # test data only
    n = 60_000
    frame = pd.DataFrame({"a": gen.random(n).round(6).astype(str), "b": gen.random(n),
                          "c": gen.random(n)})
    frame.loc[50_000, "a"] = SECRET
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / "data.csv", index=False)
    return folder / "data.csv"


def csv_job(env, csv, **sections):
    _, _, job = env
    return job(input={"paths": [str(csv)], "format": "csv"}, **sections)


# ---------------------------------------------------------------- cell values in logs


def test_text_cell_never_reaches_the_logs_of_a_local_cluster(env):
    tmp_path, ledger, _ = env
    result = invoke("run", csv_job(env, poisoned_csv(tmp_path / "csv")), "--run-id", "r1",
                    subprocess=True)
    output = result.stdout + result.stderr
    assert result.exit_code == documented_exit("input unreadable"), output[-3000:]
    assert SECRET not in output and "alice" not in output
    assert "['a', 'b', 'c']" in result.stderr and "ValueError" in result.stderr
    assert SQLLedger(ledger).history("d") == []


def test_worker_logs_of_an_external_cluster_are_redacted(env, cli_cluster):
    tmp_path, ledger, _ = env
    client, _ = cli_cluster
    job = csv_job(env, poisoned_csv(tmp_path / "csv"),
                  cluster={"scheduler": client.scheduler.address})
    result = invoke("run", job, "--run-id", "r1", subprocess=True)
    assert result.exit_code == documented_exit("input unreadable"), result.stderr[-3000:]
    time.sleep(1.0)  # let the workers flush their logs
    log = (tmp_path / "cluster.log").read_text()
    assert "Compute Failed" in log and "withheld" in log
    assert SECRET not in log and SECRET not in result.stdout + result.stderr


def test_redactor_keeps_the_key_and_type_only():
    import logging

    from dpmic_dask.batch.cluster import TaskErrorRedactor

    record = logging.LogRecord(
        "distributed.worker", logging.ERROR, __file__, 1,
        "Compute Failed\nKey: %s\nState: %s\nTask: %s\nException: %r\nTraceback: %r\n",
        ("('read-1', 0)", "executing", "<Task>",
         "ValueError(\"could not convert string to float: 'SECRET-alice'\")", "  File ..."),
        None)
    TaskErrorRedactor().filter(record)
    message = record.getMessage()
    assert "SECRET" not in message and "ValueError" in message and "read-1" in message
    plain = logging.LogRecord("distributed.scheduler", logging.INFO, __file__, 1,
                              "Receive client connection: %s", ("Client-1",), None)
    TaskErrorRedactor().filter(plain)
    assert plain.getMessage() == "Receive client connection: Client-1"


# ---------------------------------------------------------------- hangs


@pytest.fixture
def silent_port():
    """A port that accepts TCP connections and never says anything."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def _with_scheduler(env, address, timeout=3):
    _, _, job = env
    return job([("[cluster]\nworkers = 1",
                 f'[cluster]\nscheduler = "{address}"\ntimeout = {timeout}')])


def test_a_silent_scheduler_port_fails_within_the_timeout(env, silent_port):
    start = time.monotonic()
    result = invoke("run", _with_scheduler(env, f"tcp://127.0.0.1:{silent_port}"), "--run-id", "r")
    assert time.monotonic() - start < 20
    assert result.exit_code == documented_exit("Dask scheduler or SQL server")
    assert "no Dask answer within 3 s" in result.output
    assert SQLLedger(env[1]).history("d") == []


def test_a_refused_scheduler_port_fails_at_once(env):
    from tests.conftest import free_port

    start = time.monotonic()
    result = invoke("run", _with_scheduler(env, f"tcp://127.0.0.1:{free_port()}"), "--run-id", "r")
    assert time.monotonic() - start < 10
    assert result.exit_code == Exit.UNAVAILABLE and "connection refused" in result.output


def test_a_silent_sql_input_fails_within_its_timeout(env, silent_port):
    tmp_path, ledger, job = env
    path = job([(f'paths = ["{tmp_path / "in"}/*.parquet"]',
                 f'sql_url = "postgresql://u@127.0.0.1:{silent_port}/db"\n'
                 'sql_table = "t"\ntimeout = 2')])
    start = time.monotonic()
    result = invoke("run", path, "--run-id", "r")
    assert time.monotonic() - start < 60
    assert result.exit_code == Exit.UNAVAILABLE and "cannot reach the SQL input" in result.output
    assert SQLLedger(ledger).history("d") == []


# ---------------------------------------------------------------- limits on B and c


@pytest.mark.parametrize("lines,match", [
    ("B = 1000000000", "largest supported B"),
    ("B = 2000", "GiB of histograms"),
    ("c = 1000000", "OptimizeAxis steps"),
    ("B = 200\nc = 200", "OptimizeAxis steps"),
])
def test_grids_beyond_the_limits_are_refused_without_data(env, lines, match):
    _, ledger, job = env
    path = job([("eps = 1.0", f"eps = 1.0\n{lines}")])
    checked = invoke("validate", path)
    assert checked.exit_code == documented_exit("invalid job file") and match in checked.output
    ran = invoke("run", path, "--run-id", "r")
    assert ran.exit_code == Exit.INVALID and match in ran.output
    assert SQLLedger(ledger).history("d") == []


def test_api_refuses_huge_grids_before_reading_data():
    from tests.integration.test_pairwise_engine import exploding_frame

    frame = pd.DataFrame({"a": [0.1], "b": [0.2]})
    with pytest.raises(dm.InvalidParameterError, match="GiB of histograms"):
        exploding_frame(frame).dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, B=2000)
    with pytest.raises(dm.InvalidParameterError, match="steps"):
        exploding_frame(frame).dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, c=10**6)


def test_limit_estimates_match_the_real_family():
    from dpmic_dask.stats.grids import master_grid_family
    from dpmic_dask.stats.limits import micr_grid_cost

    for B, c in [(4, 1), (40, 5), (150, 5), (333, 2)]:
        family = master_grid_family(B, c)
        cost = micr_grid_cost(B, c, 7)
        rows, fixed = family.refinement_shape
        assert cost.cells_per_pair == family.n_cells
        assert cost.count_bytes == 7 * family.n_cells * (4 * 8 + 8)  # split_every = 8
        assert cost.fixed_cells == fixed  # exact (a Farey count)
        assert cost.row_cells >= rows  # an upper bound
        assert cost.histogram_bytes == 3 * 8 * cost.fixed_cells * cost.row_cells


# ---------------------------------------------------------------- run ids


@pytest.mark.parametrize("run_id", ["2026/11/22", "../x", "", ".hidden", "a..b", "x" * 129])
def test_bad_run_ids_are_refused_before_any_charge(env, run_id):
    _, ledger, job = env
    result = invoke("run", job(), "--run-id", run_id)
    assert result.exit_code == documented_exit("invalid job file")
    assert "--run-id" in result.output
    assert SQLLedger(ledger).history("d") == []


def _claim(url, barrier, results):
    ledger = SQLLedger(url).for_run("2026-11-22")
    barrier.wait()
    try:
        ledger.charge("d", PrivacyCost(0.1))
        results.put("ok")
    except dm.DPMICError as exc:
        results.put(type(exc).__name__)


def test_one_run_id_charges_once_under_a_race(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(url).init("d", Budget(5.0))
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(url, barrier, results)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    outcomes = sorted(results.get(timeout=10) for _ in procs)
    assert outcomes == ["RunClaimedError"] * 5 + ["ok"]
    assert [h.run_id for h in SQLLedger(url).history("d")] == ["2026-11-22"]


def test_overlapping_runs_with_one_run_id_charge_once(env):
    tmp_path, ledger, job = env
    gate = tmp_path / "gate"
    script = f"""
import os, sys, time
import dpmic_dask.batch.joboutput as joboutput
real = joboutput.deliver
def slow(*args, **kwargs):
    while not os.path.exists({str(gate)!r}):
        time.sleep(0.1)
    return real(*args, **kwargs)
joboutput.deliver = slow
from dpmic_dask.batch.cli import main
sys.argv = ["dpmic", "run", {job()!r}, "--run-id", "daily"]
main()
"""
    first = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=process_env())
    try:
        deadline = time.monotonic() + 240
        while not SQLLedger(ledger).history("d") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(SQLLedger(ledger).history("d")) == 1  # the first run has charged
        # the second finds the release in the journal and writes it: no new charge
        second = invoke("run", job(), "--run-id", "daily")
        assert second.exit_code == documented_exit("released (or"), second.output
        assert "delivered its journaled values" in second.output
        assert len(SQLLedger(ledger).history("d")) == 1
    finally:
        gate.write_text("go")
        out, err = first.communicate(timeout=240)
    assert first.returncode == 0, err[-2000:]
    (record,) = SQLLedger(ledger).history("d")
    out = pd.read_parquet(tmp_path / "out" / "run-daily--nightly.parquet")
    assert len(out) == 3 and (out.charge_id == record.charge_id).all()


def test_a_failure_after_the_charge_keeps_it_and_the_retry_says_so(env, monkeypatch):
    tmp_path, ledger, job = env

    def broken(rows):
        raise RuntimeError("after the charge")

    monkeypatch.setattr("dpmic_dask.batch.journal.encode_rows", broken)
    failed = invoke("run", job(), "--run-id", "r")
    assert failed.exit_code == Exit.UNEXPECTED
    assert len(SQLLedger(ledger).history("d")) == 1  # charged, never refunded
    monkeypatch.undo()
    again = invoke("run", job(), "--run-id", "r")
    assert again.exit_code == documented_exit("the run already charged")
    assert "values were not kept" in again.output
    assert len(SQLLedger(ledger).history("d")) == 1
    history = invoke("budget", "history", "--ledger", ledger, "--dataset", "d")
    assert history.exit_code == Exit.OK and "run=r (lost)" in history.output


def _interrupted_while_journaling():
    """``OpenCharge.sql`` as if SIGINT arrived when the values' journal row is written."""
    import signal

    from dpmic_dask.batch.interrupts import Interrupted
    from dpmic_dask.privacy.ledgerrun import OpenCharge

    real = OpenCharge.sql

    def interrupted(self, text):
        if "dpmic_release_journal" in text:
            raise Interrupted(signal.SIGINT)
        return real(self, text)

    return interrupted


def test_an_interruption_while_the_values_are_journaled_charges_nothing(env, monkeypatch):
    """SIGINT or SIGTERM inside the commit, while the values' journal row is
    written: the charge is undone with it, as a killed process's would be (before,
    the charge committed without its values: budget lost, nothing deliverable)."""
    from dpmic_dask.privacy.ledgerrun import OpenCharge

    tmp_path, ledger, job = env
    interrupted = _interrupted_while_journaling()
    monkeypatch.setattr(OpenCharge, "sql", interrupted)
    stopped = invoke("run", job(), "--run-id", "r")
    assert stopped.exit_code == Exit.INTERRUPTED, stopped.output
    assert "nothing was charged" in stopped.output
    assert SQLLedger(ledger).history("d") == []
    monkeypatch.undo()
    again = invoke("run", job(), "--run-id", "r")
    assert again.exit_code == Exit.OK, again.output
    assert len(SQLLedger(ledger).history("d")) == 1


def test_an_interruption_before_the_commit_logs_nothing_that_read_the_noise(
        env, monkeypatch, caplog):
    """A log line (``-v``) written after the charge reads the noise (here how many
    pairs a selection kept): with the charge rolled back by SIGINT it must not
    have left the process, else reruns would give fresh noisy draws for free. It
    is held, like a warning, and shown once a charge commits."""
    import logging

    from dpmic_dask.privacy.ledgerrun import OpenCharge

    tmp_path, ledger, job = env
    interrupted = _interrupted_while_journaling()
    path = job(select={"top_k": 1, "share": 0.6})
    monkeypatch.setattr(OpenCharge, "sql", interrupted)
    with caplog.at_level(logging.INFO, logger="dpmic_dask"):
        stopped = invoke("run", path, "--run-id", "r")
    assert stopped.exit_code == Exit.INTERRUPTED, stopped.output
    assert "nothing was charged" in stopped.output
    lines = [r.getMessage() for r in caplog.records if r.name == "dpmic_dask"]
    assert not [line for line in lines if line.startswith(("selected", "charged"))], lines
    assert SQLLedger(ledger).history("d") == []
    monkeypatch.undo()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dpmic_dask"):
        again = invoke("run", path, "--run-id", "r")
    assert again.exit_code == Exit.OK, again.output
    # committed: the held lines are shown, in order
    lines = [r.getMessage() for r in caplog.records if r.name == "dpmic_dask"]
    assert [line.split()[0] for line in lines] == ["charged", "selected"], lines


def test_a_signal_inside_the_commit_is_held_until_the_commit_is_noted(env, monkeypatch):
    """SIGINT arriving while the charge and its values COMMIT: the signal waits for
    the commit to be noted, so the run ends interrupted with its release kept (its
    warnings shown, a rerun delivers it) and never half-noted."""
    import signal

    from dpmic_dask.batch import interrupts
    from dpmic_dask.privacy.ledgerrun import OpenCharge

    tmp_path, ledger, job = env
    real = OpenCharge.commit

    def signalled(self):
        real(self)
        interrupts._handler(signal.SIGINT, None)  # as the signal handler would, mid-commit

    monkeypatch.setattr(OpenCharge, "commit", signalled)
    path = job(eps=0.002)  # noisy: its after-charge notice reads the noise
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        stopped = invoke("run", path, "--run-id", "r")
    assert stopped.exit_code == Exit.INTERRUPTED, stopped.output
    assert "budget was charged" in stopped.output
    (charge,) = SQLLedger(ledger).history("d")
    # the charge committed, so what was held for it is shown
    assert [w for w in seen if "within their noise" in str(w.message)]
    monkeypatch.undo()
    again = invoke("run", path, "--run-id", "r")
    assert again.exit_code == Exit.OK, again.output
    assert "already released" in again.output and "nothing was charged" in again.output
    assert len(SQLLedger(ledger).history("d")) == 1


def test_a_commit_that_fails_shows_nothing_read_off_the_noise(env, monkeypatch):
    """A charge whose commit fails charged nothing: the warnings raised after it
    (they read the released noise) are not shown, whatever is retried."""
    from dpmic_dask.errors import LedgerError
    from dpmic_dask.privacy.ledgerrun import OpenCharge

    tmp_path, ledger, job = env
    path = job(eps=0.002)

    def failing(self):
        self.rollback()
        raise LedgerError("the charge could not be committed, so nothing was charged and "
                          "nothing is released: the disk is full")

    def noise_notices(run_id):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = invoke("run", path, "--run-id", run_id)
        return out, [w for w in seen if "within their noise" in str(w.message)]

    monkeypatch.setattr(OpenCharge, "commit", failing)
    failed, notices = noise_notices("r")
    assert failed.exit_code == Exit.LEDGER, failed.output
    assert "nothing was charged" in failed.output
    assert notices == [] and "within their noise" not in failed.output
    assert SQLLedger(ledger).history("d") == []
    monkeypatch.undo()  # the same release committed: its after-charge notice is shown
    done, notices = noise_notices("r2")
    assert done.exit_code == Exit.OK, done.output
    assert notices


def test_a_ledger_lost_while_the_charge_is_open_charged_nothing_and_says_so(env, monkeypatch):
    """The ledger's connection lost between the charge and its commit (a database
    restarted): "unexpected OperationalError", exit 1, which the failure table
    reads as "the charge stays". The database rolls the open transaction back:
    exit 4, nothing charged, and the same run id releases once it is back."""
    from dpmic_dask.privacy.ledgerrun import OpenCharge

    _, ledger, job = env
    path = job()
    real = OpenCharge.sql

    def lost(self, text):
        if "dpmic_release_journal" in text:
            self.cur.connection.close()  # the server went away
        return real(self, text)

    monkeypatch.setattr(OpenCharge, "sql", lost)
    failed = invoke("run", path, "--run-id", "r")
    assert failed.exit_code == Exit.LEDGER, failed.output
    assert "lost before the charge was committed" in failed.output
    assert "nothing was charged" in failed.output
    assert SQLLedger(ledger).history("d") == []
    monkeypatch.undo()
    again = invoke("run", path, "--run-id", "r")
    assert again.exit_code == Exit.OK, again.output
    assert len(SQLLedger(ledger).history("d")) == 1


def test_a_ledger_lost_after_the_delivery_leaves_a_released_run_a_success(env, monkeypatch):
    """The ledger lost once a run was released and delivered: the budget lines read
    it again and the run ended with exit 4 ("nothing charged") though it was
    charged and delivered. A warning; the run's own exit."""
    from dpmic_dask.batch import runner
    from dpmic_dask.errors import LedgerError

    tmp_path, ledger, job = env

    def unreachable(*args, **kwargs):
        raise LedgerError("cannot reach the ledger")

    monkeypatch.setattr(runner, "remaining_words", unreachable)
    done = invoke("run", job(), "--run-id", "r")
    assert done.exit_code == Exit.OK, done.output
    assert "released and delivered, but the remaining budget could not be read" in done.output
    assert len(SQLLedger(ledger).history("d")) == 1


# ---------------------------------------------------------------- tampered ledgers


@pytest.mark.parametrize("column,value", [("amount", "abc"), ("columns", "{not json"),
                                          ("epsilon", "NaN?"), ("amount", "-5")])
def test_tampered_ledger_contents_are_a_corrupt_ledger(env, column, value):
    import sqlite3

    _, ledger, job = env
    SQLLedger(ledger).charge("d", PrivacyCost(0.5), description="earlier")
    path = ledger[len("sqlite:///"):]
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE dpmic_charges SET {column} = ?", (value,))
    code = documented_exit("ledger missing")
    for args in (["budget", "history"], ["budget", "show"]):
        result = invoke(*args, "--ledger", ledger, "--dataset", "d")
        if column in ("columns", "epsilon") and args[1] == "show":
            continue  # show reads amounts and the budget only
        assert result.exit_code == code, (args, result.output)
        assert "corrupt" in result.output and "Traceback" not in result.output
    if column == "amount":
        ran = invoke("run", job(), "--run-id", "r")
        assert ran.exit_code == code and "corrupt" in ran.output


def test_a_version_one_ledger_is_upgraded_in_place(tmp_path):
    import sqlite3

    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE dpmic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE dpmic_budgets (dataset TEXT PRIMARY KEY, epsilon TEXT NOT NULL,
                delta TEXT NOT NULL, created_at TEXT NOT NULL);
            CREATE TABLE dpmic_charges (charge_id TEXT PRIMARY KEY, dataset TEXT NOT NULL,
                created_at TEXT NOT NULL, amount TEXT NOT NULL, epsilon TEXT NOT NULL,
                delta TEXT NOT NULL, rho TEXT, description TEXT NOT NULL,
                mechanism TEXT NOT NULL, columns TEXT NOT NULL);
            INSERT INTO dpmic_meta VALUES ('schema', '1');
            INSERT INTO dpmic_budgets VALUES ('d', '1.0', '0.0', 'then');
            INSERT INTO dpmic_charges VALUES ('c1', 'd', 'then', '0.25', '0.25', '0.0', NULL,
                'old', 'micr-lap', '["a", "b"]');
        """)
    ledger = SQLLedger(f"sqlite:///{path}")
    assert [h.run_id for h in ledger.history("d")] == [None]
    ledger.for_run("r1").charge("d", PrivacyCost(0.25))
    with pytest.raises(dm.RunClaimedError):
        ledger.for_run("r1").charge("d", PrivacyCost(0.25))
    assert ledger.remaining("d") == Decimal("0.5")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM dpmic_meta").fetchone() == (SCHEMA_VERSION,)
        # budgets made before the privacy unit existed protect one row each
        assert conn.execute("SELECT privacy_unit FROM dpmic_budgets").fetchone() == (None,)


# ---------------------------------------------------------------- smaller ones


@pytest.mark.parametrize("replacements,match", [
    ([("a = { bounds = [0, 1] }", "a = { bounds = [0, 1], fill = 0.5 }"),
      ("b = { bounds = [-1.5, 1.5] }", "b = { bounds = [-1.5, 1.5], fill = 0 }"),
      ("c = { bounds = [0, 1] }", "c = { bounds = [0, 1], fill = 2 }"),
      ("eps = 1.0", 'eps = 1.0\nnulls = "fill"')], "inside columns.c.bounds"),
    ([("eps = 1.0", 'eps = 1.0\nmechanism = "micr-gauss"')], "delta > 0"),
    ([("[cluster]\nworkers = 1", '[cluster]\nscheduler = "localhost:8786"')], "tcp://host:port"),
    ([("eps = 1.0", "eps = 1.0\ndelta = 1e-320")], "normal double"),
    ([("[cluster]\nworkers = 1", "[cluster]\ntimeout = -1")], "cluster.timeout"),
    ([("[cluster]\nworkers = 1", '[cluster]\ntask_memory = "lots"')], "cluster.task_memory"),
    ([("[cluster]\nworkers = 1", "[cluster]\ntask_memory = 1000")], "from 1 MiB to 1 TiB"),
])
def test_validate_checks_what_run_checks(env, replacements, match):
    _, ledger, job = env
    path = job(replacements)
    checked = invoke("validate", path)
    assert checked.exit_code == Exit.INVALID and match in checked.output, checked.output
    ran = invoke("run", path, "--run-id", "r")
    assert ran.exit_code == Exit.INVALID and match in ran.output
    assert SQLLedger(ledger).history("d") == []


def test_sql_table_types_are_checked(env):
    tmp_path, _, job = env
    path = job([(f'paths = ["{tmp_path / "in"}/*.parquet"]',
                 'sql_url = "sqlite:///x.db"\nsql_table = 5')])
    result = invoke("validate", path)
    assert result.exit_code == Exit.INVALID and "input.sql_table" in result.output


def test_pure_budget_asked_to_pay_a_gaussian_release_is_a_configuration_error(env):
    _, ledger, job = env
    path = job([("eps = 1.0", 'eps = 1.0\ndelta = 1e-6\nmechanism = "micr-gauss"')])
    result = invoke("run", path, "--run-id", "r")
    assert result.exit_code == documented_exit("pure-DP budget asked")
    assert "pure-DP budget" in result.output
    assert SQLLedger(ledger).history("d") == []


@pytest.mark.parametrize("name,text,where", [
    ("bad.toml", '[job]\nname = "x"\ndataset = \n', "line 3, column"),
    ("bad.yaml", "job:\n  name: x\n   dataset: [\n", "line 3, column"),
])
def test_job_file_syntax_errors_give_line_and_column(tmp_path, name, text, where):
    path = write_job(tmp_path / name, raw=text)
    result = invoke("validate", path)
    assert result.exit_code == Exit.INVALID and where in result.output, result.output


def test_sql_input_without_psycopg_gives_the_install_hint(env, monkeypatch):
    from dpmic_dask.batch.jobio import sql_engine

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(dm.DPMICError, match=r"dpmic_dask\[postgres\]"):
        sql_engine("postgresql://u@127.0.0.1:5432/db")


def test_duplicate_column_labels_get_their_own_message():
    frame = pd.DataFrame(np.zeros((10, 3)), columns=["a", "a", "b"])
    with pytest.raises(dm.InvalidDataError, match="more than once"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)})


def test_delta_above_one_over_n_warns():
    gen = np.random.default_rng(0)  # test data only
    frame = pd.DataFrame({"a": gen.random(100), "b": gen.random(100)})
    with pytest.warns(dm.PrivacyLeakWarning, match="1/N"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, delta=0.02, B=8, c=1,
                             ledger=dm.InMemoryLedger(uncapped=True))


def test_sql_output_table_names_are_quoted(env):
    tmp_path, ledger, job = env
    odd = 'odd "name; DROP TABLE x'
    out_url = f"sqlite:///{tmp_path / 'out.db'}"
    path = job(output={"sql_url": out_url, "sql_table": odd})
    first = invoke("run", path, "--run-id", "r1")
    assert first.exit_code == 0, first.output
    again = invoke("run", path, "--run-id", "r1")
    assert again.exit_code == 0 and "already released" in again.output
    from sqlalchemy import create_engine, inspect

    assert inspect(create_engine(out_url)).get_table_names() == [odd]


def test_budget_refusal_comes_before_any_cluster(env, monkeypatch):
    _, ledger, job = env
    SQLLedger(ledger).charge("d", PrivacyCost(4.5))

    def no_cluster(**kwargs):
        raise AssertionError("a cluster was started for a refused run")

    monkeypatch.setattr("dpmic_dask.batch.cluster.open_cluster", no_cluster)
    result = invoke("run", job(), "--run-id", "r")
    assert result.exit_code == documented_exit("budget exhausted") and "no data was read" in result.output


def test_demo_out_below_a_file_is_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = invoke("demo", "--rows", "1000", "--out", blocker / "sub")
    assert result.exit_code == Exit.INVALID and "not a folder" in result.output
    assert "Traceback" not in result.output


def test_local_cluster_serves_no_dashboard():
    import urllib.error
    import urllib.request

    from distributed import default_client

    from dpmic_dask.batch.cluster import open_cluster

    with open_cluster(scheduler=None, workers=1):
        client = default_client()
        info = client.scheduler_info()
        port = info["services"]["dashboard"]
        assert port != 8787
        for route in ("/status", "/health", "/info/main/workers.html"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=10)
            assert err.value.code == 404


def test_a_sql_output_table_that_cannot_be_created_is_refused_before_the_charge(env):
    tmp_path, ledger, job = env
    out = tmp_path / "out.db"
    sqlite3.connect(out).close()  # an empty database, opened read only below
    path = job(output={"sql_url": f"sqlite:///file:{out}?mode=ro&uri=true",
                       "sql_table": "releases"})
    result = invoke("run", path, "--run-id", "r1")
    assert result.exit_code != 0 and "cannot be created" in result.output
    assert "nothing was charged" in result.output and "Traceback" not in result.output
    assert SQLLedger(ledger).spent("d") == 0


def test_the_probe_of_a_new_sql_table_leaves_no_table_behind(env):
    # the run fails after the output check (its input is gone): the probe's
    # table and row were rolled back, and a later run creates the table itself
    tmp_path, ledger, job = env
    out_url = f"sqlite:///{tmp_path / 'out.db'}"
    path = job(output={"sql_url": out_url, "sql_table": "releases"},
               input={"paths": [str(tmp_path / "nowhere" / "*.parquet")]})
    failed = invoke("run", path, "--run-id", "r1")
    assert failed.exit_code != 0 and "no such file" in failed.output
    from sqlalchemy import create_engine, inspect

    assert inspect(create_engine(out_url)).get_table_names() == []
    good = invoke("run", job(output={"sql_url": out_url, "sql_table": "releases"}),
                  "--run-id", "r1")
    assert good.exit_code == 0, good.output
    assert len(pd.read_sql_table("releases", create_engine(out_url))) == 3


def test_a_run_refused_for_its_budget_leaves_no_output_folder(env):
    tmp_path, ledger, job = env
    SQLLedger(ledger).charge("d", PrivacyCost(4.5))
    folder = tmp_path / "fresh-output"
    result = invoke("run", job(output={"path": str(folder)}), "--run-id", "r")
    assert result.exit_code == documented_exit("budget exhausted")
    assert not folder.exists()


def test_validate_and_the_journal_never_show_a_password(env):
    tmp_path, _, job = env
    for url in ("postgresql://ops:s3cret@127.0.0.1:1/ledger",
                "postgresql://ops@127.0.0.1:1/ledger?password=s3cret&sslmode=prefer"):
        out = invoke("validate", job(ledger=url))
        assert out.exit_code == 0 and "s3cret" not in out.output, out.output
        assert "ledger postgresql://ops@127.0.0.1:1/ledger" in out.output
    target = load_job(job(output={"sql_url": "postgresql://ops@db/out?password=s3cret"
                                              "&sslmode=prefer", "sql_table": "t"}))
    where = destination(target, "r1")
    assert "s3cret" not in where and "sslmode=prefer" in where


def test_a_delta_the_mechanism_does_not_use_is_said_once_per_run(env):
    """A job's delta with a pure mechanism: one UnusedParameterWarning for the run
    (the run plans the release three times: the job's check, its budget, the
    release), and the run is charged pure eps."""
    tmp_path, ledger, job = env
    path = job(privacy={"delta": 1e-6, "mechanism": "micr-lap"})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        done = invoke("run", path, "--run-id", "r")
    assert done.exit_code == Exit.OK, done.output
    unused = [w for w in seen if issubclass(w.category, dm.UnusedParameterWarning)]
    assert len(unused) == 1, [str(w.message) for w in unused]
    (charge,) = SQLLedger(ledger).history("d")
    assert charge.cost.delta == 0.0
