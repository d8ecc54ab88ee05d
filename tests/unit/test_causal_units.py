"""Causal discovery per privacy unit (the copula test's signs at released
medians, and the released tables): the sign sums' and the medians' scores'
add/remove sensitivity checked exhaustively, the bounding and the private row
count in front of them, one charge, and every refusal before it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.causal import causal_graph
from dpmic_dask.causal.copulabins import MARGIN_BINS, fine_margin_codings, margin_partition
from dpmic_dask.causal.copulaunit import plan_unit_signs
from dpmic_dask.causal.quadrant import (
    median_scores,
    quadrant_unit_l1,
    quadrant_unit_l2,
    sign_partition,
)
from dpmic_dask.causal.tables import ColumnCoding
from dpmic_dask.errors import (
    InvalidParameterError,
    MissingValuesError,
    UnitMismatchError,
    UnusedParameterWarning,
)
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from tests.statistical.helpers import rerun_once

VALUES = (-3.0, 0.2, 0.5, 9.0)  # beyond the bounds, below and at the cut, beyond


def _sums(rows, codings, cuts) -> np.ndarray:
    p = len(codings)
    frame = pd.DataFrame(np.asarray(rows, dtype=float).reshape(-1, p),
                         columns=[c.name for c in codings])
    return sign_partition(frame, codings, cuts).vector().astype(float)


@pytest.mark.parametrize("p, k, largest", [(1, 1, 2), (2, 1, 2), (3, 1, 1), (2, 2, 1)])
def test_sign_sums_add_remove_a_unit_exhaustively(p, k, largest):
    """Every dataset of 0..largest rows on values below, at and above the cut and
    beyond the bounds, and every unit of k rows added to it: the sums move by at
    most k (p + P) in L1 and k sqrt(p + P) in L2, both attained."""
    codings = fine_margin_codings([ColumnCoding(f"c{j}", 5, bounds=(0.0, 1.0))
                                   for j in range(p)])
    cuts = np.full(p, MARGIN_BINS // 2)
    points = list(itertools.product(VALUES, repeat=p))
    worst_l1 = worst_l2 = 0.0
    for m in range(largest + 1):
        for base in itertools.product(points, repeat=m):
            before = _sums(base, codings, cuts)
            for unit in itertools.product(points, repeat=k):
                diff = _sums(base + unit, codings, cuts) - before
                worst_l1 = max(worst_l1, np.abs(diff).sum())
                worst_l2 = max(worst_l2, math.sqrt((diff ** 2).sum()))
    assert worst_l1 == quadrant_unit_l1(p, k) == k * (p + p * (p - 1) // 2)
    assert worst_l2 == pytest.approx(quadrant_unit_l2(p, k))


def test_median_scores_move_by_half_a_step_per_row_added():
    """-|C(k) - N / 2| with N the rows counted: one row added or removed moves
    every cut's score by at most 1/2 (so a unit of k rows by k / 2), attained."""
    codings = fine_margin_codings([ColumnCoding("x", 5, bounds=(0.0, 1.0))])
    values = (-1.0, 0.0, 0.25, 0.5, 0.9999, 1.0, 4.0)
    worst = 0.0
    for m in range(4):
        for rows in itertools.product(values, repeat=m):
            h = margin_partition(pd.DataFrame({"x": list(rows)}), codings).counts[0]
            before = median_scores(h, m)
            for extra in values:
                grown = margin_partition(pd.DataFrame({"x": [*rows, extra]}), codings)
                after = median_scores(grown.counts[0], m + 1)
                worst = max(worst, float(np.abs(after - before).max()))
    assert worst == 0.5


def test_per_unit_noise_scales_from_public_quantities():
    """zCDP, 10 columns, k = 4: 5% to the row count, 10% of the rest to the medians,
    the rest to the sums, whose sigma is k sqrt(p + P) / sqrt(2 rho_s); a budget too
    small to sample is refused before anything is read."""
    total, rowcount, plan = plan_unit_signs(1.0, 1e-6, 10, 4, 0.05)
    budget = plan.budget
    assert rowcount.cost.rho == pytest.approx(0.05 * total.rho)
    assert plan.median_part.rho == pytest.approx(0.1 * 0.95 * total.rho)
    assert budget.total.rho == pytest.approx(0.9 * 0.95 * total.rho)
    expected = 4 * math.sqrt(10 + 45) / math.sqrt(2 * budget.total.rho)
    assert budget.count_scale == pytest.approx(expected, rel=1e-9)
    pure = plan_unit_signs(2.0, 0.0, 10, 4, 0.05)[2]
    assert pure.budget.count_scale == pytest.approx(4 * 55 / (0.9 * 0.95 * 2.0), rel=1e-9)
    # each pick: noisy top-1 with scores of sensitivity k / 2 = 2 (pure: scale 2 * 2 / eps_c)
    assert pure.pick_sensitivity == 2.0
    assert pure.pick_scale == pytest.approx(2 * 2.0 / (0.1 * 0.95 * 2.0 / 10), rel=1e-6)
    with pytest.raises(InvalidParameterError, match="raise eps"):
        plan_unit_signs(1e-300, 0.0, 10, 4, 0.05)


