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
from dpmic_dask.accounting import Budget, PrivacyCost
from dpmic_dask.conversion import rho_from_eps_delta
from dpmic_dask.errors import LedgerError
from dpmic_dask.ledger import SQLLedger


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
    barrier, results = ctx.Barrier(processes), ctx.Queue()
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
        from dpmic_dask.ledger import SQLLedger
        def crash(*args, **kwargs):
            os._exit(17)  # the process dies between the charge and the noise
        import dpmic_dask.mechanisms.base as base
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
