"""``dpmic_dask.private_categories``: the choice on its own, one charge.

The keep rates fit the noise scale and threshold derived here from the
documented rules (the whole budget to the choice, split over the columns), and
not 0.7x or 1.3x that scale, nor zero noise; the charge is the one asked for.
"""

from __future__ import annotations

import math

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from tests.statistical.helpers import rerun_once
from tests.statistical.test_categories_selection import fits
from tests.statistical.test_release_noise_paths import zero_noise

pytestmark = pytest.mark.slow

VALUES = 40


def _unknown_rule(eps, delta, columns):
    p = delta / 2
    rho = rho_from_eps_delta(eps + math.log1p(-p), delta - p)
    scale = 2.0 / math.sqrt(2 * rho / columns)
    r = math.exp(-1.0 / scale)
    threshold = 1
    while r ** (threshold - 1) / (1 + r) > p / columns:
        threshold += 1
    return scale, threshold


def _candidate_rule(eps, columns, candidates):
    scale = 2.0 / (eps / columns)
    return scale, max(1, math.ceil(scale * math.log(candidates / 0.05)))


def _table(threshold):
    counts = [threshold - 4 + j % 4 for j in range(VALUES)]
    values = np.repeat([f"v{j:02d}" for j in range(VALUES)], counts)
    return pd.DataFrame({"g": pd.Series(values, dtype=object),
                         "h": np.where(np.arange(values.size) % 2 == 0, "a", "b")})


def _rates(release, threshold, runs, sampler_zero=False):
    frame = _table(threshold)
    kept, trials = np.zeros(4), np.zeros(4)
    for _ in range(runs):
        if sampler_zero:
            with zero_noise():
                chosen = set(release(frame).categories["g"])
        else:
            chosen = set(release(frame).categories["g"])
        for j in range(VALUES):
            kept[j % 4] += f"v{j:02d}" in chosen
            trials[j % 4] += 1
    return kept, trials


CANDIDATES = [f"v{j:02d}" for j in range(VALUES)] + ["never"]


@pytest.mark.parametrize("kind", ["unknown", "candidates"])
@rerun_once
def test_the_choice_alone_draws_its_noise_at_the_stated_scale(kind):
    if kind == "unknown":
        eps, delta = 8.0, 1e-4
        scale, threshold = _unknown_rule(eps, delta, 2)
        columns = {"g": "private", "h": "private"}
    else:
        eps, delta = 4.0, 0.0
        scale, threshold = _candidate_rule(eps, 2, len(CANDIDATES))
        columns = {"g": CANDIDATES, "h": ["a", "b"]}

    def release(frame):
        return dm.private_categories(frame, eps, delta=delta, columns=columns,
                                     ledger=dm.InMemoryLedger(uncapped=True))

    shown = release(_table(threshold)).details["g"]
    assert f"threshold {threshold}" in shown
    kept, trials = _rates(release, threshold, 400)  # 4,000 trials a level: 1.3x is far off
    assert fits(kept, trials, scale, threshold)
    assert not fits(kept, trials, 0.7 * scale, threshold)
    assert not fits(kept, trials, 1.3 * scale, threshold)
    kept, trials = _rates(release, threshold, 20, sampler_zero=True)
    assert not fits(kept, trials, scale, threshold)


def test_one_charge_of_what_was_asked_and_lists_to_reuse():
    gen = np.random.default_rng(4)  # test data only
    n = 40_000
    frame = pd.DataFrame({"region": pd.Series(gen.choice(["n", "s", "e"], n),
                                              dtype="string[pyarrow]"),
                          "plan": pd.Categorical(gen.choice(["basic", "pro"], n),
                                                 categories=["basic", "pro", "legacy"]),
                          "x": gen.uniform(0, 1, n)})
    ledger = dm.InMemoryLedger()
    ledger.set_budget("d", dm.Budget(2.0, 1e-6))
    chosen = dm.private_categories(dd.from_pandas(frame, npartitions=3), 1.0, delta=1e-6,
                                   columns={"region": "private",
                                            "plan": ["basic", "pro", "legacy", "gold"]},
                                   ledger=ledger, dataset="d")
    assert chosen.categories["region"] == ("e", "n", "s")
    # legacy and gold hold no row: each is kept with probability up to FALSE_KEEP / 8
    # whatever eps is (the threshold's design), so the list holds the two that occur
    # and perhaps one of those, in candidate order
    plan = chosen.categories["plan"]
    assert {"basic", "pro"} <= set(plan) <= {"basic", "pro", "legacy", "gold"}
    assert list(plan) == [c for c in ("basic", "pro", "legacy", "gold") if c in plan]
    (charge,) = ledger.charges()
    assert charge.cost.epsilon == 1.0 and charge.cost.approx_delta > 0
    # the lists are public from now on: a release with private bounds takes them
    res = frame.dpmic.pairwise(0.9, delta=1e-6, bounds={"x": "private"},
                               categories=chosen.categories, ledger=ledger, dataset="d")
    assert len(res.values) == 3 and len(ledger.charges()) == 2


@pytest.mark.parametrize("columns,options,words", [
    ({"g": "private"}, {}, "delta > 0"),
    ({"x": "private"}, {"delta": 1e-6}, r"'x' \(dtype float64\)"),
    ({"g": "guess"}, {}, "'private' or a list"),
    ({}, {}, "columns must be a dict"),
    ({"g": ["a", "b"]}, {"nulls": "drop"}, "nulls must be"),
    # candidates no value of the column can ever be (a charge for nothing before)
    ({"x": ["a", "b"]}, {}, r"'x' \(dtype float64\) cannot have its categories chosen"),
    ({"b": ["a", "b"]}, {}, r"'b' \(dtype binary\[pyarrow\]\) cannot have"),
])
def test_refusals_before_anything_is_read(columns, options, words):
    import pyarrow as pa

    frame = pd.DataFrame({"g": pd.Series(["a", "b"] * 10, dtype=object),
                          "x": np.linspace(0, 1, 20),
                          "b": pd.array([b"a", b"b"] * 10, dtype=pd.ArrowDtype(pa.binary()))})
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match=words):
        dm.private_categories(frame, 1.0, columns=columns, ledger=ledger, **options)
    assert not ledger.charges()


def test_a_choice_keeping_nothing_or_one_category_is_said_and_reusable():
    """Nothing kept: no warning (pairwise warns), a report without its charge. One
    kept: its list was refused on reuse ("at least two categories")."""
    gen = np.random.default_rng(6)  # test data only
    n = 20_000
    frame = pd.DataFrame({"region": np.full(n, "north", dtype=object),
                          "x": gen.uniform(0, 1, n)})
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.warns(dm.BoundsWarning, match=r"No category kept for \['region'\]"):
        nothing = dm.private_categories(frame, 1e-5, columns={"region": ["north", "rare"]},
                                        ledger=ledger)
    assert nothing.categories["region"] == ()
    report = nothing.report()
    assert "No category kept for ['region']" in report
    assert f"Ledger charge: {nothing.charge_id}." in report
    one = dm.private_categories(frame, 4.0, columns={"region": ["north"]}, ledger=ledger)
    assert one.categories["region"] == ("north",)
    reused = frame.dpmic.pairwise(1.0, bounds={"x": (0, 1)}, categories=one.categories,
                                  ledger=ledger)
    assert len(reused.values) == 1
