"""Choosing ``max_rows_per_unit`` by the error of the release (contribution_bound's
``release=``): the prediction from the released histogram, the rule, and the
public function with seeded noise."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (the accessor)
from dpmic_dask.errors import InvalidParameterError, PrivacyLeakWarning
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.release.choose_k import (
    KCandidate,
    choose_by_error,
    kept_rows,
    noise_at,
    predict,
    resolved_top,
)
from dpmic_dask.release.rowcount import plan_row_count
from dpmic_dask.release.units import (
    choose_from_histogram,
    contribution_bound,
    size_grid,
)
from dpmic_dask.testing import ENV_FLAG, seeded_noise

BOUNDS = {"x": (0.0, 1.0), "y": (0.0, 1.0), "z": (0.0, 1.0)}


def heavy_sizes(light=2000, heavy=250, seed=5):
    """Rows per unit: many units with 3 rows, a heavy tail of units with 200 to
    2,000 rows (most of the rows). The 0.9 quantile of units lands in the tail."""
    gen = np.random.default_rng(seed)  # test data only
    return np.concatenate([np.full(light, 3), gen.integers(200, 2001, heavy)])


def histogram(sizes, grid):
    bins = np.searchsorted(grid, sizes, side="right") - 1
    return np.bincount(bins, minlength=grid.size)


def frame_of(sizes, seed=6):
    gen = np.random.default_rng(seed)  # test data only
    cid = np.repeat(np.arange(sizes.size), sizes)
    x = gen.uniform(0, 1, cid.size)
    return pd.DataFrame({"cid": cid, "x": x, "y": np.clip(x ** 2 + gen.normal(0, .02, x.size),
                                                          0, 1),
                         "z": gen.uniform(0, 1, cid.size)})


def schema_plan(k=1, unit="cid"):
    return frame_of(np.array([2, 2])).dpmic.plan(1.0, bounds=BOUNDS, privacy_unit=unit,
                                                 max_rows_per_unit=k)


def test_kept_rows_is_exact_on_the_singleton_bins_without_noise():
    grid = size_grid()
    sizes = np.array([1, 1, 2, 5, 9, 16, 16])
    kept = kept_rows(histogram(sizes, grid), grid, scale=1e-9)
    for k in range(1, 17):
        assert kept[k - 1] == np.minimum(sizes, k).sum()
    assert np.all(np.diff(kept) >= 0)  # flat beyond the largest unit


def test_kept_rows_ignores_the_noise_above_the_last_resolved_bin():
    grid = size_grid()
    counts = np.zeros(grid.size, dtype=np.int64)
    counts[2] = 1000  # 1000 units of 3 rows
    counts[-5:] = [7, 0, 12, 3, 9]  # noise far up the grid: no unit there
    assert resolved_top(counts, scale=10.0) == 2
    kept = kept_rows(counts, grid, scale=10.0)
    # the noisy units above are counted (unbiased), at the resolved bin's size
    assert kept[0] == 1031 and kept[2] == 3 * 1031 and kept[-1] == kept[2]


def test_the_error_rule_picks_a_small_k_where_the_quantile_picks_a_noisy_one():
    grid = size_grid()
    sizes = heavy_sizes()
    planned = schema_plan()._planned
    exact = histogram(sizes, grid)
    by_quantile = choose_from_histogram(exact, grid, planned, rule="quantile", quantile=0.9,
                                        tolerance=1.1, epsilon=1.0, noise_scale=1.0,
                                        privacy_unit="cid", charge_id="c")
    by_error = choose_from_histogram(exact, grid, planned, rule="error", quantile=None,
                                     tolerance=1.1, epsilon=1.0, noise_scale=1.0,
                                     privacy_unit="cid", charge_id="c")
    assert by_quantile.k >= 200 and by_error.k <= 4
    assert by_error.predicted_ci95 < by_quantile.predicted_ci95 / 4
    # the prediction is the plan's ci95 at the row count's lower bound of kept(k)
    chosen = {c.k: c for c in by_error.candidates}[by_error.k]
    assert chosen.kept == np.minimum(sizes, by_error.k).sum()
    assert chosen.ci95 == noise_at(planned, by_error.k, chosen.n0).ci95
    best = min(c.ci95 for c in by_error.candidates)
    assert best <= by_error.predicted_ci95 <= 1.1 * best
    # the largest such k: the next candidate is more than 10% noisier
    bigger = [c for c in by_error.candidates if c.k > by_error.k]
    assert bigger[0].ci95 > 1.1 * best
    table = by_error.table()
    assert list(table.columns) == ["k", "kept", "dropped", "n0", "ci95", "chosen"]
    assert table.chosen.sum() == 1 and table.dropped.is_monotonic_decreasing


def test_choose_by_error_rule():
    def cand(k, ci):
        return KCandidate(k, 0.0, 0.0, 100, ci)

    candidates = [cand(1, 0.10), cand(2, 0.105), cand(4, 0.12), cand(8, math.inf)]
    assert choose_by_error(candidates, 1.1).k == 2
    assert choose_by_error(candidates, 1.0).k == 1
    assert choose_by_error(candidates, 1.3).k == 4
    refused = [KCandidate(1, 9.0, 0.0, 9, math.inf), KCandidate(2, 16.0, 0.0, 12, math.inf)]
    assert choose_by_error(refused).k == 2  # all refused: the largest n0


def test_predict_marks_a_refused_size_as_infinite():
    grid = size_grid(16)
    counts = np.zeros(grid.size, dtype=np.int64)
    counts[0] = 3  # three units of one row: the plan refuses at so few rows
    candidates = predict(counts, grid, schema_plan()._planned, scale=1e-9)
    assert all(c.ci95 == math.inf for c in candidates)


@pytest.fixture
def seeded(monkeypatch):
    monkeypatch.setenv(ENV_FLAG, "1")


def test_contribution_bound_chooses_by_the_error_of_the_release(seeded):
    frame = frame_of(heavy_sizes())
    plan = frame.dpmic.plan(1.0, bounds=BOUNDS, privacy_unit="cid", max_rows_per_unit=1)
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(3.0, privacy_unit="cid"))
    with pytest.warns(PrivacyLeakWarning), seeded_noise(4, not_private=True):
        by_error = contribution_bound(frame, "cid", 0.5, release=plan, ledger=ledger,
                                      dataset="d")
    with pytest.warns(PrivacyLeakWarning), seeded_noise(4, not_private=True):
        by_quantile = contribution_bound(frame, "cid", 0.5, release=plan, quantile=0.9,
                                         ledger=ledger, dataset="d")
    assert ledger.remaining("d") == pytest.approx(2.0)  # one charge each, nothing else
    assert by_error.rule == "error" and by_error.quantile is None
    assert by_quantile.rule == "quantile" and by_quantile.quantile == 0.9
    # the same released histogram (same seed): the same table of candidates
    assert by_error.candidates == by_quantile.candidates
    assert by_quantile.k >= 150 and by_error.k <= 4
    assert by_error.predicted_ci95 < by_quantile.predicted_ci95 / 4
    # the actual ci95 of the release at the chosen k, at its true bounded rows
    count = plan._planned.units.rowcount

    def actual_ci95(k):  # the release's ci95 at its true bounded rows (public in a test)
        margin = plan_row_count(count.cost, sensitivity=k, beta=count.beta).margin
        return noise_at(plan._planned, k, int(np.minimum(heavy_sizes(), k).sum()) - margin).ci95

    truth = {k: actual_ci95(k) for k in (by_error.k, by_quantile.k)}
    assert truth[by_error.k] < truth[by_quantile.k] / 4
    # accepted as max_rows_per_unit as it is
    again = frame.dpmic.plan(1.0, bounds=BOUNDS, privacy_unit="cid",
                             max_rows_per_unit=by_error)
    assert again._planned.units.k == by_error.k
    assert "predicted ci95" in repr(by_error)


def test_without_a_release_the_quantile_rule_is_kept():
    found = contribution_bound(frame_of(np.arange(1, 21).repeat(20)), "cid", 5.0)
    assert found.rule == "quantile" and found.quantile == 0.9
    assert found.predicted_ci95 is None and found.candidates == ()
    assert found.k in (16, 19)  # the 0.9 quantile, 18 rows, is in the bin from 16


def test_a_bad_release_is_refused_before_the_charge():
    frame = frame_of(np.array([3, 3, 3]))
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="cid"))
    row_level = frame.dpmic.plan(1.0, bounds=BOUNDS)
    other = frame.assign(shop=1).dpmic.plan(1.0, bounds=BOUNDS, privacy_unit="shop",
                                            max_rows_per_unit=2)
    for release in (row_level, other, "plan", 0.5):
        with pytest.raises(InvalidParameterError, match="release"):
            contribution_bound(frame, "cid", 0.5, release=release, ledger=ledger,
                               dataset="d")
    with pytest.raises(InvalidParameterError, match="tolerance"):
        contribution_bound(frame, "cid", 0.5, release=schema_plan(), tolerance=0.9,
                           ledger=ledger, dataset="d")
    assert ledger.remaining("d") == 1.0
