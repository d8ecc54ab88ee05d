"""The persistent SQLite ledger: atomic check-and-charge across processes."""

import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.errors import LedgerError
from dpmic_dask.privacy.accounting import Budget, PrivacyCost
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def test_init_charge_refuse_and_history(url):
    ledger = SQLLedger(url)
    ledger.init("sales", Budget(1.0))
    for _ in range(10):
        ledger.charge("sales", PrivacyCost(0.1), description="job")
    assert ledger.remaining("sales") == 0 and ledger.spent("sales") == Decimal("1.0")
    with pytest.raises(dm.BudgetExceededError, match="nothing was released"):
        ledger.charge("sales", PrivacyCost(0.01))
    history = ledger.history("sales")
    assert len(history) == 10 and all(h.amount == Decimal("0.1") for h in history)
    with pytest.raises(dm.InvalidParameterError, match="never changed"):
        ledger.init("sales", Budget(5.0))
    # a second dataset in the same file has its own cap
    ledger.init("hr", Budget(2.0, 1e-6))
    ledger.charge("hr", PrivacyCost(1.0, 1e-6, 0.01))
    assert ledger.remaining("hr") == Decimal(repr(rho_from_eps_delta(2.0, 1e-6))) - Decimal("0.01")


def test_missing_uninitialised_and_corrupt_ledgers_refuse(tmp_path, url):
    with pytest.raises(LedgerError, match="does not exist"):
        SQLLedger(url).charge("d", PrivacyCost(0.1))
    empty = tmp_path / "empty.db"
    import sqlite3
    sqlite3.connect(empty).close()
    with pytest.raises(LedgerError, match="not initialised"):
        SQLLedger(f"sqlite:///{empty}").remaining("d")
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError):
        SQLLedger(f"sqlite:///{corrupt}").charge("d", PrivacyCost(0.1))
    SQLLedger(url).init("d", Budget(1.0))
    with pytest.raises(LedgerError, match="no budget"):
        SQLLedger(url).charge("other", PrivacyCost(0.1))
    for bad in ("ledger.db", "mysql://x/y", "sqlite://"):
        with pytest.raises(dm.InvalidParameterError):
            SQLLedger(bad)


def _race(url, barrier, results, amount, attempts):
    ledger = SQLLedger(url)
    barrier.wait()
    for _ in range(attempts):
        try:
            ledger.charge("d", PrivacyCost(amount), description=f"pid {os.getpid()}")
            results.put("ok")
        except dm.BudgetExceededError:
            results.put("refused")


def race_for_budget(url, processes=8, releases_allowed=3, *, amount=1.0, attempts=1):
    """``processes`` processes start together and each try ``attempts`` times to
    spend ``amount`` of a budget of ``releases_allowed * amount``; returns the
    sorted outcomes."""
    SQLLedger(url).init("d", Budget(float(Decimal(repr(amount)) * releases_allowed)))
    ctx = mp.get_context("spawn")
    # a process that dies before the barrier breaks it for the others after a minute
    # (the test then fails) rather than holding them there for good
    barrier, results = ctx.Barrier(processes, timeout=60), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(url, barrier, results, amount, attempts))
             for _ in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    return sorted(results.get(timeout=10) for _ in range(processes * attempts))


def test_eight_processes_race_for_three_releases(url):
    outcomes = race_for_budget(url)
    assert outcomes.count("ok") == 3 and outcomes.count("refused") == 5
    assert len(SQLLedger(url).history("d")) == 3


def test_pipeline_charges_the_persistent_ledger_and_prechecks(url):
    ledger = SQLLedger(url)
    ledger.init("t", Budget(1.5))
    gen = np.random.default_rng(0)  # test data only
    df = pd.DataFrame({"a": gen.random(2000), "b": gen.random(2000)})
    bounds = {"a": (0, 1), "b": (0, 1)}
    r = df.dpmic.pairwise(1.0, bounds=bounds, ledger=ledger, dataset="t")
    assert [h.charge_id for h in ledger.history("t")] == [r.charge_id]
    with pytest.raises(dm.BudgetExceededError, match="no data was read"):
        df.dpmic.pairwise(1.0, bounds=bounds, ledger=ledger, dataset="t")
    with pytest.raises(LedgerError, match="no budget"):
        df.dpmic.pairwise(0.1, bounds=bounds, ledger=ledger, dataset="unknown")


def test_unknown_dataset_is_refused_before_any_data_is_read(url):
    from tests.integration.test_pairwise_engine import exploding_frame

    SQLLedger(url).init("sales", Budget(1.0))
    df = pd.DataFrame({"a": [0.1, 0.2], "b": [0.3, 0.4]})
    for ledger in (SQLLedger(url), _capped_memory_ledger()):
        with pytest.raises(LedgerError, match="no budget"):
            exploding_frame(df).dpmic.pairwise(0.1, bounds={"a": (0, 1), "b": (0, 1)},
                                               ledger=ledger, dataset="Sales")
        with pytest.raises(LedgerError, match="no budget"):
            dm.private_mic(_Unreadable(), _Unreadable(), eps=0.1, x_bounds=(0, 1),
                           y_bounds=(0, 1), ledger=ledger, dataset="Sales")


