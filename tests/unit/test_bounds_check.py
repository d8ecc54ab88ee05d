"""The private check of public bounds (dpmic_dask.release.bounds_check): its reading
rule, its sensitivity (exhaustively on small tables), its budget split and its
refusals before anything is read."""

import itertools
import math

import numpy as np
import pytest

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import ZCDP, PrivacyCost, column_epsilon
from dpmic_dask.release.bounds_check import (
    CHECK_BINS,
    MIN_TOTAL_SCALES,
    BoundsCheck,
    check_partition,
    read_check,
    shortest_run,
)
from dpmic_dask.release.bounds_reading import NOISE_SDS, clipped_noise_moments, rules_out_narrow
from dpmic_dask.release.plan import plan_release
from dpmic_dask.release.units import plan_unit_release

SCHEMA = {"a": np.dtype("float64"), "b": np.dtype("float64"), "flag": np.dtype("bool")}


def test_shortest_run_holds_99_percent_of_the_clipped_mass():
    assert shortest_run([0] * 16) is None
    assert shortest_run([-5] * 16) is None
    h = [1000, 980] + [0] * 14
    assert shortest_run(h) == (0, 1)
    h = [0] * 5 + [500, 500] + [0] * 9
    assert shortest_run(h) == (5, 6)
    # negative counts are clipped, not subtracted from the mass
    h = [0] * 5 + [500, 500] + [-400] * 9
    assert shortest_run(h) == (5, 6)
    # a tail of 2% must be included
    h = [980, 0, 0, 20] + [0] * 12
    assert shortest_run(h) == (0, 3)
    # exactly 99% is enough
    assert shortest_run([99, 1] + [0] * 14) == (0, 0)
    assert shortest_run([98, 2] + [0] * 14) == (0, 1)


def test_read_check_states_the_rule():
    scale = 10.0
    big = MIN_TOTAL_SCALES * scale
    wide = read_check([big, 0] + [0] * 14, (0.0, 16.0), scale)
    assert wide.wide and wide.run == (0, 0) and wide.edges == (0.0, 1.0) and wide.ratio == 16
    # four bins (a quarter of the range) still count as far wider; five do not
    four = read_check([big / 4] * 4 + [0] * 12, (0.0, 16.0), scale)
    assert four.wide and four.ratio == 4
    five = read_check([big / 5 + 1] * 5 + [0] * 11, (0.0, 16.0), scale)
    assert not five.wide and five.ratio == pytest.approx(3.2)
    # too few rows against the noise: never reported, however narrow
    small = read_check([big - 1] + [0] * 15, (0.0, 16.0), scale)
    assert not small.confident and not small.wide
    # the last edge is the public upper bound itself
    top = read_check([0] * 15 + [big], (-3.0, 5.0), scale)
    assert top.edges == (-3.0 + 8.0 * 15 / 16, 5.0)


def test_a_reading_the_empty_bins_noise_could_explain_settles_nothing():
    """At 200 noise scales of rows every row in one bin, and the 15 empty bins each
    at about half a scale after clipping (7.5 scales, above 1% of the rows): the
    run is long, but that is the noise's doing, so the reading neither says
    "wide" nor "not wide". Spread rows settle it; so does a narrow reading."""
    scale = 200.0
    big = MIN_TOTAL_SCALES * scale
    mean, variance = clipped_noise_moments(scale)
    assert mean == pytest.approx(scale / 2, rel=0.01)
    assert variance == pytest.approx(0.75 * scale ** 2, rel=0.01)
    point = read_check([big] + [int(scale / 2)] * 15, (0.0, 16.0), scale)
    assert point.confident and not point.wide and not point.settled
    spread = read_check([big / 16] * 16, (0.0, 16.0), scale)
    assert spread.confident and not spread.wide and spread.settled
    narrow = read_check([big] + [0] * 15, (0.0, 16.0), scale)
    assert narrow.wide and narrow.settled
    # the allowance: mean plus NOISE_SDS standard deviations of the 12 bins outside
    # the best window of 4; rows beyond it and 1% of the total settle the question
    allowance = 12 * mean + NOISE_SDS * math.sqrt(12 * variance)
    for extra, settled in ((-60, False), (60, True)):  # counts are whole: 12 bins round
        outside = allowance + 0.01 * (big + allowance) + extra
        counts = [big] + [0] * 3 + [outside / 12] * 12
        assert rules_out_narrow(counts, scale) is settled
    # rows in two inner bins, the rest the noise's: nothing else to say of it
    two = read_check([int(scale / 2)] * 7 + [big / 2] * 2 + [int(scale / 2)] * 7,
                     (0.0, 16.0), scale)
    assert two.confident and not two.settled and not two.said
    found = BoundsCheck({"p": (0.0, 16.0), "s": (0.0, 16.0), "t": (0.0, 16.0)}, {},
                        {"p": point, "s": spread, "t": two}, scale, 0.01, PrivacyCost(0.02))
    lines = found.lines()
    assert any(line.startswith("Bounds check cannot tell for ['t']") for line in lines)
    # the point at a bound is said as a pile, never also "cannot tell"
    assert point.piled == "lower" and any(line.startswith("column p: the private check puts")
                                          for line in lines)
    assert lines[-1] == "No other checked column's public bounds look far wider than its values."