def unit_frame(units=1500, per_unit=3, seed=0):
    rng = np.random.default_rng(seed)
    n = units * per_unit
    x = rng.standard_normal(n)
    y = 0.8 * x + 0.6 * rng.standard_normal(n)
    z = 0.8 * y + 0.6 * rng.standard_normal(n)
    return pd.DataFrame({"who": np.repeat(np.arange(units), per_unit), "x": x, "y": y, "z": z})


BOUNDS = {c: (-6.0, 6.0) for c in "xyz"}


@rerun_once  # 39 of 500 releases missed the chain: fewer than 5 of 10, about 1e-4
def test_per_unit_keeps_k_rows_per_unit_and_charges_once():
    frame = unit_frame()
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="who"))
    g = causal_graph(frame, 1.0, bounds=BOUNDS, privacy_unit="who", max_rows_per_unit=1,
                     ledger=ledger, dataset="d")
    report = g.report()
    assert report.unit == "who" and report.max_rows_per_unit == 1
    assert abs(report.rows_noisy - 1500) < 200  # one row of each of 1500 units, not 4500
    assert report.rows == report.rows_noisy and report.statistic == "signs"
    assert len(ledger.charges("d")) == 1 and float(ledger.spent("d")) == pytest.approx(1.0)
    text = str(report)
    assert "adding or removing all rows of any one who" in text and "noisy count" in text
    # the chain x - y - z: its edges always; x and z separated by y in most releases
    # (the kept rows and the noise are fresh each time: 55 of 60 measured), so in at
    # least 5 of 10 (by chance fewer about once in 20,000 runs at that rate, once in
    # 700 if it were 0.85)
    truth = {frozenset("xy"), frozenset("yz")}
    assert truth <= g.skeleton
    again = [causal_graph(frame, 1.0, bounds=BOUNDS, privacy_unit="who",
                          max_rows_per_unit=1).skeleton for _ in range(9)]
    assert sum(s == truth for s in [g.skeleton, *again]) >= 5


def test_per_unit_with_tiny_noise_releases_the_sums_of_the_kept_rows():
    """Two rows per unit, k = 2: every row is kept, and at a huge budget the
    released sums are the exact ones of the whole table at the released cuts."""
    frame = unit_frame(units=800, per_unit=2)
    g = causal_graph(frame, 1e9, delta=1e-6, bounds=BOUNDS, columns=list("xyz"),
                     privacy_unit="who", max_rows_per_unit=2)
    assert g.report().statistic == "signs" and g.report().rows == len(frame)
    codings = fine_margin_codings([ColumnCoding(c, 5, bounds=BOUNDS[c]) for c in "xyz"])
    cuts = np.array([g.released_cuts[c] for c in "xyz"])
    exact = sign_partition(frame, codings, cuts).vector()
    released = g.released_signs.to_numpy()
    got = np.concatenate([np.diag(released), released[np.triu_indices(3, 1)]])
    assert np.abs(got - exact).max() <= 1
    assert all(abs(cut - MARGIN_BINS // 2) < 40 for cut in cuts)  # the medians, near 0


@pytest.mark.parametrize("arguments, error", [
    ({"privacy_unit": "who"}, InvalidParameterError),
    ({"max_rows_per_unit": 2}, InvalidParameterError),
    ({"privacy_unit": "nobody", "max_rows_per_unit": 2}, InvalidParameterError),
    ({"privacy_unit": "who", "max_rows_per_unit": 0}, InvalidParameterError),
    ({"privacy_unit": "who", "max_rows_per_unit": 2, "count_share": 1.5},
     InvalidParameterError),
    ({"privacy_unit": "x", "max_rows_per_unit": 2}, "cannot be a column"),
    ({"privacy_unit": "who", "max_rows_per_unit": 2, "test": "g"}, "copula test"),
    ({"privacy_unit": "who", "max_rows_per_unit": 2, "test": "tau"}, "not available per unit"),
])
def test_per_unit_refusals_charge_nothing(arguments, error):
    frame = unit_frame(units=50)
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="who"))
    match = error if isinstance(error, str) else None
    with pytest.raises(InvalidParameterError, match=match):
        causal_graph(frame, 1.0, bounds=dict(BOUNDS, who=(0, 50)), ledger=ledger,
                     dataset="d", columns=list("xyz"), **arguments)
    assert ledger.charges("d") == []


