"""A release charged at a large ``eps`` says so before the charge (the accounting
is right; the guarantee protects little), and goes on."""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpmic_dask
from dpmic_dask.release.charge import LARGE_EPSILON


def frame() -> pd.DataFrame:
    gen = np.random.default_rng(0)
    x = gen.random(2000)
    return pd.DataFrame({"x": x, "y": x + gen.normal(0, 0.1, 2000)})


def ledger() -> dpmic_dask.InMemoryLedger:
    book = dpmic_dask.InMemoryLedger()
    book.set_budget("default", dpmic_dask.Budget(1e13))
    return book


@pytest.mark.parametrize("eps", [12.0, 1e12])
def test_a_large_eps_is_said_before_the_charge(eps):
    book = ledger()
    with pytest.warns(dpmic_dask.LargeEpsilonWarning, match="protects little") as seen:
        result = frame().dpmic.pairwise(eps, ledger=book, bounds={"x": (0, 1), "y": (-1, 2)})
    assert len(book.charges("default")) == 1 and len(result.pairs) == 1
    (said,) = [w for w in seen if w.category is dpmic_dask.LargeEpsilonWarning]
    assert f"{eps:.4g}" in str(said.message)
    assert said.filename == __file__  # points at the user's own line


def test_the_warning_comes_before_the_charge():
    """Under an error filter the release refuses before anything is charged."""
    book = ledger()
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpmic_dask.LargeEpsilonWarning)
        with pytest.raises(dpmic_dask.LargeEpsilonWarning):
            frame().dpmic.pairwise(50.0, ledger=book, bounds={"x": (0, 1), "y": (-1, 2)})
    assert book.charges("default") == []


@pytest.mark.parametrize("eps", [1.0, LARGE_EPSILON])
def test_an_ordinary_eps_is_not_warned(eps):
    book = ledger()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        frame().dpmic.pairwise(eps, ledger=book, bounds={"x": (0, 1), "y": (-1, 2)})
    assert not [w for w in seen if issubclass(w.category, dpmic_dask.LargeEpsilonWarning)]


def test_other_releases_say_it_too():
    """Every release is charged by the one executor: private bounds too."""
    book = ledger()
    with pytest.warns(dpmic_dask.LargeEpsilonWarning):
        dpmic_dask.private_bounds(frame(), 20.0, columns=["x", "y"], ledger=book)
    assert len(book.charges("default")) == 1
