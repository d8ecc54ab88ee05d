"""The plan of every combination of steps: one total, split into the steps' parts
and the values' part, never more than the one charge (nothing read)."""

from __future__ import annotations

import itertools

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.release.private_categories import CATEGORIES_SHARE
from dpmic_dask.release.unitplan import plan_unit_release

SCHEMA = {"cid": np.dtype("int64"), "x": np.dtype("float64"), "amount": np.dtype("float64"),
          "region": np.dtype("object"), "signup": np.dtype("datetime64[ns]"),
          "flag": np.dtype("bool"), "wn": np.dtype("float64")}
PUBLIC = {"x": (0, 1), "amount": (-50, 150), "signup": ("2019-01-01", "2023-01-01"),
          "wn": (-1, 3)}
COLUMNS = ["x", "amount", "region", "signup", "flag", "wn"]

UNITS = {"row": {}, "unit": {"privacy_unit": "cid", "max_rows_per_unit": 8}}
CATEGORIES = {"public": {"region": ["north", "south", "west"]},
              "candidates": {"region": {"private": ["north", "south", "west", "east"]}},
              "occurring": {"region": "private"}}
BOUNDS = {"public": {"bounds": PUBLIC}, "checked": {"bounds": PUBLIC, "bounds_check": 0.05},
          "private": {"bounds": "private"},
          "mixed": {"bounds": {**PUBLIC, "amount": "private"}, "bounds_check": 0.05}}
NULLS = {"fill": {"nulls": "fill", "fill": {"wn": 0.0, "x": 0.0, "amount": 0.0,
                                            "signup": "2020-01-01", "flag": 0,
                                            "region": "north"}},
         "drop": {"nulls": "drop", "min_rows": 1000}}
SELECT = {"all": {}, "top": {"select": {"rule": "top-k", "k": 3, "share": 0.5,
                                        "screen_B": None}}}
DELTAS = (0.0, 1e-6)


def combinations():
    for unit, cats, bounds, nulls, select, delta, stats in itertools.product(
            UNITS, CATEGORIES, BOUNDS, NULLS, SELECT, DELTAS, ("mic", "mic+tau")):
        if cats == "occurring" and delta == 0:
            continue  # needs delta > 0 (refused: tested elsewhere)
        if nulls == "fill" and cats != "public":
            continue  # a fill value for a column chosen privately is not given here
        yield pytest.param(unit, cats, bounds, nulls, select, delta, stats,
                           id=f"{unit}-{cats}-{bounds}-{nulls}-{select}-{delta:g}-{stats}")


def plan_of(unit, cats, bounds, nulls, select, delta, stats, eps=4.0):
    arguments = {**UNITS[unit], **BOUNDS[bounds], **NULLS[nulls], **SELECT[select]}
    if nulls == "fill" and cats != "public":
        arguments.pop("fill")
    if nulls == "drop" and unit == "unit":  # per unit the kept rows' count is released
        arguments.pop("min_rows")
    return plan_unit_release(SCHEMA, eps, columns=COLUMNS, categories=CATEGORIES[cats],
                             delta=delta, statistics=("mic", "tau_a") if stats != "mic"
                             else ("mic",), **arguments)


ALL = list(combinations())
#: The fast tier plans every 9th combination (each value of every dimension is
#: among them); the slow tier every third of the others.
FAST = ALL[::9]
FIELDS = ("unit", "cats", "bounds", "nulls", "select", "delta", "stats")


def test_the_fast_combinations_cover_every_value_of_every_dimension():
    for k, values in enumerate((UNITS, CATEGORIES, BOUNDS, NULLS, SELECT, DELTAS,
                                ("mic", "mic+tau"))):
        assert {p.values[k] for p in FAST} == set(values)


@pytest.mark.parametrize(FIELDS, FAST)
def test_combinations_are_planned_within_one_charge(unit, cats, bounds, nulls, select, delta,
                                                    stats):
    check_within_one_charge(unit, cats, bounds, nulls, select, delta, stats)


@pytest.mark.slow
@pytest.mark.parametrize(FIELDS, [p for p in ALL if p not in FAST][::3])
def test_every_other_combination_is_planned_within_one_charge(unit, cats, bounds, nulls,
                                                              select, delta, stats):
    check_within_one_charge(unit, cats, bounds, nulls, select, delta, stats)


