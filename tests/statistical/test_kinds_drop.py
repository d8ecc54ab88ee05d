"""nulls="drop": the sensitivity under adding or removing a row, and the noise of a
release that drops rows, at the scale it states (calibrated to the public
``min_rows``, never to the number of rows kept).

docs/privacy.md, "Dropping rows with nulls": one row added to a table of ``N``
points moves every normalised mutual-information entry, hence MICr, by at most
``(f(N) + 1) / (N + 1)``, which is below the replace-one ``Delta(M)`` for every
``N >= M``; Kendall's tau_a by at most ``4 / (N + 1) <= 4 / M``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.stats.sensitivity import f_gain, micr_sensitivity
from tests.statistical.helpers import rerun_once
from tests.statistical.test_release_noise_paths import (
    assert_noise_at_stated_scale,
    residuals,
    zero_noise,
)
from tests.statistical.test_sensitivity import compositions, mutual_information_bits


def add_remove_bound(n: int) -> float:
    """``(f(n) + 1) / (n + 1)``: the most one added row moves MICr of ``n`` rows."""
    return (f_gain(n) + 1.0) / (n + 1.0)


def max_added_point_change(n: int, k: int, l: int) -> float:
    """Largest change of I / log2 min(k, l) over every k x l count matrix of n points
    and every cell a point can be added to (removing is the same pair reversed)."""
    cells = compositions(n, k * l)
    base = mutual_information_bits(cells, k, l)
    best = 0.0
    for dst in range(k * l):
        grown = cells.copy()
        grown[:, dst] += 1
        change = np.abs(mutual_information_bits(grown, k, l) - base) / math.log2(min(k, l))
        best = max(best, float(change.max()))
    return best


@pytest.mark.parametrize("k,l", [(2, 2), (2, 3), (3, 3), (2, 4)])
@pytest.mark.parametrize("n", [4, 5, 6, 7, 8])
def test_adding_a_row_moves_every_entry_by_at_most_the_add_remove_bound(n, k, l):
    change = max_added_point_change(n, k, l)
    assert 0 < change <= add_remove_bound(n) + 1e-12
    # and below the replace-one sensitivity at any public minimum M <= n
    assert all(change <= micr_sensitivity(m) for m in range(4, n + 1))


def test_the_bound_is_below_the_replace_one_sensitivity_at_every_minimum():
    # (f(N) + 1) / (N + 1) decreases in N and is below 2 f((M - 1) / 2) / M at N = M,
    # so calibrating to Delta(min_rows) covers every admissible kept count
    sizes = np.unique(np.concatenate([np.arange(4, 20_000), np.logspace(4, 12, 400)
                                      .astype(np.int64)]))
    add = np.array([add_remove_bound(int(n)) for n in sizes])
    assert np.all(np.diff(add) < 0)
    replace = np.array([micr_sensitivity(int(n)) for n in sizes])
    assert np.all(add < replace)
    assert np.all(add / replace < 0.77)  # at most 0.77 of it from N = 4 on


def tau_a(x, y) -> float:
    """Kendall's tau_a (ties count 0) of two short integer sequences."""
    n = len(x)
    s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
            for i, j in itertools.combinations(range(n), 2))
    return s / (n * (n - 1) / 2)


@pytest.mark.parametrize("n", [4, 5, 6])
def test_adding_a_row_moves_tau_by_at_most_four_over_n_plus_one(n):
    levels = range(3)
    points = list(itertools.product(levels, levels))
    worst = 0.0
    for rows in itertools.combinations_with_replacement(points, n):
        x, y = np.array(rows).T
        here = tau_a(x, y)
        for extra in points:
            worst = max(worst, abs(tau_a(np.append(x, extra[0]), np.append(y, extra[1])) - here))
    assert 0 < worst <= 4 / (n + 1) + 1e-12


# ------------------------------------------------ the release, through the public function

N, COLUMNS, MIN_ROWS, EPS = 1200, 50, 900, 4000.0


@pytest.fixture(scope="module")
def table_with_nulls():
    gen = np.random.default_rng(23)  # test data only
    u = gen.uniform(0, 1, N)
    frame = pd.DataFrame({f"x{k:02d}": u + gen.normal(0, 0.04 + 0.004 * k, N)
                          for k in range(COLUMNS)})
    for k in range(0, COLUMNS, 7):  # about 14% of the rows lose a value somewhere
        frame.loc[gen.uniform(size=N) < 0.02, f"x{k:02d}"] = np.nan
    return frame


