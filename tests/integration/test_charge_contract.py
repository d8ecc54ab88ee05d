"""Nothing after the charge can refuse (SPEC section 6), on every path of a release
of several steps: every check of the data and of the plan runs before the one
charge, and what only a later pass could find is found by the first."""

import os
import threading

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.checks import check_bounds
from dpmic_dask.errors import ReleaseIncompleteError
from dpmic_dask.release.histograms import noisy_histograms
from dpmic_dask.testing import seeded_noise


def _table(n=2000, seed=0):
    gen = np.random.default_rng(seed)  # test data only
    a = gen.uniform(0, 1, n)
    return pd.DataFrame({"a": a, "b": np.sin(6 * a) + gen.normal(0, 0.1, n),
                         "c": gen.uniform(0, 1, n)})


MIXED = {"a": "private", "b": "private", "c": (0.0, 1.0)}


def test_a_missing_value_in_a_public_column_beside_private_bounds_is_refused_uncharged():
    frame = _table()
    frame.loc[1234, "c"] = np.nan
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.MissingValuesError, match="'c'") as info:
        frame.dpmic.pairwise(1.0, bounds=MIXED, ledger=ledger)
    assert "nothing was charged" in str(info.value)
    assert ledger.charges() == []
    for call in (lambda: frame.dpmic.top_pairs(1, 1.0, bounds=MIXED, ledger=ledger),
                 lambda: frame.dpmic.pairs_above(0.2, 1.0, bounds=MIXED, max_pairs=2,
                                                 ledger=ledger)):
        with pytest.raises(dm.MissingValuesError):
            call()
    assert ledger.charges() == []
    # with a public fill for every column, the same table is released (one charge)
    result = frame.dpmic.pairwise(10.0, bounds=MIXED, nulls="fill",
                                  fill={"a": 0.5, "b": 0.0, "c": 0.5}, ledger=ledger)
    assert len(result.pairs) == 3 and len(ledger.charges()) == 1


def test_a_cell_that_is_not_a_number_in_a_public_column_is_refused_uncharged():
    """A column-projected input (as Parquet or SQL ranges read only the columns
    asked for): the bad cell is found only by reading column c, which the bounds'
    pass now does."""
    frame = _table(3000)
    second = frame.iloc[1500:].astype({"c": object})
    second.iloc[10, 2] = "SECRET-alice"
    parts = [dask.delayed(lambda p: p)(frame.iloc[:1500]), dask.delayed(lambda p: p)(second)]
    ddf = dd.from_delayed(parts, meta=frame.iloc[:0], verify_meta=False)
    ledger = dm.InMemoryLedger(uncapped=True)
    with dask.config.set(scheduler="sync"), pytest.raises(dm.DPMICError) as info:
        ddf.dpmic.pairwise(10.0, bounds=MIXED, ledger=ledger)
    assert "SECRET" not in str(info.value) and "alice" not in str(info.value)
    assert "'c'" in str(info.value)
    assert ledger.charges() == []


def test_a_release_too_small_to_sample_is_refused_before_the_charge():
    frame = _table()
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match="sampling limit"):
        frame.dpmic.pairwise(1e-7, bounds="private", columns=["a", "b", "c"], ledger=ledger)
    with pytest.raises(dm.InvalidParameterError, match="sampling limit"):
        frame.dpmic.top_pairs(1, 1e-7, bounds="private", columns=["a", "b", "c"],
                              ledger=ledger)
    assert ledger.charges() == []


@pytest.mark.parametrize("bounds", [MIXED, {"a": (0, 1), "b": (-2, 2), "c": (0, 1)}])
def test_a_grid_without_a_tau_layout_is_refused_before_anything_is_read(bounds):
    frame = _table()
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match="tau"):
        frame.dpmic.top_pairs(1, 1.0, bounds=bounds, B=8, c=3, screen_B=40,
                              statistics=("mic", "tau_a"), ledger=ledger)
    with pytest.raises(dm.InvalidParameterError, match="tau"):
        frame.dpmic.pairwise(1.0, bounds=bounds, B=8, c=3, statistics=("mic", "tau_a"),
                             ledger=ledger)
    assert ledger.charges() == []


