"""A public category list that matches few of a column's values (another case,
spacing or type) put every such row in the one "other" bin: the column's pairs
read about 0, accepted and charged without a word. The check of public bounds
now counts each categorical column's rows inside and outside its list (two
noisy counts, inside the same charge) and says so, by default (``"auto"``)
wherever it can speak, on its own pass and on the values' pass alike."""

import re
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask import InMemoryLedger
from dpmic_dask.errors import BoundsWarning
from dpmic_dask.privacy.accounting import Budget

N = 80_000
LISTED = ["alpha", "beta", "gamma"]


@pytest.fixture(scope="module")
def frame():
    gen = np.random.default_rng(3)  # test data only
    code = gen.integers(0, 3, N)
    return pd.DataFrame({"c": np.array(LISTED, dtype=object)[code],
                         "x": code * 0.3 + gen.normal(0.0, 0.05, N),
                         "y": gen.uniform(0.0, 1.0, N)})


def release(data, listed, **kw):
    args = dict(bounds={"x": (-0.5, 1.5), "y": (0.0, 1.0)}, categories={"c": listed})
    args.update(kw)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = data.dpmic.pairwise(args.pop("eps", 1.0), **args)
    return result, [str(w.message) for w in seen if issubclass(w.category, BoundsWarning)]


def test_a_list_matching_none_of_the_values_is_said_by_default(frame):
    ledger = InMemoryLedger({"d": Budget(5.0)})
    result, said = release(frame, [s.upper() for s in LISTED], ledger=ledger, dataset="d")
    assert result.bounds_check.outside == ("c",)
    assert [m for m in said if m.startswith("column c:") and "outside its public category"
            in m]
    assert re.search(r"column c: the private check puts (99|100)% of its rows outside",
                     result.report())
    # nothing from the data in what is said: the list's own words and shares only
    assert not [m for m in said if "alpha" in m or "beta" in m]
    (charge,) = ledger.history("d")  # one charge, the check inside it
    assert float(charge.cost.epsilon) == pytest.approx(1.0)


def test_a_list_missing_most_of_the_values_is_said_and_one_that_fits_is_not(frame):
    partly, said = release(frame, ["alpha", "Beta", "Gamma"])
    assert partly.bounds_check.outside == ("c",)
    assert 0.6 < partly.bounds_check.lists["c"].share < 0.73  # two thirds outside
    fits, said = release(frame, LISTED)
    assert fits.bounds_check.outside == () and not said
    assert fits.bounds_check.lists["c"].share < 0.04  # 0 rows outside; noise scale 300
    assert ("No checked categorical column has 50% or more of its rows outside its "
            "public list.") in fits.report()
    assert fits.values[fits.pairs.index(("c", "x"))] > 0.9


def exact_counts(data, listed):
    inside = int(data["c"].isin(listed).sum())
    return inside, len(data) - inside


@pytest.mark.parametrize("B, passes", [(40, 0), (20, 4)], ids=["values-pass", "own-pass"])
def test_the_counts_are_exact_on_either_pass(frame, check_spy, B, passes):
    listed = ["alpha", "gamma"]
    data = dd.from_pandas(frame, npartitions=4)
    result, _ = release(data, listed, B=B, c=2, bounds_check=0.2)
    assert check_spy["passes"] == passes
    row = check_spy["hists"][check_spy["columns"].index("c")]
    assert tuple(row[:2]) == exact_counts(frame, listed) and not row[2:].any()
    assert len(result.bounds_check.histograms["c"]) == 2