def _hist(values, *, fill):
    values = np.asarray(values, dtype=np.float64)
    import pandas as pd

    frame = pd.DataFrame({"x": values})
    hists, rows, missing = check_partition(frame, columns=("x",), checked=(0,),
                                           bounds=((0.0, 10.0),), fill=fill)
    return hists[0]


@pytest.mark.slow
def test_one_replaced_row_moves_each_histogram_by_at_most_two_exhaustively():
    """Every table of 3 rows over values inside, on and outside the bounds, +-inf
    and nulls: replacing one row moves the column's histogram by at most 2 in L1
    (one count down, one up), with nulls filled or dropped (a dropped row is an
    add or a remove: at most 1); the bound 2 is attained."""
    points = [np.nan, -np.inf, -1.0, 0.0, 0.6, 5.0, 9.99, 10.0, 12.0, np.inf]
    worst = {"fill": 0, "drop": 0}
    for table in itertools.product(points, repeat=3):
        for policy, fill in (("fill", (5.0,)), ("drop", None)):
            full = _hist(table, fill=fill)
            assert full.sum() == (3 if fill else sum(not math.isnan(v) for v in table))
            for at, new in itertools.product(range(3), points):
                other = list(table)
                other[at] = new
                moved = int(np.abs(full - _hist(other, fill=fill)).sum())
                assert moved <= 2
                if policy == "drop" and math.isnan(table[at]) != math.isnan(new):
                    assert moved <= 1  # one row added or removed
                worst[policy] = max(worst[policy], moved)
    assert worst == {"fill": 2, "drop": 2}


def test_values_are_binned_and_clamped_as_the_release_clamps():
    h = _hist([-5.0, 0.0, 0.624, 0.626, 9.999, 10.0, 1e300, np.inf, -np.inf], fill=(0.0,))
    assert h.sum() == 9 and h[0] == 4 and h[1] == 1 and h[15] == 4
    assert len(h) == CHECK_BINS


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_share_comes_out_of_the_budget(delta):
    plan = plan_release(SCHEMA, 1.0, delta=delta, bounds={"a": (0, 1), "b": (0, 10)},
                        columns=["a", "b", "flag"], bounds_check=0.05)
    step = plan.bounds_check
    assert plan.steps == ("bounds check", "values")
    assert step.columns == ("a", "b")  # booleans' bounds come with the type: not checked
    assert plan.cost == step.total
    assert plan.cost.epsilon == pytest.approx(1.0)
    if delta == 0:
        assert step.cost.epsilon == pytest.approx(0.05)
        assert step.eps_column == pytest.approx(0.025)
        assert step.release_part.epsilon + step.cost.epsilon <= 1.0
        assert plan.request.cost.epsilon <= step.release_part.epsilon
    else:
        rho = ZCDP.total(1.0, delta).rho
        assert step.cost.rho == pytest.approx(0.05 * rho)
        assert step.eps_column == column_epsilon(step.cost, 2)
        assert 2 * step.eps_column ** 2 / 2 <= step.cost.rho
        assert plan.request.cost.as_rho() <= step.release_part.rho
        assert plan.request.mechanism.label == "micr-gauss"
    assert step.scale == pytest.approx(2 / step.eps_column, rel=1e-9)
    assert step.scale >= 2 / step.eps_column