def test_bounds_of_huge_magnitudes_are_valid_public_bounds():
    n = 4000
    x = np.linspace(-1.0, 1.0, n) * 1.7e308
    frame = pd.DataFrame({"x": x, "y": x[::-1].copy()})
    ledger = dm.InMemoryLedger(uncapped=True)
    found = dm.private_bounds(frame, 20.0, columns=["x", "y"], ledger=ledger)
    for name in ("x", "y"):
        lo, hi = check_bounds(found.bounds[name], name)  # reusable as public bounds
        assert np.isfinite(hi - lo)
    again = frame.dpmic.pairwise(20.0, bounds=found.bounds, ledger=ledger)
    inside = frame.dpmic.pairwise(20.0, bounds="private", columns=["x", "y"], ledger=ledger)
    exact = dm.micr(x, x[::-1].copy(), x_bounds=found.bounds["x"], y_bounds=found.bounds["y"],
                    B=again.B, c=again.c)
    assert exact > 0.95
    assert again.values[0] > 0.9 and inside.values[0] > 0.9  # noise scale ~0.002


def test_noisy_histograms_add_in_exact_integers():
    os.environ["DPMIC_DASK_ALLOW_SEEDED_NOISE"] = "1"
    counts = np.array([[0, 3, 2**53 + 1, 7]], dtype=np.int64)
    with pytest.warns(dm.PrivacyLeakWarning), seeded_noise(5, not_private=True):
        (noisy,), scale = noisy_histograms(counts, 1.0)
    with pytest.warns(dm.PrivacyLeakWarning), seeded_noise(5, not_private=True):
        from dpmic_dask.privacy.noise import active_sampler
        z = active_sampler().discrete_laplace(scale, 4)
    assert noisy.dtype == np.int64
    assert noisy.tolist() == [int(a) + int(b) for a, b in zip(counts[0], z)]


def test_top_pairs_with_k_at_least_the_pairs_spends_nothing_on_choosing():
    frame = _table(5000)
    bounds = {"a": (0, 1), "b": (-2, 2), "c": (0, 1)}
    ledger = dm.InMemoryLedger(uncapped=True)
    top = frame.dpmic.top_pairs(3, 1.0, bounds=bounds, ledger=ledger)
    every = frame.dpmic.pairwise(1.0, bounds=bounds, ledger=ledger)
    assert top.privacy.ci95 == pytest.approx(every.privacy.ci95)  # the whole budget
    assert "nothing is spent on choosing" in top.privacy.selection
    assert list(top.values) == sorted(top.values, reverse=True)  # ordered by value
    assert sorted(top.pairs) == sorted(every.pairs)
    assert [c.cost.epsilon for c in ledger.charges()] == [1.0, 1.0]
    with_tau = frame.dpmic.top_pairs(5, 1.0, bounds=bounds, statistics=("mic", "tau_a"),
                                     ledger=ledger)
    assert with_tau.privacy.ci95 == pytest.approx(2 * every.privacy.ci95)  # half to tau
    assert len(with_tau.tau_a) == 3


@pytest.mark.parametrize("front", [{}, {"bounds_check": 0.05}])
def test_pairs_above_that_passes_nothing_says_the_release_share_was_not_spent(front):
    frame = _table(5000)
    frame["b"] = np.random.default_rng(3).uniform(0, 1, len(frame))
    bounds = {"a": (0, 1), "b": (0, 1), "c": (0, 1)}
    # with a step in front of it too: the report derived from the plan says it
    result = frame.dpmic.pairs_above(0.99, 50.0, bounds=bounds, max_pairs=1, **front)
    assert result.pairs == ()
    assert "not spent" in result.privacy.parts
    assert "not spent" in result.report()