def drop_release(frame, **kw):
    bounds = {c: (-1.0, 2.0) for c in frame.columns}
    kw = {"bounds_check": None, **kw}  # the values' scale at EPS (no check of bounds)
    return frame.dpmic.pairwise(EPS, bounds=bounds, nulls="drop", min_rows=MIN_ROWS, B=40,
                                c=5, ledger=dm.InMemoryLedger(uncapped=True), **kw)


@pytest.mark.slow
@rerun_once  # a check at ALPHA on fresh draws
def test_a_release_that_drops_rows_carries_noise_at_the_scale_of_min_rows(table_with_nulls):
    kept = len(table_with_nulls.dropna())
    assert MIN_ROWS < kept < N
    with zero_noise():
        exact = drop_release(table_with_nulls)
    result = drop_release(table_with_nulls)
    p = result.privacy
    pairs = COLUMNS * (COLUMNS - 1) // 2
    assert p.n == MIN_ROWS and p.sensitivity == micr_sensitivity(MIN_ROWS)
    assert p.noise_scale == pytest.approx(pairs * micr_sensitivity(MIN_ROWS) / EPS, rel=1e-9)
    # the exact values are those of the rows kept (listwise), counted exactly
    mic = dict(zip(exact.pairs, exact.values))
    reference = table_with_nulls.dropna().dpmic.pairwise_nonprivate(
        bounds={c: (-1.0, 2.0) for c in table_with_nulls.columns}, B=40, c=5)
    for x, y, value in zip(reference.x, reference.y, reference.micr):
        assert mic[(x, y)] == pytest.approx(value, abs=2.0**-30)
    r = residuals(result.values, [mic[q] for q in result.pairs], p.noise_scale)
    assert_noise_at_stated_scale(r, p.noise_scale, "laplace")


@pytest.mark.slow
def test_the_check_fails_when_no_noise_is_drawn(table_with_nulls):
    with zero_noise():
        exact = drop_release(table_with_nulls)
        again = drop_release(table_with_nulls)
    mic = dict(zip(exact.pairs, exact.values))
    r = residuals(again.values, [mic[q] for q in again.pairs], again.privacy.noise_scale)
    with pytest.raises(AssertionError):
        assert_noise_at_stated_scale(r, again.privacy.noise_scale, "laplace")


def test_nothing_the_noise_depends_on_varies_with_the_rows_kept(table_with_nulls):
    more_nulls = table_with_nulls.copy()
    more_nulls.iloc[:150, 3] = np.nan
    plans = []
    for frame in (table_with_nulls, more_nulls, table_with_nulls.dropna()):
        with zero_noise():
            p = drop_release(frame[["x00", "x01", "x02"]]).privacy
        plans.append((p.n, p.B, p.c, p.noise_scale, p.sensitivity))
    assert len(set(plans)) == 1
    with zero_noise():
        report = drop_release(table_with_nulls[["x00", "x01"]]).report()
    assert str(len(table_with_nulls.dropna())) not in report  # the kept count is private


def test_too_few_rows_left_is_refused_before_any_charge(table_with_nulls):
    ledger = dm.InMemoryLedger(uncapped=True)
    frame = table_with_nulls[["x00", "x07"]].copy()
    frame.iloc[:400, 0] = np.nan
    with pytest.raises(dm.InvalidDataError, match="fewer rows than min_rows") as info:
        frame.dpmic.pairwise(1.0, bounds={"x00": (-1, 2), "x07": (-1, 2)}, nulls="drop",
                             min_rows=MIN_ROWS, ledger=ledger)
    assert str(len(frame.dropna())) not in str(info.value)
    assert ledger.charges() == []


def test_drop_needs_a_public_minimum_and_no_fill():
    frame = pd.DataFrame({"a": np.linspace(0, 1, 10), "b": np.linspace(0, 1, 10)})
    bounds = {"a": (0, 1), "b": (0, 1)}
    with pytest.raises(dm.InvalidParameterError, match="needs min_rows"):
        frame.dpmic.pairwise(1.0, bounds=bounds, nulls="drop")
    with pytest.raises(dm.InvalidParameterError, match="min_rows applies"):
        frame.dpmic.pairwise(1.0, bounds=bounds, min_rows=5)
    with pytest.raises(dm.InvalidParameterError, match="fill is only"):
        frame.dpmic.pairwise(1.0, bounds=bounds, nulls="drop", min_rows=5, fill={"a": 0})
