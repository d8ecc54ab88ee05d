"""Every combination of the front steps releases through the public API.

The dimensions of a release (:mod:`dpmic_dask.release.executor` runs them all):
privacy unit x categories x bounds x nulls x statistics x selection. For each
combination, on a planted customer table (every column a function of ``x`` but
``noise``):

(a) ``frame.dpmic.pairwise`` / ``top_pairs`` releases;
(b) the planted pairs are within ``5`` noise scales (plus a small margin for the
    rows bounding drops) of the exact, non-private value on the same data at the
    release's own ``B``, ``c``, bounds and categories, and the unrelated pair is
    low (a chosen pair is a strong one);
(c) exactly one ledger charge, of the plan's cost (planned again, nothing read);
(d) the report names every step that ran.

The fast tier runs a pairwise covering array (every pair of dimension values in
at least one combination, built here deterministically); ``slow`` runs every
second combination of the rest of the full product (the other half is a fixed
rotation away: ``SLOW_OFFSET``), keeping CI within its time. ``test_the_checks_fail_on_a_corrupted_step`` shows the checks can fail.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from functools import lru_cache

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask
import dpmic_dask.release.steps as steps
from dpmic_dask.backends import backend_for
from dpmic_dask.release.unitplan import plan_unit_release
from tests.statistical.helpers import rerun_once

ROWS, UNITS, K, EPS, DELTA, MIN_ROWS = 20_000, 3_000, 8, 4.0, 1e-6, 15_000
TOP = 3
ABOVE = 0.5  # pairs_above's threshold (the selection outside the product: slow tier)
#: The pairs planted through ``x`` (every one a function of ``x``, some noisy).
PLANTED = (("x", "amount"), ("x", "region"), ("x", "signup"), ("x", "flag"))
UNRELATED = ("x", "noise")
#: Noise scales a released value may be off its exact value (Gaussian at 5 sigma:
#: about 6e-7 per value), and a margin for the rows that bounding per unit drops
#: (the exact values use every row) and the statistic's own bias under noise.
SIGMAS, MARGIN = 5.0, 0.04
CANDIDATES = ["north", "south", "west", "east"]  # "east" never occurs
PUBLIC_BOUNDS = {"x": (0, 1), "amount": (-50, 150), "signup": ("2019-01-01", "2023-01-01"),
                 "wn": (-1, 3), "noise": (0, 1)}

DIMENSIONS = {
    "unit": ("row", "cust"),
    "categories": ("public", "private", "candidates"),
    "bounds": ("public", "check", "private"),
    "nulls": ("none", "drop"),
    "statistics": ("mic", "mic+tau_a"),
    "selection": ("pairwise", "top3"),
}


def covering_array(dimensions: dict) -> list[dict]:
    """A pairwise covering array, greedily: repeatedly the first combination of the
    full product (in its order) that covers the most value pairs not yet covered.
    Deterministic; every pair of values of two dimensions occurs in some row."""
    names = list(dimensions)
    product = list(itertools.product(*dimensions.values()))
    todo = {((i, a), (j, b)) for i, j in itertools.combinations(range(len(names)), 2)
            for a in dimensions[names[i]] for b in dimensions[names[j]]}
    rows = []
    while todo:
        def gain(combo):
            return sum(((i, combo[i]), (j, combo[j])) in todo
                       for i, j in itertools.combinations(range(len(names)), 2))
        best = max(product, key=gain)  # max keeps the first of equal gains
        rows.append(dict(zip(names, best)))
        todo -= {((i, best[i]), (j, best[j]))
                 for i, j in itertools.combinations(range(len(names)), 2)}
    return rows


COVERING = covering_array(DIMENSIONS)
FULL = [dict(zip(DIMENSIONS, combo)) for combo in itertools.product(*DIMENSIONS.values())]


def combo_id(combo: dict) -> str:
    return "-".join(combo.values())


@lru_cache(maxsize=1)
def table() -> dd.DataFrame:
    """The planted customer table (test data only): ``ROWS`` rows of ``UNITS``
    customers; ``amount``, ``region``, ``signup``, ``flag`` and ``wn`` (10% nulls)
    depend on ``x``, ``noise`` on nothing."""
    gen = np.random.default_rng(1)
    x = gen.uniform(0, 1, ROWS)
    frame = pd.DataFrame({
        "cust": gen.integers(0, UNITS, ROWS),
        "x": x,
        "amount": 100 * x + gen.normal(0, 5, ROWS),
        "region": np.where(x < 0.33, "north", np.where(x < 0.66, "south", "west")),
        "signup": pd.to_datetime("2020-01-01") + pd.to_timedelta((x * 1000).astype(int),
                                                                 unit="D"),
        "flag": x > 0.5,
        "wn": np.where(gen.uniform(size=ROWS) < 0.1, np.nan, 2 * x + gen.normal(0, .1, ROWS)),
        "noise": gen.uniform(0, 1, ROWS),
    })
    return dd.from_pandas(frame, npartitions=3)


def arguments(combo: dict) -> dict:
    """The release arguments of a combination (the same for the plan)."""
    columns = ["x", "amount", "region", "signup", "flag", "noise"]
    kw: dict = dict(delta=DELTA)
    if combo["unit"] == "cust":
        kw.update(privacy_unit="cust", max_rows_per_unit=K)
    kw["categories"] = {"region": {"public": ["north", "south", "west"], "private": "private",
                                   "candidates": {"private": CANDIDATES}}[combo["categories"]]}
    if combo["nulls"] == "drop":
        columns.append("wn")
        kw.update(nulls="drop")
        if combo["unit"] != "cust":  # per unit the kept rows' count is released
            kw["min_rows"] = MIN_ROWS
    if combo["bounds"] == "private":
        kw["bounds"] = "private"
    else:
        kw["bounds"] = {c: b for c, b in PUBLIC_BOUNDS.items() if c in columns}
        # public bounds as given, or checked with 5% (not "auto", the default)
        kw["bounds_check"] = 0.05 if combo["bounds"] == "check" else None
    kw["columns"] = columns
    kw["statistics"] = ("mic", "tau_a") if combo["statistics"] == "mic+tau_a" else ("mic",)
    return kw


def ledger_for(combo: dict) -> dpmic_dask.InMemoryLedger:
    ledger = dpmic_dask.InMemoryLedger()
    unit = "cust" if combo["unit"] == "cust" else None
    ledger.set_budget("default", dpmic_dask.Budget(100.0, 1e-3, privacy_unit=unit))
    return ledger


def release(frame, combo: dict, ledger):
    kw = arguments(combo)
    if combo["selection"] == "top3":
        return frame.dpmic.top_pairs(TOP, EPS, ledger=ledger, **kw)
    if combo["selection"] == "above":
        return frame.dpmic.pairs_above(ABOVE, EPS, max_pairs=TOP, ledger=ledger, **kw)
    return frame.dpmic.pairwise(EPS, ledger=ledger, **kw)


def planned_cost(frame, combo: dict):
    kw = arguments(combo)
    if combo["selection"] == "top3":
        kw["select"] = {"rule": "top-k", "k": TOP, "share": 0.5, "screen_B": "auto"}
    elif combo["selection"] == "above":
        kw["select"] = {"rule": "above", "threshold": ABOVE, "max_pairs": TOP, "share": 0.5,
                        "screen_B": "auto"}
    return plan_unit_release(backend_for(frame).schema(frame), EPS, **kw).cost


def used_bounds(result, kw: dict) -> dict:
    """The bounds the values were computed with, in each column's kind."""
    if kw["bounds"] != "private":
        return dict(kw["bounds"])
    found = dict(result.private_bounds.bounds)
    lo, hi = found["signup"]  # seconds since the epoch, UTC
    found["signup"] = (pd.Timestamp(lo, unit="s"), pd.Timestamp(hi, unit="s"))
    return found