def test_without_the_check_nothing_changes():
    plain = plan_release(SCHEMA, 1.0, bounds={"a": (0, 1), "b": (0, 10)})
    assert plain.bounds_check is None and plain.cost == PrivacyCost(1.0)


@pytest.mark.parametrize("share", [0, 1, -0.1, 1.5, "0.05", True])
def test_a_share_outside_zero_one_is_refused(share):
    with pytest.raises(InvalidParameterError, match="bounds_check must be a number"):
        plan_release(SCHEMA, 1.0, bounds={"a": (0, 1), "b": (0, 10)}, bounds_check=share)


def test_the_check_combines_with_every_other_step_and_is_a_no_op_where_it_means_nothing():
    # private bounds: only the public ones are checked
    mixed = plan_release(SCHEMA, 1.0, bounds={"a": "private", "b": (0, 10)}, bounds_check=0.05)
    assert mixed.bounds_check.columns == ("b",) and mixed.bounds is not None
    assert mixed.cost == PrivacyCost(1.0)
    # per unit: each histogram's sensitivity is k (a unit's k rows added or removed)
    unit = plan_unit_release({**SCHEMA, "u": np.dtype("int64")}, 1.0, privacy_unit="u",
                             max_rows_per_unit=3, bounds={"a": (0, 1), "b": (0, 10)},
                             bounds_check=0.05)
    check = unit.bounds_check
    assert check.sensitivity == 3 and check.scale == pytest.approx(3 / check.eps_column)
    # private categories: the categorical column is not checked
    categories = plan_release({**SCHEMA, "r": np.dtype("object")}, 1.0,
                              bounds={"a": (0, 1), "b": (0, 10)}, columns=["a", "b", "r"],
                              categories={"r": {"private": ["x", "y"]}}, bounds_check=0.05)
    assert categories.bounds_check.columns == ("a", "b")
    assert categories.private_categories is not None
    # nothing to check: no budget spent on it, and the report says so
    for nothing in (plan_release(SCHEMA, 1.0, bounds="private", columns=["a", "b"],
                                 bounds_check=0.05),
                    plan_release({"f": np.dtype("bool"), "g": np.dtype("bool")}, 1.0,
                                 bounds={}, columns=["f", "g"], bounds_check=0.05)):
        assert nothing.bounds_check is None and nothing.total is None
        assert any("nothing to check" in line for line in nothing.notes)
    with pytest.raises(InvalidParameterError, match="micr-gauss"):
        plan_release(SCHEMA, 1.0, delta=1e-6, mechanism="micr-lap",
                     bounds={"a": (0, 1), "b": (0, 10)}, bounds_check=0.05)


def test_a_budget_too_small_for_the_check_is_refused_before_reading():
    with pytest.raises(InvalidParameterError, match="histogram"):
        plan_release(SCHEMA, 1e-14, bounds={"a": (0, 1), "b": (0, 10)}, B=4, c=1,
                     bounds_check=0.01)


def test_a_constant_column_read_as_wide_says_too_that_its_rows_sit_in_one_bin():
    """Every row in one inner bin read as "16x wider ... consider bounds 50..56.25"
    alone, or (the noise spreading the mass) as one bin alone: from run to run. Now
    the wide reading says the one bin too; without it, no bounds are suggested."""
    constant = read_check([0] * 8 + [100_000] + [0] * 7, (0.0, 100.0), 100.0)
    assert constant.wide and constant.one_bin == (8, 1.0)
    found = BoundsCheck({"k": (0.0, 100.0)}, {}, {"k": constant}, 100.0, 0.01,
                        PrivacyCost(0.02))
    (line,) = [line for line in found.lines() if line.startswith("column k:")]
    assert "consider bounds 50..56.25" in line and "sit in one bin" in line
