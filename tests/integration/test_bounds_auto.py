"""``bounds_check="auto"``: the public bounds are checked with 2% of the budget
where the public row count lets the check speak, not otherwise, and the report
says which."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.errors import BoundsWarning
from dpmic_dask.release.bounds_check import AUTO_SHARE, MIN_TOTAL_SCALES
from dpmic_dask.release.results import UNCHECKED


def table(n=20_000, low=0.0, high=1.0, seed=0):
    gen = np.random.default_rng(seed)  # test data only
    x = gen.uniform(low, high, n)
    return pd.DataFrame({"cid": gen.integers(0, n // 4, n), "x": x,
                         "y": x + gen.normal(0, 0.05 * (high - low), n)})


def release(frame, eps, **options):
    ledger = dm.InMemoryLedger(uncapped=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        options = {"bounds_check": "auto", **options}
        result = frame.dpmic.pairwise(eps, bounds={"x": (0, 100), "y": (-1, 102)},
                                      columns=["x", "y"], ledger=ledger, **options)
    (charge,) = ledger.charges()
    return result, charge, [w for w in seen if issubclass(w.category, BoundsWarning)]


def test_where_the_check_can_speak_it_runs_with_two_percent_of_the_budget():
    # eps 20, two columns: each column's check has eps 0.2, scale 10 counts, and
    # speaks from 200 scales = 2,000 rows; 20,000 rows are enough
    result, charge, warned = release(table(), 20.0)
    assert result.bounds_check is not None and charge.cost.epsilon == 20.0
    assert result.bounds_check.noise_scale == pytest.approx(2 / (AUTO_SHARE * 20 / 2))
    assert result.privacy.release_cost.epsilon == pytest.approx(20 * (1 - AUTO_SHARE))
    assert charge.mechanism.startswith("bounds-check+")
    assert any("y:" in str(w.message) for w in warned)  # y is in -0.2..1.2 of -1..102


def test_where_it_cannot_speak_it_is_off_and_the_report_says_why():
    result, charge, warned = release(table(), 1.0)  # needs 200 * 200 = 40,000 rows
    assert result.bounds_check is None and not warned
    assert charge.mechanism == "micr-lap" and result.privacy.epsilon == 1.0
    report = result.report()
    need = MIN_TOTAL_SCALES * 2 / (AUTO_SHARE * 1.0 / 2)
    assert need == pytest.approx(40_000)
    # the least row count that passes, never rounded below it
    assert "bounds_check='auto' checks them with 2% of the budget from 40,000 rows" \
        in report and "this release has 20,000" in report and UNCHECKED not in report


def test_none_turns_it_off_and_a_share_forces_it():
    off, charge, warned = release(table(), 20.0, bounds_check=None)
    assert off.bounds_check is None and not warned and charge.mechanism == "micr-lap"
    assert UNCHECKED in off.report()
    forced, _, _ = release(table(), 1.0, bounds_check=0.05)
    assert forced.bounds_check is not None


def test_per_unit_auto_is_off_because_the_row_count_is_private():
    result, charge, warned = release(table(), 20.0, privacy_unit="cid", max_rows_per_unit=4)
    assert result.bounds_check is None and not warned
    assert "per unit the row count is private" in result.privacy.statement


def test_values_beyond_a_bound_are_said_to_pile_up_at_it():
    frame = table(low=1000, high=2000)
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.warns(BoundsWarning, match="at its upper bound: values beyond 1 would be clamped there"):
        frame.dpmic.pairwise(20.0, bounds={"x": (0, 1), "y": (0, 3000)}, columns=["x", "y"],
                             ledger=ledger, bounds_check="auto")
    # its advice of tighter bounds inside is only for a column that does not run
    # past the bound (here it does: tighter bounds would clamp every value again)
    with pytest.warns(BoundsWarning, match="if the column does not run past 1; if it does, "
                                           "bounds that hold its values"):
        frame.dpmic.pairwise(20.0, bounds={"x": (0, 1), "y": (0, 3000)}, columns=["x", "y"],
                             ledger=ledger, bounds_check="auto")


def test_at_the_stated_row_count_the_check_runs_and_one_row_less_it_does_not():
    def at(rows):
        gen = np.random.default_rng(5)  # test data only
        frame = pd.DataFrame({"x": gen.uniform(0, 1, rows), "y": gen.uniform(0, 1, rows)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (0, 1)})
    assert at(40_000).bounds_check is not None
    below = at(39_999)
    assert below.bounds_check is None and "from 40,000 rows" in below.report()


def test_per_unit_with_every_bound_private_says_nothing_of_public_bounds():
    frame = table()
    kw = {"columns": ["x", "y"], "privacy_unit": "cid", "max_rows_per_unit": 4}
    private = frame.dpmic.plan(20.0, bounds="private", **kw).explain(show=False)
    assert "Public bounds: used as given" not in private
    public = frame.dpmic.plan(20.0, bounds={"x": (0, 100), "y": (-1, 102)}, **kw)
    assert "Public bounds: used as given, not checked (per unit" in public.explain(show=False)


def test_a_column_in_one_bin_is_never_said_to_be_fine_where_the_noise_hides_it():
    """50,000 rows at eps 1: the check speaks (200 scales of 200 counts need
    40,000), but a constant column on (0, 10) -- every row in one of 16 bins --
    leaves 15 empty bins whose clipped noise (about 7.5 scales) outweighs 1% of
    the rows. It was read as "not far wider" in about 4 releases in 5; now it is
    wide or "cannot tell", never settled, and the report's last line speaks of
    the other columns only. A spread column beside it is settled."""
    gen = np.random.default_rng(15)  # test data only
    n = 50_000
    frame = pd.DataFrame({"x": gen.uniform(0, 100, n), "c5": np.full(n, 5.0)})
    for _ in range(3):
        ledger = dm.InMemoryLedger(uncapped=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = frame.dpmic.pairwise(1.0, bounds={"x": (0, 100), "c5": (0, 10)},
                                          ledger=ledger)
        found = result.bounds_check
        assert found is not None and found.checks["c5"].confident
        constant, spread = found.checks["c5"], found.checks["x"]
        assert constant.wide or not constant.settled
        assert spread.settled and not spread.wide
        report = result.report()
        # said, wide or not: its rows sit in one bin (and never "cannot tell")
        assert constant.one_bin is not None and constant.one_bin[0] == 8
        assert re.search(r"column c5: the private check puts \d+% of its rows in one "
                         r"bin, 5\.\.5\.625", report) or (
            constant.wide and "sit in one bin" in report)
        assert "cannot tell" not in report
        if not constant.wide:
            assert "No other checked column's public bounds look far wider" in report


def test_per_unit_the_report_says_once_that_public_bounds_were_not_checked():
    result, _, _ = release(table(), 4.0, privacy_unit="cid", max_rows_per_unit=4)
    assert result.report().count("used as given, not checked") == 1
    assert "not checked (per unit the row count is private" in result.report()


def test_per_unit_rows_without_a_unit_id_are_said_to_be_left_out():
    """95% of the unit ids missing: the release was charged on the other 5% (n0 690
    of 20,000 rows) and nothing said that rows were left out."""
    frame = table()
    frame["cid"] = frame["cid"].astype("float64").where(np.arange(len(frame)) % 20 == 0)
    result, _, _ = release(frame, 4.0, privacy_unit="cid", max_rows_per_unit=4)
    assert "rows with no unit id (a null) belong to no unit and are left out" in \
        result.report()