def exact_values(frame, result, kw: dict) -> dict:
    """The exact, non-private MICr of every pair at the release's B, c, bounds and
    categories, on every row (nulls dropped when the release dropped them)."""
    chosen = (result.private_categories or {}).get("region")
    categories = {"region": list(chosen) if chosen is not None
                  else list(kw["categories"]["region"])}
    exact = frame.dpmic.pairwise_nonprivate(
        columns=kw["columns"], bounds=used_bounds(result, kw), B=int(result.privacy.B),
        c=int(result.privacy.c), categories=categories,
        nulls="drop" if kw.get("nulls") == "drop" else "raise")
    return {(a, b): v for a, b, v in zip(exact["x"], exact["y"], exact["micr"])}


def report_words(combo: dict) -> tuple[list[str], list[str]]:
    """What the report must say, and what it must not, for a combination."""
    says, not_says = [], []
    if combo["unit"] == "cust":
        says += ["Privacy unit: per cust, at most 8 rows each", "all rows of any one cust",
                 "row count:"]
    else:
        says += ["Privacy unit: one row", "replacing any one row"]
        not_says += ["row count:"]
    if combo["categories"] == "public":
        not_says += ["Categories chosen privately", "private categories for"]
    else:
        says += ["Categories chosen privately", "private categories for ['region']"]
    if combo["categories"] == "private":
        says += ["chosen from the values that occur"]
    if combo["bounds"] == "check":
        says += ["Public bounds checked privately", "bounds check of"]
    elif combo["categories"] != "public" or combo["unit"] == "cust":
        not_says += ["bounds check of"]  # "auto" may check a public list at row level
    if combo["bounds"] == "private":
        says += ["Private bounds used:", "private bounds for"]
    else:
        not_says += ["Private bounds used:"]
    if combo["nulls"] == "drop":
        says += ["nulls='drop'"]
    if combo["statistics"] == "mic+tau_a":
        says += ["Also released: tau_a"]
    else:
        not_says += ["tau_a"]
    if combo["selection"] == "top3":
        says += [f"Selection: top {TOP} by MICr"]
    elif combo["selection"] == "above":
        says += [f"Selection: MICr above {ABOVE} (at most {TOP})"]
    else:
        not_says += ["Selection:"]
    return says, not_says