def _capped_memory_ledger():
    ledger = dm.InMemoryLedger()
    ledger.set_budget("sales", Budget(1.0))
    return ledger


class _Unreadable:
    def __array__(self, *args, **kwargs):
        raise AssertionError("data was read")

    def __len__(self):
        raise AssertionError("data was read")


def test_every_ledger_follows_one_rule_for_unknown_datasets(url):
    SQLLedger(url).init("sales", Budget(1.0))
    memory = _capped_memory_ledger()
    for ledger in (SQLLedger(url), memory, dm.InMemoryLedger()):
        with pytest.raises(LedgerError, match="no budget"):
            ledger.charge("Sales", PrivacyCost(0.1))
        with pytest.raises(LedgerError, match="no budget"):
            ledger.check("Sales", PrivacyCost(0.1))
    assert memory.charges() == []
    uncapped = dm.InMemoryLedger(uncapped=True)
    uncapped.charge("anything", PrivacyCost(5.0))
    assert uncapped.remaining("anything") is None
    with pytest.raises(dm.InvalidParameterError, match="uncapped"):
        uncapped.set_budget("x", Budget(1.0))
    assert dm.session_ledger().uncapped


def test_crash_after_charge_keeps_the_charge(tmp_path, url):
    SQLLedger(url).init("t", Budget(5.0))
    script = textwrap.dedent(f"""
        import os, numpy as np, pandas as pd
        import dpmic_dask
        from dpmic_dask.privacy.ledger import SQLLedger
        def crash(*args, **kwargs):
            os._exit(17)  # the process dies between the charge and the noise
        import dpmic_dask.privacy.mechanisms.base as base
        base.noisy_values = crash
        df = pd.DataFrame({{"a": np.linspace(0, 1, 100), "b": np.linspace(1, 0, 100)}})
        df.dpmic.pairwise(2.0, bounds={{"a": (0, 1), "b": (0, 1)}},
                          ledger=SQLLedger({url!r}), dataset="t")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == 17, proc.stderr[-2000:]
    history = SQLLedger(url).history("t")
    assert len(history) == 1 and history[0].amount == Decimal("2.0")
    assert SQLLedger(url).remaining("t") == Decimal("3.0")


def _version_two_ledger(path):
    """A ledger as version 2 wrote it: run ids claimed per dataset, no jobs, no journal."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE dpmic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE dpmic_budgets (dataset TEXT PRIMARY KEY, epsilon TEXT NOT NULL,
                delta TEXT NOT NULL, created_at TEXT NOT NULL);
            CREATE TABLE dpmic_charges (charge_id TEXT PRIMARY KEY, dataset TEXT NOT NULL,
                created_at TEXT NOT NULL, amount TEXT NOT NULL, epsilon TEXT NOT NULL,
                delta TEXT NOT NULL, rho TEXT, description TEXT NOT NULL,
                mechanism TEXT NOT NULL, columns TEXT NOT NULL, run_id TEXT);
            CREATE UNIQUE INDEX dpmic_charges_run ON dpmic_charges (dataset, run_id);
            INSERT INTO dpmic_meta VALUES ('schema', '2');
            INSERT INTO dpmic_budgets VALUES ('d', '5.0', '0.0', 'then');
            INSERT INTO dpmic_charges VALUES ('c1', 'd', 'then', '1.0', '1.0', '0.0', NULL,
                'nightly', 'micr-lap', '["a", "b", "c"]', '2026-11-21');
        """)


def test_a_version_two_ledger_is_upgraded_and_its_run_ids_stay_claimed(tmp_path):

    from dpmic_dask.batch.cli import Exit
    from tests.integration.test_jobs import write_input
    from tests.jobfiles import write_job

    path = tmp_path / "v2.db"
    _version_two_ledger(path)
    url = f"sqlite:///{path}"
    write_input(tmp_path / "in")
    job = write_job(tmp_path / "job.toml", ledger=url)
    run = lambda run_id: invoke("run", job, "--run-id", run_id)  # noqa: E731
    # charged before the ledger kept values: never charged again, and said so
    old = run("2026-11-21")
    assert old.exit_code == Exit.RUN_CLAIMED and "before the ledger kept a journal" in old.output
    new = run("2026-11-22")
    assert new.exit_code == Exit.OK, new.output
    ledger = SQLLedger(url)
    assert sorted((h.run_id, str(h.job)) for h in ledger.history("d")) == [
        ("2026-11-21", "None"), ("2026-11-22", "nightly")]
    assert ledger.remaining("d") == Decimal("3.0")
    ledger.init("e", Budget(1.0))  # init on an upgraded ledger
    assert SQLLedger(url).remaining("e") == Decimal("1.0")


def test_init_upgrades_a_version_two_ledger(tmp_path):
    path = tmp_path / "v2.db"
    _version_two_ledger(path)
    ledger = SQLLedger(f"sqlite:///{path}")
    ledger.init("e", Budget(1.0))
    assert ledger.for_run("r", "job").charge("e", PrivacyCost(0.5)).charge_id
    assert [h.job for h in ledger.history("e")] == ["job"]


@pytest.mark.parametrize("column,value", [
    ("columns", "{{"),     # a field the history cannot parse
    ("epsilon", "many"),
    ("amount", "1_0"),     # Decimal alone reads 10
    ("amount", " 0.5"),
    ("amount", "-0"),
])
def test_a_hand_edited_charge_row_is_a_corrupt_ledger_for_a_charge_too(url, tmp_path, column,
                                                                       value):
    """A charge row that does not parse is refused as a corrupt ledger by the
    charge and the budget's sums as by the history (before, a run charged on past
    a row the history called corrupt, and an amount '1_0' counted as 10)."""
    import sqlite3

    ledger = SQLLedger(url)
    ledger.init("d", Budget(5.0))
    ledger.charge("d", PrivacyCost(0.5))
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE dpmic_charges SET {column} = ?", (value,))
    for read in (lambda: ledger.history("d"), lambda: ledger.remaining("d"),
                 lambda: ledger.charge("d", PrivacyCost(0.1))):
        with pytest.raises(LedgerError, match="corrupt"):
            read()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM dpmic_charges").fetchone()[0] == 1


@pytest.fixture
def read_only_mount(tmp_path):
    """An empty tmpfs (root only) and a function that remounts it read-only."""
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield mount, lambda: subprocess.run(["mount", "-o", "remount,ro", str(mount)],
                                            check=True)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_read_only_copy_with_charges_still_in_its_log_is_never_shown_short(
        tmp_path, read_only_mount):
    """A ledger copied onto read-only media with its write-ahead log but without
    the log's index (a backup of a writer's files): reading the file alone would
    miss the charges still in the log; ``budget show`` refuses it as read-only
    rather than show a budget less spent than it is."""
    import shutil
    import sqlite3

    mount, make_read_only = read_only_mount
    source = tmp_path / "src"
    source.mkdir()
    ledger = SQLLedger(f"sqlite:///{source / 'ledger.db'}")
    ledger.init("d", Budget(10.0))
    keep = sqlite3.connect(source / "ledger.db", isolation_level=None)  # no checkpoint
    keep.execute("PRAGMA wal_autocheckpoint = 0")
    keep.execute("SELECT COUNT(*) FROM dpmic_charges").fetchone()
    for amount in (1.0, 2.0, 3.0):
        ledger.charge("d", PrivacyCost(amount))
    wal = source / "ledger.db-wal"
    assert wal.stat().st_size > 0
    shutil.copy(source / "ledger.db", mount / "ledger.db")
    shutil.copy(wal, mount / "ledger.db-wal")
    keep.close()
    make_read_only()
    shown = invoke("budget", "show", "--ledger", f"sqlite:///{mount / 'ledger.db'}",
                   "--dataset", "d")
    if shown.exit_code == 0:
        assert "spent:     6" in shown.output, shown.output
    else:
        assert shown.exit_code == 4 and "read-only" in shown.output, shown.output


@pytest.fixture
def read_only_media(read_only_mount):
    """A ledger with one charge on a tmpfs remounted read-only (root only), as a
    backup on read-only media."""
    mount, make_read_only = read_only_mount
    url = f"sqlite:///{mount / 'ledger.db'}"
    ledger = SQLLedger(url)
    ledger.init("d", Budget(5.0))
    ledger.charge("d", PrivacyCost(0.5), description="before the backup")
    make_read_only()
    return url


def test_a_ledger_on_read_only_media_can_be_read_but_not_charged(read_only_media):
    """``budget show`` and ``history`` read a ledger that cannot be written (before,
    opening it in WAL mode failed and they said a release was refused); a
    charge is refused as read-only, nothing written."""
    url = read_only_media
    shown = invoke("budget", "show", "--ledger", url, "--dataset", "d")
    assert shown.exit_code == 0 and "remaining: 4.5" in shown.output, shown.output
    history = invoke("budget", "history", "--ledger", url, "--dataset", "d")
    assert history.exit_code == 0 and "before the backup" in history.output, history.output
    with pytest.raises(LedgerError, match="read-only"):
        SQLLedger(url).charge("d", PrivacyCost(0.1))
    assert SQLLedger(url).remaining("d") == Decimal("4.5")
