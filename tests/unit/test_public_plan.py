"""``frame.dpmic.plan(...)``: a release planned from the schema alone, explained,
costed, and run by ``plan.release()`` with exactly the planned charge."""

from __future__ import annotations

import re

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.errors import InvalidParameterError

BOUNDS = {"x": (0, 1), "y": (-1, 3)}


def table(n=4_000, seed=0):
    gen = np.random.default_rng(seed)
    x = gen.uniform(0, 1, n)
    return pd.DataFrame({"cid": gen.integers(0, n // 4, n), "x": x,
                         "y": 2 * x + gen.normal(0, 0.1, n),
                         "region": np.where(x < 0.5, "north", "south")})


def unreadable(frame: pd.DataFrame):
    """A Dask frame whose every partition refuses to be read."""
    def refuse(part):
        raise AssertionError("the plan read the data")
    lazy = dd.from_pandas(frame, npartitions=2)
    return lazy.map_partitions(refuse, meta=frame.iloc[:0])


def test_a_plan_reads_nothing_and_explains_every_step_and_column():
    plan = unreadable(table()).dpmic.plan(
        2.0, delta=1e-6, columns=["x", "y", "region"], bounds={"x": (0, 1), "y": "private"},
        categories={"region": "private"}, privacy_unit="cid", max_rows_per_unit=4,
        bounds_check=0.05)
    assert plan.steps == ("contribution bounding and row count", "private categories",
                          "bounds check", "private bounds", "values")
    text = plan.explain(show=False)
    for said in ("Privacy unit: per cid, at most 4 rows each", "1. contribution bounding",
                 "2. private categories", "3. bounds check", "4. private bounds",
                 "5. values", "public bounds [0, 1], checked privately",
                 "bounds released privately", "chosen privately from the values that occur"):
        assert said in text, said
    assert text.count("n = ") == 3  # per unit: the noise at a few sizes of n0
    assert plan.cost.delta == 1e-6 and plan.cost.approx_delta > 0


def test_release_charges_exactly_the_planned_cost_for_every_kind_of_plan():
    frame = table()
    for arguments in ({"bounds": BOUNDS},
                      {"bounds": BOUNDS, "delta": 1e-6, "statistics": ("mic", "tau_a")},
                      {"bounds": {"x": (0, 1), "y": "private"}, "bounds_check": 0.1},
                      {"bounds": BOUNDS, "top_k": 1, "columns": ["x", "y", "region"],
                       "categories": {"region": {"private": ["north", "south"]}}},
                      {"bounds": BOUNDS, "privacy_unit": "cid", "max_rows_per_unit": 2,
                       "delta": 1e-6}):
        plan = frame.dpmic.plan(3.0, **arguments)
        unit = arguments.get("privacy_unit")
        ledger = dm.InMemoryLedger()
        delta = 1e-3 if arguments.get("delta") else 0.0
        ledger.set_budget("d", dm.Budget(10.0, delta, privacy_unit=unit))
        result = plan.release(ledger=ledger, dataset="d")
        (charge,) = ledger.charges("d")
        assert charge.cost == plan.cost, arguments
        assert result.epsilon == plan.cost.epsilon


@pytest.mark.parametrize("selection", [{"top_k": 2}, {"threshold": 0.3, "max_pairs": 2}])
def test_the_explained_steps_parts_add_up_to_the_charge_with_a_selection(selection):
    """Each step's line ends with its own part: the selection's, then the chosen
    values' (the values' line repeated the selection's part inside "together", so
    the parts listed added up to more than the charge)."""
    frame = table().assign(z=lambda t: t.x + t.y)
    plan = frame.dpmic.plan(1.0, bounds={**BOUNDS, "z": "private"}, bounds_check=0.05,
                            columns=["x", "y", "z"], **selection)
    lines = [line for line in plan.explain(show=False).splitlines()
             if re.match(r"\s+\d\. ", line)]
    assert [line.split(".")[1].split(":")[0].strip() for line in lines] == [
        "bounds check", "private bounds", "selection", "values"]
    # each line's first epsilon is its step's part (the bounds check's per column after it)
    parts = [float(re.search(r"epsilon ([0-9.e-]+)", line).group(1)) for line in lines]
    assert sum(parts) == pytest.approx(plan.cost.epsilon, rel=1e-9)
    assert "together" not in lines[-1]


@pytest.mark.parametrize("n", [2_000, 80_000])
def test_the_explained_steps_say_the_automatic_check_and_every_statistic(n):
    """The default bounds_check="auto" spends 2% where the table is large enough:
    the steps said "values: epsilon 1" there, and named MIC's mechanism alone with
    tau_a beside it. At a known row count the check is a step (or said not to
    run), and the values' line names every statistic; the parts add up to the
    charge the release makes."""
    gen = np.random.default_rng(1)
    x = gen.uniform(0, 1, n)
    frame = pd.DataFrame({"x": x, "y": 2 * x + gen.normal(0, 0.1, n)})
    plan = frame.dpmic.plan(1.0, bounds=BOUNDS, statistics=("mic", "tau_a"))
    text = plan.explain(show=False)
    lines = [line for line in text.splitlines() if re.match(r"\s+\d\. ", line)]
    names = [line.split(".")[1].split(":")[0].strip() for line in lines]
    big = n >= 60_000
    assert names == (["bounds check", "values"] if big else ["values"])
    assert "micr-lap and tau-lap with epsilon" in lines[-1]
    parts = [float(re.search(r"epsilon ([0-9.e-]+)", line).group(1)) for line in lines]
    ledger = dm.InMemoryLedger(uncapped=True)
    result = plan.release(ledger=ledger)
    (charge,) = ledger.charges()
    assert sum(parts) == pytest.approx(charge.cost.epsilon, rel=1e-9)
    assert (result.bounds_check is not None) == big
    assert ("not checked (bounds_check='auto'" in text) == (not big)


@pytest.mark.parametrize("case", ["unknown rows", "dropped nulls"])
def test_the_explained_steps_follow_the_row_count_the_release_decides_by(case):
    """A Dask frame's row count is not known to the plan: the steps are listed with
    the automatic check (adding up to the charge where it runs) and once more
    without it, every step's part (only the values' was given both ways, so the
    parts listed added up to more than either charge). With nulls dropped the
    release decides by min_rows, and so does the plan (it listed a check the
    release did not run)."""
    gen = np.random.default_rng(2)
    n = 80_000
    x = gen.uniform(0, 1, n)
    frame = pd.DataFrame({"x": x, "y": 2 * x + gen.normal(0, 0.1, n), "z": gen.uniform(0, 1, n)})
    bounds = {**BOUNDS, "z": "private"}
    if case == "unknown rows":
        plan = dd.from_pandas(frame, npartitions=2).dpmic.plan(1.0, bounds=bounds, top_k=2)
    else:
        plan = frame.dpmic.plan(1.0, bounds=bounds, top_k=2, nulls="drop", min_rows=1000)
    text = plan.explain(show=False)
    lines = [line for line in text.splitlines() if re.match(r"\s+\d\. ", line)]
    parts = [float(re.search(r"epsilon ([0-9.e-]+)", line).group(1)) for line in lines]
    ledger = dm.InMemoryLedger(uncapped=True)
    result = plan.release(ledger=ledger)
    (charge,) = ledger.charges()
    assert sum(parts) == pytest.approx(charge.cost.epsilon, rel=1e-9)
    if case == "unknown rows":
        assert result.bounds_check is not None and "bounds check (automatic" in lines[0]
        below = next(line for line in text.splitlines() if "the check is left out" in line)
        others = [float(v) for v in re.findall(r"epsilon (\d*\.?\d+(?:e-?\d+)?)", below)]
        assert sum(others) == pytest.approx(1.0, rel=1e-9)  # private bounds, selection, values
    else:
        assert result.bounds_check is None and not any("bounds check" in x for x in lines)
        assert "this release has 1,000" in text


def test_the_explained_noise_is_the_noise_the_release_gets():
    frame = table()
    plan = frame.dpmic.plan(1.0, bounds=BOUNDS, B=40, c=5)
    text = plan.explain(show=False)
    (line,) = [s for s in text.splitlines() if s.strip().startswith(f"n = {len(frame):,}")]
    scale = float(re.search(r"noise scale ([0-9.e+-]+)", line).group(1))
    ci95 = float(re.search(r"ci95 \+/-([0-9.e+-]+)", line).group(1))
    result = plan.release(ledger=dm.InMemoryLedger(uncapped=True))
    assert result.privacy.noise_scale == pytest.approx(scale, rel=1e-3)
    assert result.privacy.ci95 == pytest.approx(ci95, rel=1e-2)
    # at 4x the rows the noise is about 4x smaller (MICr's sensitivity is O(1/n))
    bigger = plan.explain(rows=4 * len(frame), show=False)
    other = float(re.search(r"noise scale ([0-9.e+-]+)", bigger).group(1))
    assert scale / 4 < other < scale / 3


def test_pairwise_is_plan_then_release():
    frame = table()
    ledger = dm.InMemoryLedger(uncapped=True)
    frame.dpmic.pairwise(1.0, bounds=BOUNDS, ledger=ledger)
    frame.dpmic.plan(1.0, bounds=BOUNDS).release(ledger=ledger)
    first, second = ledger.charges("default")
    assert first.cost == second.cost and first.mechanism == second.mechanism


def test_a_selection_is_asked_for_one_way_only():
    frame = table()
    with pytest.raises(InvalidParameterError, match="not both"):
        frame.dpmic.plan(1.0, bounds=BOUNDS, top_k=1, threshold=0.5, max_pairs=1)
    with pytest.raises(InvalidParameterError, match="max_pairs goes with threshold"):
        frame.dpmic.plan(1.0, bounds=BOUNDS, max_pairs=1)
    plan = frame.dpmic.plan(1.0, bounds=BOUNDS, threshold=0.5, max_pairs=1)
    assert "selection" in plan.steps and "above" in plan.explain(show=False).lower()