def check_combination(frame, combo: dict) -> dict:
    """Release one combination and check (a)-(d); returns the largest deviation of a
    planted pair from its exact value, in noise scales (for calibration)."""
    kw = arguments(combo)
    ledger = ledger_for(combo)
    result = release(frame, combo, ledger)  # (a)
    table_ = result.to_pandas()
    got = {(a, b): v for a, b, v in zip(table_["x"], table_["y"], table_["mic"])}
    scale = dict(zip(zip(table_["x"], table_["y"]), table_["noise_scale"]))
    assert len(got) == len(result.pairs) > 0

    # (b) the values against the exact ones on the same data
    exact = exact_values(frame, result, kw)
    deviation = {}
    for pair, value in got.items():
        deviation[pair] = (value - exact[pair]) / scale[pair]
        assert abs(value - exact[pair]) <= SIGMAS * scale[pair] + MARGIN, (
            combo, pair, value, exact[pair], scale[pair])
    found = result.private_bounds  # named in a failure: which bounds the values used
    said = (found.bounds, found.unresolved) if found is not None else None
    if combo["selection"] == "pairwise":
        for pair in PLANTED:
            assert got[pair] > 0.5 and exact[pair] > 0.8, (combo, pair, got[pair], said)
        assert got[UNRELATED] < 0.3 and exact[UNRELATED] < 0.05, (combo, got[UNRELATED])
    else:
        assert len(got) == TOP  # top 3, or the first 3 found above 0.5 (10 are above 0.6)
        strong = 0.8 if combo["selection"] == "top3" else 0.6
        for pair in got:  # a chosen pair is a strongly related one
            assert exact[pair] > strong, (combo, pair, exact[pair], said)
    chosen = (result.private_categories or {}).get("region")
    if combo["categories"] == "public":
        assert result.private_categories is None
    else:
        assert {"north", "south", "west"} <= set(chosen), chosen
        assert set(chosen) <= set(CANDIDATES), chosen
    if combo["bounds"] == "private":
        lo, hi = result.private_bounds.bounds["x"]
        assert lo <= 0.25 and 0.95 <= hi <= 4, (lo, hi)  # most of x covered
    else:
        assert result.private_bounds is None
    if combo["bounds"] == "check":
        # public lists are checked too (the rows outside them); private ones are not
        listed = {"region"} if combo["categories"] == "public" else set()
        assert set(result.bounds_check.histograms) == set(kw["bounds"]) | listed
        assert set(result.bounds_check.lists) == listed
        assert result.bounds_check.outside == ()  # every region listed
    else:  # "auto" checks a public list where it can speak (no bounds to check)
        found = result.bounds_check
        assert found is None or (combo["categories"] == "public"
                                 and tuple(found.bounds) == ("region",)), found
    if combo["statistics"] == "mic+tau_a":
        taus = dict(zip(zip(table_["x"], table_["y"]), table_["tau_a"]))
        for pair, tau in taus.items():
            if "region" in pair:
                assert math.isnan(tau), (pair, tau)
            elif "noise" in pair:
                assert abs(tau) < 0.15, (pair, tau)
            else:  # every planted column increases with x
                assert tau > 0.3, (combo, pair, tau)
    else:
        assert "tau_a" not in table_.columns

    # (c) one charge, exactly, of the plan's cost
    (charge,) = ledger.charges("default")
    cost = planned_cost(frame, combo)
    assert charge.cost == cost
    assert (cost.epsilon, cost.delta) == (EPS, DELTA)
    assert charge.charge_id == result.privacy.charge_id
    if combo["unit"] == "cust":
        assert result.privacy.privacy_unit == "cust" and result.privacy.max_rows_per_unit == K
        assert result.privacy.rows_lower_bound == result.privacy.n
    else:
        assert result.privacy.n == (MIN_ROWS if combo["nulls"] == "drop" else ROWS)

    # (d) the report (and the ledger's description) names every step
    report = result.report()
    says, not_says = report_words(combo)
    for words in says:
        assert words in report, (combo, words)
    for words in not_says:
        assert words not in report, (combo, words)
    assert "threshold ;" not in charge.description and "threshold )" not in charge.description
    return deviation


