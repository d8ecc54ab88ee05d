"""Causal discovery per privacy unit (the copula test): the tapered tau vector's
add/remove sensitivity checked exhaustively at every size, the bounding and the
private row count in front of it, one charge, and every refusal before it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.causal import causal_graph
from dpmic_dask.causal.copula import (
    CopulaBudget,
    fine_codings,
    grid_partition,
    tau_unit_sensitivities,
)
from dpmic_dask.causal.copulaunit import find_floor, plan_units, tapered_tau
from dpmic_dask.causal.tables import ColumnCoding
from dpmic_dask.errors import InvalidParameterError, MissingValuesError, UnitMismatchError
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from tests.unit.test_causal_copula import exact_tau_on, tau_vectors


def tapered_reference(data: np.ndarray, n0: int) -> np.ndarray:
    """min(1, m / n0) tau_a of every pair for a stack of datasets data[..., m, p]
    (0 below two rows): the statistic released per unit, computed directly."""
    m, p = data.shape[-2:]
    if m < 2:
        return np.zeros(data.shape[:-2] + (p * (p - 1) // 2,))
    return min(1.0, m / n0) * tau_vectors(data)


@pytest.mark.parametrize("p, levels, largest", [(3, 3, 3), (4, 2, 3), (2, 3, 4)])
def test_tapered_tau_vector_add_remove_exhaustive(p, levels, largest):
    """Every dataset of 0..largest rows on a levels^p grid and every row added to
    it, at every n0 from 1 to largest + 2 (below, at and above the sizes): the
    tapered vector moves by at most (2 p + sqrt(P)) / n0 in L2 and (p^2 + P) / n0 in
    L1 -- the per-row steps whose k-fold multiple is the unit's sensitivity -- and
    the untapered one by 2 p / m and p^2 / m (m the larger size)."""
    rows = np.array(list(itertools.product(range(levels), repeat=p)), dtype=float)
    pairs = p * (p - 1) // 2
    for m in range(largest + 1):
        index = list(itertools.product(range(len(rows)), repeat=m))
        data = rows[np.array(index, dtype=np.int64).reshape(len(index), m)]
        grown = np.concatenate([np.repeat(data, len(rows), axis=0),
                                np.tile(rows, (len(data), 1))[:, None, :]], axis=1)
        if m >= 1:
            diff = tau_vectors(grown) - np.repeat(tapered_reference(data, 1), len(rows), axis=0)
            assert np.sqrt((diff ** 2).sum(axis=1)).max() <= 2 * p / (m + 1) + 1e-12
            assert np.abs(diff).sum(axis=1).max() <= p * p / (m + 1) + 1e-12
        for n0 in range(1, largest + 3):
            diff = (tapered_reference(grown, n0)
                    - np.repeat(tapered_reference(data, n0), len(rows), axis=0))
            l1, l2 = tau_unit_sensitivities(p, n0, 1)
            assert np.sqrt((diff ** 2).sum(axis=1)).max() <= l2
            assert np.abs(diff).sum(axis=1).max() <= l1
            assert l2 == pytest.approx((2 * p + math.sqrt(pairs)) / n0)
            assert l1 == pytest.approx((p * p + pairs) / n0)


def test_a_unit_of_two_rows_moves_the_vector_by_at_most_twice_the_step():
    """k = 2: two rows added at once, exhaustively (p = 3 on 2 levels, 0..2 rows)."""
    p, rows = 3, np.array(list(itertools.product(range(2), repeat=3)), dtype=float)
    for m in range(3):
        for n0 in (1, 2, 3, 5):
            l1, l2 = tau_unit_sensitivities(p, n0, 2)
            for base in itertools.product(range(len(rows)), repeat=m):
                before = tapered_reference(rows[list(base)].reshape(m, p), n0)
                for extra in itertools.product(range(len(rows)), repeat=2):
                    after = tapered_reference(rows[list(base) + list(extra)], n0)
                    assert np.sqrt(((after - before) ** 2).sum()) <= l2
                    assert np.abs(after - before).sum() <= l1


def test_the_release_tapers_the_grid_tau_as_the_proof_does():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.integers(0, 4, size=(9, 3)).astype(float), columns=list("abc"))
    codings = fine_codings(tuple(ColumnCoding(c, 4, bounds=(0.0, 3.0)) for c in "abc"), 4)
    grids = grid_partition(frame, codings)
    iu = np.triu_indices(3, 1)
    for n0 in (4, 9, 20):
        got = tapered_tau(grids, 3, 4, n0)[iu]
        assert got == pytest.approx(tapered_reference(frame.to_numpy(), n0))
    one = grid_partition(frame.iloc[:1], codings)
    assert np.array_equal(tapered_tau(one, 3, 4, 5), np.eye(3))


def test_per_unit_noise_scale_and_floor_from_public_quantities():
    plan = plan_units(1.0, 1e-6, 10, ("u",), 4, 0.05)
    assert plan.total.rho == pytest.approx(plan.part.rho + plan.rowcount.cost.rho)
    assert plan.rowcount.cost.rho == pytest.approx(0.05 * plan.total.rho)
    budget = CopulaBudget(plan.part, 10, 5000, 4)
    expected = 4 * (20 + math.sqrt(45)) / 5000 / math.sqrt(2 * plan.part.rho)
    assert budget.scale == pytest.approx(expected, rel=1e-9)
    assert plan.floor == find_floor(plan.part, 10, 4) >= 4
    with pytest.raises(InvalidParameterError):  # not even at 2^40 rows
        plan_units(1e-300, 0.0, 10, ("u",), 4, 0.05)
    tiny = plan_units(1e-12, 0.0, 10, ("u",), 4, 0.05)
    assert tiny.floor > 2**30  # the noise can only be sampled at very many rows
    assert CopulaBudget(tiny.part, 10, tiny.floor, 4).scale / 2.0**-40 <= 2.0**52
    assert CopulaBudget(tiny.part, 10, tiny.floor - 1, 4).scale / 2.0**-40 > 2.0**52


def unit_frame(units=1500, per_unit=3, seed=0):
    rng = np.random.default_rng(seed)
    n = units * per_unit
    x = rng.standard_normal(n)
    y = 0.8 * x + 0.6 * rng.standard_normal(n)
    z = 0.8 * y + 0.6 * rng.standard_normal(n)
    return pd.DataFrame({"who": np.repeat(np.arange(units), per_unit), "x": x, "y": y, "z": z})


BOUNDS = {c: (-6.0, 6.0) for c in "xyz"}


def test_per_unit_keeps_k_rows_per_unit_and_charges_once():
    frame = unit_frame()
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="who"))
    g = causal_graph(frame, 1.0, bounds=BOUNDS, privacy_unit="who", max_rows_per_unit=1,
                     ledger=ledger, dataset="d")
    report = g.report()
    assert report.unit == "who" and report.max_rows_per_unit == 1
    assert abs(report.rows_noisy - 1500) < 200  # one row of each of 1500 units, not 4500
    assert report.rows <= report.rows_noisy
    assert len(ledger.charges("d")) == 1 and float(ledger.spent("d")) == pytest.approx(1.0)
    text = str(report)
    assert "adding or removing all rows of any one who" in text and "n0" in text
    # the chain x - y - z: its edges always; x and z separated by y in nearly every
    # release (the kept rows and the noise are fresh each time: 80 of 80 when written,
    # one miss in five CI runs), so in at least two of three
    truth = {frozenset("xy"), frozenset("yz")}
    assert truth <= g.skeleton
    again = [causal_graph(frame, 1.0, bounds=BOUNDS, privacy_unit="who",
                          max_rows_per_unit=1).skeleton for _ in range(2)]
    assert sum(s == truth for s in [g.skeleton, *again]) >= 2


def test_per_unit_without_noise_is_the_exact_tau_of_the_kept_rows():
    frame = unit_frame(units=800, per_unit=2)
    exact = exact_tau_on(frame, BOUNDS)  # per unit the bins are equal-width
    g = causal_graph(frame, 1e9, delta=1e-6, bounds=BOUNDS, columns=list("xyz"),
                     privacy_unit="who", max_rows_per_unit=2)  # noise about 1e-11
    assert g.report().rows <= len(frame)
    np.testing.assert_allclose(g.released_tau.to_numpy(), exact, atol=1e-6)


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