def test_missing_values_and_a_row_level_ledger_are_refused_before_the_charge():
    frame = unit_frame(units=50)
    frame.loc[7, "y"] = np.nan
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="who"))
    with pytest.raises(MissingValuesError):
        causal_graph(frame, 1.0, bounds=BOUNDS, privacy_unit="who", max_rows_per_unit=1,
                     ledger=ledger, dataset="d")
    assert ledger.charges("d") == []
    rows = InMemoryLedger()
    rows.set_budget("d", Budget(1.0))
    with pytest.raises(UnitMismatchError):
        causal_graph(unit_frame(units=50), 1.0, bounds=BOUNDS, privacy_unit="who",
                     max_rows_per_unit=1, ledger=rows, dataset="d")
    with pytest.raises(UnitMismatchError):  # and a budget per unit refuses a row-level one
        causal_graph(unit_frame(units=50), 1.0, bounds=BOUNDS, ledger=ledger, dataset="d")
    assert rows.charges("d") == [] and ledger.charges("d") == []


def test_adding_a_unit_moves_the_joint_tables_by_k_T_and_k_sqrt_T_exhaustively():
    """Released tables per unit: every dataset of 1 row on 3 columns of 2
    categories and an "other" value, and every unit of up to k = 2 rows added: the
    vector of the T joint tables of a level moves by at most k T (L1) and k sqrt(T)
    (L2), both attained (the unit's rows in one cell of every table)."""
    from dpmic_dask.causal.tablerelease import TableBudget, canonical
    from dpmic_dask.causal.tables import LevelTables, count_partition

    names = list("abc")
    codings = tuple(ColumnCoding(c, 3, categories=(0, 1)) for c in names)
    values = list(itertools.product((0, 1, 7), repeat=3))
    k = 2
    for size in (2, 3):
        sets = tuple(itertools.combinations(range(3), size))
        layout = LevelTables(codings, tuple(canonical(s) for s in sets))
        t = len(sets)
        worst_l1 = worst_l2 = 0.0
        for base in values:
            before = count_partition(pd.DataFrame([base], columns=names), layout).counts
            for unit in itertools.chain(((v,) for v in values),
                                        itertools.product(values, repeat=k)):
                after = count_partition(pd.DataFrame([base, *unit], columns=names),
                                        layout).counts
                diff = (after - before).astype(float)
                worst_l1 = max(worst_l1, np.abs(diff).sum())
                worst_l2 = max(worst_l2, math.sqrt((diff ** 2).sum()))
        assert worst_l1 == k * t and worst_l2 == pytest.approx(k * math.sqrt(t))
    budget = TableBudget.plan(1.0, 0.0, (1.0,), k=3)
    assert budget.scale(0, 10) == pytest.approx(3 * 10 / 1.0)


def test_released_tables_per_unit_bound_the_rows_and_charge_once():
    rng = np.random.default_rng(4)
    units = 3000
    a = rng.integers(0, 3, units)
    b = np.where(rng.random(units) < 0.7, a, rng.integers(0, 3, units))
    c = rng.integers(0, 3, units)
    frame = pd.DataFrame({"who": np.repeat(np.arange(units), 4), "a": np.repeat(a, 4),
                          "b": np.repeat(b, 4), "c": np.repeat(c, 4)})
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(2.0, 1e-6, privacy_unit="who"))
    categories = {x: [0, 1, 2] for x in "abc"}
    g = causal_graph(frame, 2.0, delta=1e-6, categories=categories, privacy_unit="who",
                     max_rows_per_unit=1, ledger=ledger, dataset="d")
    report = g.report()
    assert report.test == "chisq" and report.unit == "who" and len(ledger.charges("d")) == 1
    assert abs(report.rows - units) < 300  # one row per unit kept, not 4
    first = g.released_tables[0][("a", "b")]
    assert abs(first.sum() - units) < 300
    assert g.skeleton == {frozenset("ab")}
    text = str(report)
    assert "adding or removing all rows of any one who" in text
    assert "read off the released tables" in text
    # its ledger entry names the unit, as the copula test's does
    (charge,) = ledger.charges("d")
    assert charge.description == "causal graph of 3 columns per who"
    # count_share has no use here (no row count is released apart): said, not dropped
    with pytest.warns(UnusedParameterWarning, match="count_share"):
        causal_graph(frame, 2.0, delta=1e-6, categories=categories, privacy_unit="who",
                     max_rows_per_unit=1, count_share=0.1,
                     ledger=InMemoryLedger({"d": Budget(2.0, 1e-6, privacy_unit="who")}),
                     dataset="d")