def test_the_covering_array_covers_every_pair_of_values():
    for (a, va), (b, vb) in itertools.combinations(
            [(name, v) for name, values in DIMENSIONS.items() for v in values], 2):
        if a != b:
            assert any(row[a] == va and row[b] == vb for row in COVERING), (a, va, b, vb)
    assert len(COVERING) <= 12 and len(FULL) == 144


@pytest.mark.parametrize("combo", COVERING, ids=combo_id)
@rerun_once
def test_a_covering_array_of_combinations_releases_right(combo):
    check_combination(table(), combo)


#: Which half of the rest of the full product the slow tier runs (0 or 1).
SLOW_OFFSET = 0
SLOW = [c for c in FULL if c not in COVERING][SLOW_OFFSET::2]


@pytest.mark.slow
@pytest.mark.parametrize("combo", SLOW, ids=combo_id)
@rerun_once
def test_half_of_the_other_combinations_release_right(combo):
    check_combination(table(), combo)


@pytest.mark.slow
@pytest.mark.parametrize("combo", [dict(row, selection="above") for row in COVERING],
                         ids=combo_id)
@rerun_once
def test_pairs_above_over_the_covering_array(combo):
    check_combination(table(), combo)


def test_the_checks_fail_on_a_corrupted_step(monkeypatch):
    """The test of the test: a choice of categories that corrupts what it hands on
    fails (b)."""
    frame = table()
    real = steps.recode

    def one_region(frame, remaps, coded):  # every region coded as one value
        out = real(frame, remaps, coded)
        return out.assign(region=out["region"] * 0)

    monkeypatch.setattr(steps, "recode", one_region)
    combo = dict(unit="cust", categories="candidates", bounds="public", nulls="none",
                 statistics="mic", selection="pairwise")
    with pytest.raises(AssertionError):
        check_combination(frame, combo)


@pytest.mark.slow
def test_the_checks_fail_on_corrupted_private_bounds(monkeypatch):
    """The test of the test: bounds other than those released fail (b)."""
    frame = table()
    real_after = steps.BoundsStep.after

    def squashed(self, run, charge):  # the released bounds ignored: [0, 0.1] for x
        real_after(self, run, charge)
        bounds = list(run.request.bounds)
        bounds[run.request.columns.index("x")] = (0.0, 0.1)
        run.request = dataclasses.replace(run.request, bounds=tuple(bounds))

    monkeypatch.setattr(steps.BoundsStep, "after", squashed)
    combo = dict(unit="row", categories="public", bounds="private", nulls="none",
                 statistics="mic", selection="pairwise")
    with pytest.raises(AssertionError):
        check_combination(frame, combo)