def check_within_one_charge(unit, cats, bounds, nulls, select, delta, stats):
    eps = 4.0
    plan = plan_of(unit, cats, bounds, nulls, select, delta, stats, eps)
    measure = measure_for(delta)
    total = plan.cost
    assert total.epsilon == eps and total.delta == delta
    parts = []
    if plan.units is not None:
        parts.append(plan.units.rowcount.cost)
    if plan.private_categories is not None:
        parts.append(plan.private_categories.cost)
        if cats == "occurring":
            assert total.approx_delta == pytest.approx(delta / 2)
    if plan.bounds_check is not None:
        parts.append(plan.bounds_check.cost)
    parts.append(plan.values_cost)  # private bounds and the values share this part
    spent = sum(measure.amount(part) for part in parts)
    assert spent <= measure.amount(total) * (1 + 1e-12)
    assert spent >= measure.amount(total) * (1 - 1e-6)  # nothing left unspent
    assert ("bounds check" in plan.steps) == (bounds in ("checked", "mixed"))
    assert ("private categories" in plan.steps) == (cats != "public")
    assert ("private bounds" in plan.steps) == (bounds in ("private", "mixed"))
    if plan.bounds_check is not None:
        # private bounds are not checked; public ones are
        assert ("amount" in plan.bounds_check.columns) == (bounds == "checked")
        assert plan.bounds_check.sensitivity == (8 if unit == "unit" else 2)
    if plan.private_categories is not None:
        assert plan.private_categories.sensitivity == (8 if unit == "unit" else 2)


def test_each_front_step_takes_its_share_of_what_is_left():
    plan = plan_of("row", "candidates", "checked", "drop", "all", 0.0, "mic")
    check, choice = plan.bounds_check.cost.epsilon, plan.private_categories.cost.epsilon
    assert check == pytest.approx(0.05 * 4.0)
    assert choice == pytest.approx(CATEGORIES_SHARE * (4.0 - check))
    assert plan.values_cost.epsilon == pytest.approx(4.0 - check - choice)
    assert plan.request.mechanism.cost.epsilon == pytest.approx(4.0 - check - choice)


def test_a_check_with_nothing_to_check_costs_nothing_and_says_so():
    plan = plan_of("row", "candidates", "private", "drop", "all", 0.0, "mic")
    plan_checked = plan_unit_release(SCHEMA, 4.0, columns=COLUMNS, bounds="private",
                                     categories=CATEGORIES["candidates"], nulls="drop",
                                     min_rows=1000, bounds_check=0.05)
    assert plan_checked.bounds_check is None and plan_checked.cost == plan.cost
    assert plan_checked.values_cost == plan.values_cost
    assert any("nothing to check" in note for note in plan_checked.notes)
    # a public list is checked (the rows outside it), even with every bound private
    listed = plan_unit_release(SCHEMA, 4.0, columns=COLUMNS, bounds="private",
                               categories=CATEGORIES["public"], nulls="drop",
                               min_rows=1000, bounds_check=0.05)
    assert listed.bounds_check.columns == listed.bounds_check.lists == ("region",)


def test_a_charge_after_a_front_step_names_the_selection_and_every_statistic():
    """With a step in front of the values (a bounds check here), the ledger's
    mechanism and description named only MIC's mechanism: the selection and the
    tau companion were missing (without a front step they were named). Now both
    forms name the same values, and a selection is "selected pairs"."""
    import warnings

    from dpmic_dask.privacy.accounting import Budget, InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    a = gen.uniform(0, 1, 3000)
    frame = dd.from_pandas(pd.DataFrame({"a": a, "b": np.clip(a + gen.normal(0, 0.3, a.size),
                                                                0, 1),
                                         "c": gen.uniform(0, 1, a.size)}), npartitions=2)
    bounds = {k: (0, 1) for k in "abc"}
    recorded = {}
    for check in (None, 0.1):
        for name, release in (
                ("top", lambda **kw: frame.dpmic.top_pairs(1, 1.0, statistics=("mic", "tau_a"),
                                                           **kw)),
                ("above", lambda **kw: frame.dpmic.pairs_above(0.3, 1.0, max_pairs=2, **kw)),
                ("all", lambda **kw: frame.dpmic.pairwise(1.0, statistics=("mic", "tau_a"),
                                                          **kw))):
            ledger = InMemoryLedger({"d": Budget(10.0)})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                release(bounds=bounds, bounds_check=check, ledger=ledger, dataset="d")
            (charge,) = ledger.charges("d")
            recorded[name, check] = charge
    for name, mechanism in (("top", "NoisyTopK+micr-lap+tau-lap"),
                            ("above", "AboveThreshold+micr-lap"),
                            ("all", "micr-lap+tau-lap")):
        assert recorded[name, None].mechanism == mechanism
        assert recorded[name, 0.1].mechanism == f"bounds-check+{mechanism}"
    assert "tau-lap with epsilon 0.225" in recorded["top", 0.1].description
    assert recorded["top", 0.1].description.startswith("selected pairs (bounds check")
    assert "charged whatever passes the threshold" in recorded["above", 0.1].description