def test_per_unit_the_counts_take_the_units_sensitivity(frame):
    data = frame.assign(person=np.arange(N) // 4)
    result, said = release(data, ["ALPHA", "BETA"], eps=4.0, privacy_unit="person",
                           max_rows_per_unit=4, bounds_check=0.3)
    assert [m for m in said if m.startswith("column c:")]
    found = result.bounds_check
    assert found.noise_scale == pytest.approx(4 / found.epsilon_per_column, rel=1e-9)
    assert found.outside == ("c",)


def test_a_private_list_is_not_checked(frame):
    result, _ = release(frame, {"private": ["alpha", "beta", "gamma", "delta"]},
                        bounds_check=0.1)
    assert "c" not in result.bounds_check.bounds and not result.bounds_check.lists


def test_lists_too_many_to_check_leave_the_numeric_columns_checked(frame):
    """``"auto"`` splits its share over the checked columns: where the lists make
    it too thin to speak at this row count, the numeric columns are checked alone
    (as before lists were checked), not left unchecked."""
    data = frame.assign(**{f"k{j}": frame["c"] for j in range(4)}).drop(columns="c")
    bounds = {"x": (-0.5, 1.5), "y": (0.0, 1.0)}
    result, said = release(data, None, bounds=bounds,
                           categories={f"k{j}": LISTED for j in range(4)})
    assert tuple(result.bounds_check.bounds) == ("x", "y") and not result.bounds_check.lists
    assert all(found.confident for found in result.bounds_check.checks.values())
    # with enough rows the lists are checked too
    more = dd.from_pandas(pd.concat([data] * 2, ignore_index=True), npartitions=2)
    both, _ = release(more, None, bounds=bounds,
                      categories={f"k{j}": LISTED for j in range(4)})
    assert set(both.bounds_check.lists) == {f"k{j}" for j in range(4)}
    plan = data.dpmic.plan(1.0, bounds=bounds, categories={f"k{j}": LISTED for j in range(4)})
    assert "bounds check" in plan.explain(rows=N) and "bounds check" in plan.explain(rows=2 * N)


def test_lists_left_out_by_the_fallback_are_said_in_the_report_and_the_plan(frame):
    """Where "auto" checked the numeric columns alone, the lists went unchecked and
    nothing said so: the very case (a list in another case) the check is for."""
    data = frame.assign(**{f"k{j}": frame["c"] for j in range(4)}).drop(columns="c")
    upper = [s.upper() for s in LISTED]
    bounds = {"x": (-0.5, 1.5), "y": (0.0, 1.0)}
    result, _ = release(data, None, bounds=bounds, categories={f"k{j}": upper for j in range(4)})
    assert not result.bounds_check.lists
    line = ("Category lists of ['k0', 'k1', 'k2', 'k3']: used as given, not checked "
            "(bounds_check='auto' checks them with the bounds from 120,000 rows at this "
            "budget; this release has 80,000")
    assert line in result.report()
    plan = data.dpmic.plan(1.0, bounds=bounds, categories={f"k{j}": upper for j in range(4)})
    assert line in plan.explain(rows=N, show=False)
    # neither check can speak: the line names both sizes
    small = data.head(30_000)
    few, _ = release(small, None, bounds=bounds, categories={f"k{j}": upper for j in range(4)})
    assert few.bounds_check is None
    assert ("Public bounds and category lists: used as given, not checked (bounds_check='auto' "
            "checks them with 2% of the budget from 40,000 rows, and the category lists with "
            "them from 120,000 at this budget; this release has 30,000)") in few.report()


def test_a_deliberate_short_list_is_said_as_one_other_category_not_as_unseen(frame):
    result, said = release(frame, ["alpha"])  # a list of one: "alpha" against the rest
    assert result.bounds_check.outside == ("c",)
    (line,) = [m for m in said if m.startswith("column c:")]
    assert "which MIC reads as one category" in line and "sees only" not in line
    assert result.values[result.pairs.index(("c", "x"))] > 0.5  # "other" is read


def test_a_plan_before_the_row_count_is_known_says_each_size_of_the_check(frame):
    """The dry run (batch never knows the row count) said "below 60,000 rows the
    check is left out" where a run of 50,000 checked the numeric column alone."""
    data = dd.from_pandas(frame, npartitions=2)
    plan = data.dpmic.plan(1.0, bounds={"x": (-0.5, 1.5), "y": (0.0, 1.0)},
                           categories={"c": LISTED})
    said = plan.explain(show=False)
    assert ("From 40,000 to 59,999 rows the check leaves the category lists ['c'] out: "
            "bounds check: bounds check of ['x', 'y']") in said
    assert "Below 40,000 rows the check is left out" in said
    assert "3 public categories (others: 'other'), checked privately" in said
