"""The ledger knows the privacy unit: one unit per dataset's budget, refused before
anything is read; stored in SQL ledgers (schema 5, upgraded in place); the
private choice of ``k`` (``contribution_bound``)."""

from __future__ import annotations

import sqlite3

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (the accessor)
from dpmic_dask.errors import InvalidParameterError, LedgerError
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.privacy.ledgerdb import SCHEMA_VERSION
from dpmic_dask.release.units import contribution_bound

BOUNDS = {"x": (0.0, 1.0), "y": (0.0, 1.0)}


def events(units=300, seed=1):
    gen = np.random.default_rng(seed)  # test data only
    sizes = gen.integers(1, 21, units)
    cid = np.repeat(np.arange(units), sizes)
    x = gen.uniform(0, 1, units)[cid]
    return pd.DataFrame({"cid": cid, "x": x, "y": x ** 2})


def unreadable():
    """A frame whose every partition fails when read: a refusal that comes before
    any read says so by being a LedgerError, not a DataReadError."""
    meta = events().iloc[:0]

    def boom():
        raise OSError("this partition must not be read")

    return dd.from_delayed([dask.delayed(boom)()], meta=meta)


@pytest.fixture
def ledger():
    led = InMemoryLedger()
    led.set_budget("per-customer", Budget(5.0, privacy_unit="cid"))
    led.set_budget("per-row", Budget(5.0))
    return led


def test_a_unit_budget_pays_for_unit_releases(ledger):
    ddf = dd.from_pandas(events(), npartitions=2)
    result = ddf.dpmic.pairwise(3.0, bounds=BOUNDS, privacy_unit="cid", max_rows_per_unit=4,
                                ledger=ledger, dataset="per-customer")
    assert result.privacy.privacy_unit == "cid"
    assert ledger.remaining("per-customer") == 2


@pytest.mark.parametrize("dataset,unit", [("per-customer", None), ("per-row", "cid"),
                                          ("per-customer", ["cid", "x"])])
def test_another_unit_is_refused_before_anything_is_read(ledger, dataset, unit):
    arguments = {} if unit is None else {"privacy_unit": unit, "max_rows_per_unit": 4}
    bounds = BOUNDS if unit != ["cid", "x"] else {"y": (0.0, 1.0), "z": (0.0, 1.0)}
    frame = unreadable()
    if "z" in bounds:
        frame = frame.assign(z=frame.y)
    with pytest.raises(LedgerError, match="one privacy unit"):
        frame.dpmic.pairwise(1.0, bounds=bounds, ledger=ledger, dataset=dataset, **arguments)
    assert ledger.charges() == []


def test_top_pairs_at_row_level_on_a_unit_dataset_is_refused(ledger):
    with pytest.raises(LedgerError, match="one privacy unit"):
        unreadable().dpmic.top_pairs(1, 1.0, bounds=BOUNDS, ledger=ledger,
                                     dataset="per-customer")


def test_sql_ledgers_store_the_unit(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = SQLLedger(url)
    ledger.init("sales", Budget(2.0, privacy_unit="customer_id"))
    ledger.init("plain", Budget(2.0))
    assert SQLLedger(url).budget_for("sales").privacy_unit == "customer_id"
    assert SQLLedger(url).budget_for("plain").privacy_unit is None
    with pytest.raises(LedgerError, match="one privacy unit"):
        unreadable().dpmic.pairwise(1.0, bounds=BOUNDS, ledger=url, dataset="sales")


def test_a_version_four_ledger_is_upgraded_and_its_budgets_stay_per_row(tmp_path):
    path = tmp_path / "v4.db"
    url = f"sqlite:///{path}"
    SQLLedger(url).init("old", Budget(1.0))
    with sqlite3.connect(path) as conn:  # back to the schema before the unit existed
        conn.execute("ALTER TABLE dpmic_budgets DROP COLUMN privacy_unit")
        conn.execute("ALTER TABLE dpmic_charges DROP COLUMN approx_delta")
        conn.execute("UPDATE dpmic_meta SET value = '4' WHERE key = 'schema'")
    assert SQLLedger(url).budget_for("old") == Budget(1.0)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM dpmic_meta").fetchone() == (SCHEMA_VERSION,)
    SQLLedger(url).init("new", Budget(1.0, privacy_unit="cid"))
    assert SQLLedger(url).budget_for("new").privacy_unit == "cid"


@pytest.mark.parametrize("bad", ["", 3, ("cid",)])
def test_a_budget_unit_is_a_name(bad):
    with pytest.raises(InvalidParameterError):
        Budget(1.0, privacy_unit=bad)


def test_contribution_bound_releases_a_quantile_of_rows_per_unit(ledger):
    ddf = dd.from_pandas(events(units=2000), npartitions=3)
    found = contribution_bound(ddf, "cid", 2.0, quantile=0.5, ledger=ledger,
                               dataset="per-customer")
    # sizes are uniform on 1..20: the median is 10 or 11; noise of scale 0.5 per bin
    assert 9 <= found.k <= 12
    assert found.privacy_unit == "cid" and ledger.remaining("per-customer") == 3
    with pytest.raises(LedgerError, match="one privacy unit"):
        contribution_bound(unreadable(), "cid", 1.0, ledger=ledger, dataset="per-row")
    with pytest.raises(InvalidParameterError):
        contribution_bound(ddf, "cid", 1.0, quantile=1.0)
    # the result is accepted as max_rows_per_unit as it is (it was refused, and only
    # after contribution_bound had been charged)
    result = ddf.dpmic.pairwise(1.0, bounds={"x": (0.0, 1.0), "y": (0.0, 1.0)},
                                columns=["x", "y"], privacy_unit="cid",
                                max_rows_per_unit=found, ledger=ledger,
                                dataset="per-customer")
    assert result.privacy.max_rows_per_unit == found.k
    with pytest.raises(InvalidParameterError, match="max_rows_per_unit"):
        ddf.dpmic.pairwise(1.0, bounds={"x": (0.0, 1.0), "y": (0.0, 1.0)},
                           columns=["x", "y"], privacy_unit="cid",
                           max_rows_per_unit=found.quantile, ledger=ledger,
                           dataset="per-customer")


def test_contribution_bound_on_pandas_is_the_same_rule():
    found = contribution_bound(events(units=2000), "cid", 5.0, quantile=0.9)
    assert 17 <= found.k <= 20