def test_a_failure_after_the_charge_names_the_charge_and_never_says_nothing_was_charged():
    """Data that changes between the passes of a release (the one thing no check
    before the charge can see): the first pass is clean, later ones hold a NaN."""
    frame = _table()
    calls = {"n": 0}
    lock = threading.Lock()

    def load():
        with lock:
            calls["n"] += 1
            later = calls["n"] > 1
        part = frame.copy()
        if later:
            part.loc[5, "c"] = np.nan
        return part

    ddf = dd.from_delayed([dask.delayed(load)()], meta=frame.iloc[:0])
    ledger = dm.InMemoryLedger(uncapped=True)
    with dask.config.set(scheduler="sync"), pytest.raises(ReleaseIncompleteError) as info:
        # one pass before the charge (a check of the bounds would be a second)
        ddf.dpmic.pairwise(10.0, bounds=MIXED, ledger=ledger, bounds_check=None)
    (charge,) = ledger.charges()
    message = str(info.value)
    assert charge.charge_id in message and "charged" in message
    assert "nothing was charged" not in message


@pytest.mark.parametrize("eps, delta", [(1e-6, 1e-6), (1e-3, 1e-9), (1.0, 1e-6), (50.0, 1e-5)])
def test_the_release_part_under_zcdp_is_the_largest_eps_that_fits(eps, delta):
    """The release's part of a zCDP budget: found by bisection (at tiny rho the two
    conversions are not inverses, and stepping down one ulp at a time never ended)."""
    from dpmic_dask.privacy.conversion import eps_within_rho, rho_from_eps_delta

    rest = 0.9 * rho_from_eps_delta(eps, delta)
    part = eps_within_rho(rest, delta)
    assert rho_from_eps_delta(part, delta) <= rest
    assert rho_from_eps_delta(part * (1 + 1e-8), delta) > rest


def test_a_tiny_zcdp_budget_with_private_bounds_is_refused_before_the_charge():
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match="sampling limit"):
        _table().dpmic.pairwise(1e-6, delta=1e-6, bounds="private", columns=["a", "b", "c"],
                                ledger=ledger)
    assert ledger.charges() == []


def test_a_ledger_of_the_wrong_type_is_refused_by_every_release_before_reading():
    frame = _table()
    bounds = {"a": (0, 1), "b": (-2, 2), "c": (0, 1)}
    x, y = frame["a"].to_numpy(), frame["c"].to_numpy()
    for call in (lambda: frame.dpmic.pairwise(1.0, bounds=bounds, ledger={}),
                 lambda: dm.private_bounds(frame, 1.0, columns=["a"], ledger={}),
                 lambda: dm.private_mic(x, y, eps=1.0, x_bounds=(0, 1), y_bounds=(0, 1),
                                        ledger={})):
        with pytest.raises(dm.InvalidParameterError, match="not a dict"):
            call()


def test_a_cluster_failure_after_a_count_noise_charge_names_the_charge(monkeypatch):
    """micr-geom computes MICr of the noisy counts on the cluster after the charge;
    a failure there is reported as what it is: charged, nothing released."""
    from dpmic_dask.backends.dask import DaskBackend

    def broken(self, counts, fn):
        raise dm.DataReadError("reading or counting column(s) [] failed with OSError")

    monkeypatch.setattr(DaskBackend, "map_counts", broken)
    ddf = dd.from_pandas(_table(), npartitions=2)
    ledger = dm.InMemoryLedger(uncapped=True)
    with dask.config.set(scheduler="sync"), pytest.raises(ReleaseIncompleteError) as info:
        ddf.dpmic.pairwise(10.0, bounds={"a": (0, 1), "b": (-2, 2), "c": (0, 1)},
                           mechanism="micr-geom", B=8, c=1, ledger=ledger)
    (charge,) = ledger.charges()
    assert charge.charge_id in str(info.value)
