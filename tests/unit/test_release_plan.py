"""One plan per release, built from the arguments and the schema alone."""

import numpy as np
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy.costs import ZCDP
from dpmic_dask.release.plan import plan_release

SCHEMA = {name: np.dtype("float64") for name in ("a", "b", "c")}
BOUNDS = {"a": (0, 1), "b": (0, 1), "c": (0, 1)}


@pytest.mark.parametrize("kw, steps", [
    ({}, ("values",)),
    ({"select": {"rule": "top-k", "k": 1}}, ("selection", "values")),
    ({"select": {"rule": "above", "threshold": 0.3, "max_pairs": 2}}, ("selection", "values")),
    ({"bounds": {**BOUNDS, "a": "private"}}, ("private bounds", "values")),
    ({"bounds": "private", "columns": ["a", "b", "c"], "select": {"rule": "top-k", "k": 2}},
     ("private bounds", "selection", "values")),
])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_plan_says_its_steps_and_charges_the_whole_budget_once(kw, steps, delta):
    plan = plan_release(SCHEMA, 2.0, **{"bounds": BOUNDS, **kw}, delta=delta)
    assert plan.steps == steps
    assert plan.cost.epsilon == 2.0
    if plan.cost.measure is ZCDP:  # (auto may choose pure Laplace for few pairs)
        assert plan.cost.rho == ZCDP.total(2.0, delta).rho and delta > 0
    if plan.bounds is not None:  # the values are paid from the rest of the one charge
        assert plan.bounds.part.amount() < plan.cost.amount()


def test_plans_refuse_what_they_cannot_run_before_any_data():
    with pytest.raises(dm.InvalidParameterError, match="selection rule must be one of"):
        plan_release(SCHEMA, 1.0, bounds=BOUNDS, select={"rule": "best", "k": 1})
    with pytest.raises(dm.InvalidParameterError, match="bounds_share"):
        plan_release(SCHEMA, 1.0, bounds=BOUNDS, bounds_share=0.2)
    with pytest.raises(dm.InvalidParameterError, match="unknown column"):
        plan_release(SCHEMA, 1.0, bounds={**BOUNDS, "zz": (0, 1)})


def test_a_registered_selection_rule_is_planned_and_run_like_the_built_in_ones():
    """Extension by registration: a rule declares its options, their check and the
    selection it builds from its budget part; plans and runs need no change."""
    import pandas as pd

    from dpmic_dask.privacy.selection import _RULES, NoisyTopK, SelectionRule, register_rule
    from dpmic_dask.release.executor import run_release

    register_rule(SelectionRule(
        "strongest", ("count",),
        check=lambda o, names: {"count": int(o["count"])},
        build=lambda part, o: NoisyTopK(o["count"], part.amount(), part.delta)))
    try:
        gen = np.random.default_rng(1)  # test data only
        a = gen.uniform(0, 1, 3000)
        frame = pd.DataFrame({"a": a, "b": np.sin(6 * a), "c": gen.uniform(0, 1, 3000)})
        plan = plan_release(SCHEMA, 2.0, bounds={"a": (0, 1), "b": (-1, 1), "c": (0, 1)},
                            select={"rule": "strongest", "count": 1})
        assert plan.steps == ("selection", "values")
        ledger = dm.InMemoryLedger(uncapped=True)
        result = run_release(frame, plan, ledger=ledger)
        assert result.pairs == (("a", "b"),) and len(ledger.charges()) == 1
        with pytest.raises(dm.InvalidParameterError, match="takes no k"):
            plan_release(SCHEMA, 2.0, bounds=BOUNDS, select={"rule": "strongest", "count": 1,
                                                             "k": 3})
    finally:
        del _RULES["strongest"]
