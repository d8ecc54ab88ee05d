"""Approximate parts in every ledger: a charge whose part has a bad-event delta
``p`` (categories chosen from the values that occur) lowers the budget's rho cap:
rho must convert to ``(eps - ln(1 / (1 - p)), delta - p)``."""

from __future__ import annotations

import sqlite3
from decimal import Decimal

import pytest

import dpmic_dask as dm
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.privacy.conversion import rho_cap, rho_from_eps_delta
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.privacy.ledgerdb import SCHEMA_VERSION
from tests.cli import invoke

EPS, DELTA = 1.0, 1e-6
#: A release's approximate part: about half of its delta.
APPROX = DELTA / 2 * 0.999


def approx_cost(rho=None, approx=APPROX) -> PrivacyCost:
    rho = rho_cap(EPS, DELTA, approx) if rho is None else rho
    return PrivacyCost(EPS, DELTA, rho, approx)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def ledger(request, tmp_path):
    if request.param == "memory":
        led = InMemoryLedger()
        led.set_budget("d", Budget(EPS, DELTA))
        led.set_budget("pure", Budget(EPS))
        return led
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ledger.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    led = SQLLedger(url)
    led.init("d", Budget(EPS, DELTA))
    led.init("pure", Budget(EPS))
    return led


def test_a_release_with_an_approximate_part_fits_its_own_budget_exactly(ledger):
    cost = approx_cost()
    ledger.check("d", cost)
    ledger.charge("d", cost, description="categories from the values that occur")
    assert ledger.remaining("d") == 0
    assert ledger.approx_spent("d") == Decimal(repr(APPROX))
    with pytest.raises(dm.BudgetExceededError):
        ledger.charge("d", PrivacyCost(EPS, DELTA, 1e-9))
    (record,) = ledger.history("d")
    assert record.cost.approx_delta == APPROX


def test_the_approximate_part_lowers_the_cap(ledger):
    full = rho_from_eps_delta(EPS, DELTA)
    lowered = rho_cap(EPS, DELTA, APPROX)
    assert lowered < full
    ledger.charge("d", PrivacyCost(EPS, DELTA, 0.999 * full))  # a plain zCDP release
    # the same rho without a bad event still fits; with one, the cap drops below it
    ledger.check("d", PrivacyCost(EPS, DELTA, 0.0005 * full))
    with pytest.raises(dm.BudgetExceededError):
        ledger.check("d", approx_cost(rho=0.0005 * full))
    with pytest.raises(dm.BudgetExceededError):
        ledger.charge("d", approx_cost(rho=0.0005 * full))
    assert ledger.approx_spent("d") == 0
    assert len(ledger.history("d")) == 1


def test_bad_event_deltas_add_up_until_the_delta_is_gone(ledger):
    part = DELTA / 3
    tiny = 1e-12
    for _ in range(2):
        ledger.charge("d", PrivacyCost(EPS, DELTA, tiny, part))
    with pytest.raises(dm.BudgetExceededError, match="no delta left"):
        ledger.charge("d", PrivacyCost(EPS, DELTA, tiny, part * 1.01))
    assert ledger.approx_spent("d") == 2 * Decimal(repr(part))


def test_a_pure_budget_refuses_an_approximate_part(ledger):
    with pytest.raises(dm.BudgetMismatchError, match="values that occur"):
        ledger.check("pure", approx_cost())
    assert ledger.history("pure") == []


def test_a_version_five_ledger_is_upgraded_and_keeps_its_charges(tmp_path):
    path = tmp_path / "v5.db"
    url = f"sqlite:///{path}"
    SQLLedger(url).init("d", Budget(EPS, DELTA))
    SQLLedger(url).charge("d", PrivacyCost(EPS, DELTA, 0.01))
    with sqlite3.connect(path) as conn:  # back to the schema before approximate parts
        conn.execute("ALTER TABLE dpmic_charges DROP COLUMN approx_delta")
        conn.execute("UPDATE dpmic_meta SET value = '5' WHERE key = 'schema'")
    ledger = SQLLedger(url)
    assert ledger.approx_spent("d") == 0
    assert ledger.remaining("d") == Decimal(repr(rho_from_eps_delta(EPS, DELTA))) - \
        Decimal("0.01")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM dpmic_meta").fetchone() == (SCHEMA_VERSION,)
    ledger.charge("d", approx_cost(rho=0.001))
    assert ledger.history("d")[-1].cost.approx_delta == APPROX


@pytest.mark.parametrize("approx", [-1e-9, float("nan"), DELTA])
def test_an_approximate_part_is_a_delta_below_the_statement(approx):
    with pytest.raises(dm.InvalidParameterError):
        PrivacyCost(EPS, DELTA, 0.01, approx)
    with pytest.raises(dm.InvalidParameterError):
        PrivacyCost(EPS, 0.0, None, 1e-9)  # pure costs have no approximate part


def test_budget_show_and_forecast_count_the_bad_event_deltas(tmp_path):
    from dpmic_dask.batch.runner import forecast

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = SQLLedger(url)
    ledger.init("d", Budget(EPS, DELTA))
    rho = rho_from_eps_delta(EPS, DELTA) / 10 * 0.999
    plain = PrivacyCost(EPS, DELTA, rho)
    with_part = PrivacyCost(EPS, DELTA, rho, DELTA / 4)
    assert forecast(ledger, "d", plain).runs == 10
    # each run also takes a quarter of delta: the fourth has no delta left
    runs = forecast(ledger, "d", with_part).runs
    assert runs == 3
    for _ in range(runs):
        ledger.charge("d", with_part)
    with pytest.raises(dm.BudgetExceededError):
        ledger.check("d", with_part)
    shown = invoke(["budget", "show", "--ledger", url, "--dataset", "d"])
    assert shown.exit_code == 0, shown.output
    assert "bad-event delta: 7.5E-7" in shown.output


class ForgetfulLedger:
    """A ledger that adds up rho but keeps no bad-event deltas."""

    def __init__(self):
        self.inner = InMemoryLedger(uncapped=True)

    def check(self, dataset, cost):
        self.inner.check(dataset, cost)

    def charge(self, dataset, cost, **details):
        return self.inner.charge(dataset, cost, **details)

    def remaining(self, dataset):
        return None

    def history(self, dataset):
        return self.inner.history(dataset)


def test_a_ledger_that_keeps_no_bad_event_deltas_cannot_pay_for_one():
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"g": pd.Series(["a", "b"] * 50, dtype=object),
                          "x": np.linspace(0, 1, 100)})
    ledger = ForgetfulLedger()
    with pytest.raises(dm.LedgerError, match="bad-event deltas"):
        frame.dpmic.pairwise(eps=1.0, delta=1e-6, bounds={"x": (0, 1)},
                             categories={"g": "private"}, ledger=ledger)
    assert ledger.history("d") == []
    frame.dpmic.pairwise(eps=1.0, delta=1e-6, bounds={"x": (0, 1)},
                         categories={"g": {"private": ["a", "b"]}}, ledger=ledger)
    assert len(ledger.inner.charges()) == 1  # candidates have no bad event: it pays