def test_released_tables_per_unit_take_text_categories_and_refuse_their_nulls():
    rng = np.random.default_rng(0)
    n = 4000
    a = rng.choice(["x", "y", "z"], n)
    frame = pd.DataFrame({"who": np.arange(n) // 2, "a": a,
                          "b": np.where(rng.random(n) < 0.7, a, rng.choice(["x", "y", "z"], n)),
                          "c": rng.choice(["x", "y"], n), "v": rng.normal(size=n)})
    categories = {c: ["x", "y", "z"] for c in "abc"}
    g = causal_graph(frame, 2.0, delta=1e-6, categories=categories, bounds={"v": (-3, 3)},
                     privacy_unit="who", max_rows_per_unit=2)
    assert g.report().test == "chisq" and frozenset("ab") in g.skeleton
    frame.loc[5, "b"] = None
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(5.0, 1e-6, privacy_unit="who"))
    with pytest.raises(MissingValuesError, match="fill them with public values"):
        causal_graph(frame, 2.0, delta=1e-6, categories=categories, privacy_unit="who",
                     max_rows_per_unit=2, ledger=ledger, dataset="d")
    assert ledger.charges("d") == []


def test_per_unit_the_mixed_rule_takes_the_released_tables():
    """A mixed graph whose categorical columns are binary takes the per-test tau
    decisions at row level; per unit, which they do not support, the released
    tables: the auto choice is never refused per unit."""
    frame = unit_frame(units=800, per_unit=2)
    frame["s"] = (frame["x"] > 0).astype(int)
    arguments = dict(bounds=BOUNDS, categories={"s": [1]}, columns=["x", "y", "s"])
    assert causal_graph(frame, 1.0, **arguments).report().test == "tau"
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="who"))
    g = causal_graph(frame, 1.0, privacy_unit="who", max_rows_per_unit=2, ledger=ledger,
                     dataset="d", **arguments)
    assert g.report().test == "chisq" and g.report().unit == "who"
    assert len(ledger.charges("d")) == 1
    with pytest.raises(InvalidParameterError, match="not available per unit"):
        causal_graph(frame, 1.0, privacy_unit="who", max_rows_per_unit=2, test="tau",
                     **arguments)


@pytest.mark.parametrize("categorical", [False, True])
def test_a_large_delta_per_unit_is_shown_after_the_charge_never_raised(categorical):
    """Per unit the row count is released after the charge: a delta at or above
    1/N is warned then, and a warnings-as-errors filter only shows it (the
    executor's rule for all that runs after the charge: no refusal after it). At
    row level the same filter refuses before the charge."""
    import warnings

    from dpmic_dask.errors import PrivacyLeakWarning

    frame = unit_frame(units=400, per_unit=2)
    arguments = dict(bounds=BOUNDS, columns=list("xyz"))
    if categorical:
        frame["s"] = (frame["x"] > 0).astype(int)
        arguments = dict(bounds={"x": BOUNDS["x"]}, categories={"s": [0, 1]},
                         columns=["x", "s"], test="chisq")
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(10.0, 0.5, privacy_unit="who"))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("error", PrivacyLeakWarning)
        g = causal_graph(frame, 1.0, delta=0.01, privacy_unit="who", max_rows_per_unit=2,
                         ledger=ledger, dataset="d", **arguments)
    assert g.report().unit == "who" and len(ledger.charges("d")) == 1
    assert any(issubclass(w.category, PrivacyLeakWarning) and "1/N" in str(w.message)
               for w in seen)
    row_ledger = InMemoryLedger()
    row_ledger.set_budget("d", Budget(10.0, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(PrivacyLeakWarning, match="1/N"):
            causal_graph(frame, 1.0, delta=0.01, ledger=row_ledger, dataset="d", **arguments)
    assert row_ledger.charges("d") == []


def test_level_shares_the_copula_test_does_not_use_are_said():
    """The copula test releases every level's statistics at once: level shares
    given to it have no use, and a warning says so (they were dropped silently)."""
    frame = unit_frame()
    with pytest.warns(UnusedParameterWarning, match="level_shares"):
        causal_graph(frame.drop(columns="who"), 1.0, bounds=BOUNDS, level_shares=[1, 100],
                     max_condition_size=1, ledger=InMemoryLedger(uncapped=True))
