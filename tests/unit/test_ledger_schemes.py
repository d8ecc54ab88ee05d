"""A ledger is one module that registers its URL scheme: the API's ``ledger=``
and the ``dpmic budget`` commands then build it from a URL, with no other edit."""

import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers .dpmic)
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy import accounting
from dpmic_dask.privacy.accounting import (
    InMemoryLedger,
    PersistentLedger,
    ledger_from_url,
    ledger_schemes,
    register_ledger_scheme,
)
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke

#: What the test ledger "persists": one in-memory ledger per URL.
STORES: dict[str, InMemoryLedger] = {}


class KeptLedger(InMemoryLedger):
    """An in-memory ledger kept by URL, with the administration a URL ledger offers."""

    def init(self, dataset, budget):
        self.set_budget(dataset, budget)

    def check_writable(self):
        return None


def kept_ledger(url: str) -> KeptLedger:
    return STORES.setdefault(url, KeptLedger())  # type: ignore[return-value]


@pytest.fixture
def kept_scheme(monkeypatch):
    monkeypatch.setattr(accounting, "_LEDGER_SCHEMES", dict(accounting._LEDGER_SCHEMES))
    STORES.clear()
    register_ledger_scheme("kept")(kept_ledger)
    return "kept://nightly"


def test_builtin_schemes_build_the_sql_ledger():
    assert {"sqlite", "postgresql", "postgres"} <= set(ledger_schemes())
    assert isinstance(ledger_from_url("sqlite:///somewhere/ledger.db"), SQLLedger)
    assert isinstance(ledger_from_url("sqlite:///somewhere/ledger.db"), PersistentLedger)


@pytest.mark.parametrize("url, message", [
    ("mysql://host/db", "no ledger is registered for URL scheme 'mysql'"),
    ("ledger.db", "a ledger URL looks like scheme://"),
    (42, "a ledger URL looks like scheme://"),
])
def test_unknown_or_malformed_urls_are_refused(url, message):
    with pytest.raises(InvalidParameterError, match=message):
        ledger_from_url(url)


def test_a_registered_scheme_serves_the_api_and_the_budget_commands(kept_scheme):
    done = invoke(["budget", "init", "--ledger", kept_scheme, "--dataset", "d",
                                "--eps", "2"])
    assert done.exit_code == 0, done.output
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, 2_000)
    frame = pd.DataFrame({"x": x, "y": x + rng.uniform(0, 0.1, 2_000)})
    frame.dpmic.pairwise(0.5, bounds={"x": (0, 1), "y": (0, 1.1)}, ledger=kept_scheme,
                         dataset="d")
    assert float(STORES[kept_scheme].remaining("d")) == pytest.approx(1.5)
    shown = invoke(["budget", "show", "--ledger", kept_scheme, "--dataset", "d"])
    assert shown.exit_code == 0, shown.output
    assert "in 1 release(s)" in shown.output and "remaining: 1.5" in shown.output
    with accounting.using_ledger(kept_scheme):
        frame.dpmic.pairwise(1.5, bounds={"x": (0, 1), "y": (0, 1.1)}, dataset="d")
    assert float(STORES[kept_scheme].remaining("d")) == 0


def test_a_release_with_an_unknown_scheme_is_refused_and_charges_nothing(kept_scheme):
    frame = pd.DataFrame({"x": [0.1, 0.2, 0.3], "y": [0.3, 0.4, 0.5]})
    with pytest.raises(InvalidParameterError, match="no ledger is registered"):
        frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (0, 1)}, ledger="nope://x")
    assert STORES == {}


def test_dpmic_run_needs_a_ledger_that_keeps_a_journal(kept_scheme, tmp_path):
    from dpmic_dask.batch.runner import open_ledger

    with pytest.raises(InvalidParameterError, match="keeps a release journal"):
        open_ledger(kept_scheme)
    SQLLedger(f"sqlite:///{tmp_path}/ledger.db").init("d", accounting.Budget(1.0))
    assert isinstance(open_ledger(f"sqlite:///{tmp_path}/ledger.db"), SQLLedger)
