"""top_pairs / pairs_above: one precheck, one charge covering selection and release,
then the chosen pairs' values with fresh noise -- on pandas and Dask frames."""

import warnings

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy.conversion import rho_from_eps_delta

COLUMNS = [f"c{k}" for k in range(7)]
BOUNDS = {name: (-2.0, 2.0) for name in COLUMNS}
PLANTED = [("c0", "c1"), ("c0", "c3"), ("c1", "c3")]  # one hidden variable drives c0, c1, c3


@pytest.fixture(scope="module")
def table():
    gen = np.random.default_rng(21)  # test data only
    n = 6000
    hidden = gen.uniform(-1, 1, n)
    data = {name: gen.normal(0, 0.5, n) for name in COLUMNS}
    data["c0"] = hidden
    data["c1"] = np.cos(3 * hidden) + 0.05 * gen.normal(size=n)
    data["c3"] = hidden ** 2 + 0.05 * gen.normal(size=n)
    return pd.DataFrame(data)


def exact_micr(frame, B=40, c=5):
    table = frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=B, c=c)
    return {(x, y): v for x, y, v in zip(table.x, table.y, table.micr)}


@pytest.mark.parametrize("delta", [0.0, 1e-8])
def test_top_pairs_finds_the_planted_pairs_with_one_charge(table, delta):
    ledger = dm.InMemoryLedger()
    ledger.set_budget("t", dm.Budget(2.0, delta))
    result = table.dpmic.top_pairs(3, 1.0, delta=delta, bounds=BOUNDS, B=40, c=5,
                                   ledger=ledger, dataset="t")
    assert set(result.pairs) == set(PLANTED)
    exact = exact_micr(table)
    released = dict(zip(result.pairs, result.values))
    order = sorted(PLANTED, key=lambda p: -exact[p])
    assert all(abs(released[p] - exact[p]) < 10 * result.ci95 for p in PLANTED)
    (charge,) = ledger.charges("t")
    assert charge.cost.epsilon == 1.0 and charge.cost.delta == delta
    if delta:
        assert charge.cost.rho == rho_from_eps_delta(1.0, delta)
        assert result.mechanism == "micr-gauss"
    else:
        assert charge.cost.rho is None and result.mechanism == "micr-lap"
    assert "selection:" in charge.description and "release:" in charge.description
    assert charge.mechanism.startswith("NoisyTopK+")
    report = result.report()
    assert "top 3 by MICr" in report and "3 of 21 pairs" in report
    table_out = result.to_pandas()
    assert len(table_out) == 3 and order[0] in PLANTED
    # each value's cost is the release part only, over the released values
    part = result.privacy.release_cost
    unit_cost = part.epsilon / 3 if not delta else part.rho / 3
    assert table_out.value_cost.iloc[0] == pytest.approx(unit_cost)


@pytest.mark.parametrize("front", [None, "private bounds", "bounds check"])
def test_each_value_cost_is_what_its_noise_was_calibrated_to_after_any_front_step(table, front):
    """With a selection and a step in front of it, ``value_cost`` is the chosen
    values' own part over the pairs released (it was the selection and values
    together), and the report says the two parts' sum is a sum."""
    bounds = dict(BOUNDS, c0="private") if front == "private bounds" else BOUNDS
    check = 0.05 if front == "bounds check" else None
    ledger = dm.InMemoryLedger()
    ledger.set_budget("t", dm.Budget(2.0))
    result = table.dpmic.top_pairs(2, 1.0, bounds=bounds, B=40, c=5, ledger=ledger,
                                   dataset="t", bounds_check=check)
    p = result.privacy
    assert result.mechanism == "micr-lap"  # Laplace: epsilon per value = sensitivity / scale
    per_value = result.to_pandas().value_cost
    assert per_value.tolist() == pytest.approx([p.sensitivity / p.noise_scale] * 2, rel=1e-9)
    if front == "private bounds":
        assert "and the chosen values, together epsilon" in result.report()


@pytest.mark.parametrize("front", [None, "private bounds", "bounds check", "per unit"])
@pytest.mark.parametrize("statistics", [("mic",), ("mic", "tau_a")])
def test_each_value_cost_of_every_pair_is_mics_own_share_after_any_front_step(
        table, front, statistics):
    """Every pair released with Kendall's tau beside MIC: ``value_cost`` is MIC's own
    share over the pairs (it was MIC's and tau's together, twice the noise's, after
    a bounds check, private bounds or a per-unit step); without tau it is the whole
    values part."""
    bounds = dict(BOUNDS, c0="private") if front == "private bounds" else BOUNDS
    frame = table.assign(who=np.arange(len(table)) // 2)
    unit = dict(privacy_unit="who", max_rows_per_unit=2) if front == "per unit" else {}
    result = frame.dpmic.pairwise(1.0, bounds=bounds, B=40, c=5, statistics=statistics,
                                  bounds_check=0.05 if front == "bounds check" else None,
                                  ledger=dm.InMemoryLedger(uncapped=True),
                                  columns=list(table.columns), **unit)
    p = result.privacy
    assert result.mechanism == "micr-lap"
    per_value = result.to_pandas().value_cost
    assert per_value.tolist() == pytest.approx([p.sensitivity / p.noise_scale] * len(per_value),
                                               rel=1e-9)


def test_parts_never_exceed_the_charged_total():
    from dpmic_dask.privacy.selection import plan_selection
    from dpmic_dask.stats.statistics import get_statistic

    micr = get_statistic("micr")
    for eps in (1e-3, 0.3, 1.0, 7.0):
        for share in (0.01, 0.5, 0.99):
            pure = plan_selection("top-k", eps=eps, delta=0.0, share=share, statistic=micr, k=5)
            assert pure.selection.budget + pure.release.cost.epsilon <= eps
            z = plan_selection("above", eps=eps, delta=1e-7, share=share, statistic=micr,
                               threshold=0.2, max_pairs=4)
            rho_sel = z.selection.epsilon ** 2 / 2  # pure DP is eps^2/2-zCDP
            assert rho_sel + z.release.cost.rho <= z.total.rho == rho_from_eps_delta(eps, 1e-7)


def test_an_insufficient_budget_is_refused_before_reading(table):
    ledger = dm.InMemoryLedger()
    ledger.set_budget("t", dm.Budget(0.5))
    with pytest.raises(dm.BudgetExceededError, match="no data was read"):
        table.dpmic.top_pairs(2, 1.0, bounds=BOUNDS, ledger=ledger, dataset="t")
    assert ledger.charges("t") == []


def test_pairs_above_reports_pairs_over_the_threshold_in_order(table):
    exact = exact_micr(table)
    want = [p for p in sorted(exact) if exact[p] > 0.25]  # the request's pair order
    assert 3 <= len(want) < len(exact)
    ledger = dm.InMemoryLedger(uncapped=True)
    result = table.dpmic.pairs_above(0.25, 1e5, bounds=BOUNDS, max_pairs=10, B=40, c=5,
                                     ledger=ledger)
    assert list(result.pairs) == want  # scanned in the public pair order
    capped = table.dpmic.pairs_above(0.25, 1e5, bounds=BOUNDS, max_pairs=2, B=40, c=5,
                                     ledger=ledger)
    assert list(capped.pairs) == want[:2]
    none = table.dpmic.pairs_above(0.999, 1e5, bounds=BOUNDS, max_pairs=2, B=40, c=5,
                                   ledger=ledger)
    assert none.pairs == () and none.values == () and len(none.to_pandas()) == 0
    assert len(ledger.charges()) == 3  # every call is charged, even one that found none
    assert "sparse vector" in result.report()


@pytest.mark.parametrize("delta", [0.0, 1e-8])
def test_pairs_above_says_the_whole_budget_is_charged_when_nothing_passes(table, delta):
    ledger = dm.InMemoryLedger(uncapped=True)
    none = table.dpmic.pairs_above(0.999, 1e5, delta=delta, bounds=BOUNDS, max_pairs=2,
                                   B=40, c=5, ledger=ledger, bounds_check=None)
    assert none.pairs == ()
    (charge,) = ledger.charges()
    assert charge.cost.epsilon == 1e5 and charge.cost.delta == delta
    report = " ".join(none.report().split())
    whole = "epsilon 1e+05" if delta == 0 else "rho 9.732e+04"
    assert ("no pair was chosen, so nothing was released, and the whole budget "
            f"({whole}) was charged all the same") in report, report
    # the plan says it before the outcome: the ledger's description of the charge
    assert "is charged whatever passes the threshold, even if nothing does" in (
        charge.description)
    from dpmic_dask.release.accessor import DPMICAccessor

    doc = " ".join(DPMICAccessor.pairs_above.__doc__.split())
    assert "it is the whole ``eps`` (and ``delta``) whatever passes" in doc


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_screening_recounts_the_chosen_pairs_at_full_B(table, scheduler):
    ddf = dd.from_pandas(table, npartitions=3)
    exact = exact_micr(table, B=60, c=5)
    with dask.config.set(scheduler=scheduler):
        result = ddf.dpmic.top_pairs(2, 1e6, bounds=BOUNDS, B=60, c=5, screen_B=16,
                                     ledger=dm.InMemoryLedger(uncapped=True))
    assert result.B == 60 and set(result.pairs) <= set(PLANTED)
    for pair, value in zip(result.pairs, result.values):
        assert value == pytest.approx(exact[pair], abs=1e-4)


def test_the_report_names_the_grid_the_scores_and_the_threshold_came_from(table):
    """MICr at the screening grid (B = 40) is lower than at the release's B: a pair
    above the threshold there could stay below it here, and the report said only
    "MICr above 0.39" beside "B = 198"."""
    ledger = dm.InMemoryLedger(uncapped=True)
    screened = table.dpmic.pairs_above(0.3, 1e4, max_pairs=2, bounds=BOUNDS, ledger=ledger)
    assert screened.B > 40
    assert (f"scored on the screening grid B = 40, the chosen pairs' values released at "
            f"B = {screened.B}") in screened.report()
    whole = table.dpmic.pairs_above(0.3, 1e4, max_pairs=2, bounds=BOUNDS, ledger=ledger,
                                    screen_B=None)
    assert "screening grid" not in whole.report()


def test_the_automatic_screening_grid_grows_to_hold_the_category_lists(table):
    """A column of 30 listed categories fits the release's B but not B = 40: the
    automatic screening grid refused it ("raise B") where pairwise released it."""
    gen = np.random.default_rng(5)  # test data only
    labels = [f"g{k}" for k in range(30)]
    frame = table.assign(g=gen.choice(labels, len(table)))
    result = frame.dpmic.top_pairs(2, 4.0, bounds=BOUNDS, categories={"g": labels},
                                   ledger=dm.InMemoryLedger(uncapped=True))
    assert len(result.pairs) == 2
    said = result.privacy.selection
    assert "screening grid B = " in said and "screening grid B = 40," not in said


@pytest.mark.parametrize("call, message", [
    (lambda f: f.dpmic.top_pairs(0, 1.0, bounds=BOUNDS), "k must be an integer"),
    (lambda f: f.dpmic.top_pairs(True, 1.0, bounds=BOUNDS), "k must be an integer"),
    (lambda f: f.dpmic.top_pairs(2, 1.0, bounds=BOUNDS, select_share=1.0), "select_share"),
    # k at least the number of pairs: nothing is chosen, the arguments are still checked
    (lambda f: f.dpmic.top_pairs(99, 1.0, bounds=BOUNDS, select_share=5.0), "select_share"),
    (lambda f: f.dpmic.top_pairs(99, 1.0, bounds=BOUNDS, select_share="abc"), "select_share"),
    (lambda f: f.dpmic.top_pairs(99, 1.0, bounds=BOUNDS, screen_B=1), "screen_B"),
    # a choice by noise alone (it was charged), or OpenDP's own error (not ours)
    (lambda f: f.dpmic.top_pairs(2, 1.0, bounds=BOUNDS, select_share=1e-300), "noise only"),
    (lambda f: f.dpmic.top_pairs(2, 1.0, bounds=BOUNDS, select_share=1e-320), "noise only"),
    (lambda f: f.dpmic.top_pairs(2, -1.0, bounds=BOUNDS), "eps"),
    (lambda f: f.dpmic.pairs_above(1.5, 1.0, bounds=BOUNDS, max_pairs=3), "threshold"),
    (lambda f: f.dpmic.pairs_above(0.3, 1.0, bounds=BOUNDS, max_pairs=0), "max_pairs"),
])
def test_bad_arguments_are_refused_before_anything_happens(table, call, message):
    ledger = dm.InMemoryLedger(uncapped=True)
    with dm.using_ledger(ledger), pytest.raises(dm.InvalidParameterError,
                                                          match=message):
        call(table)
    assert ledger.charges() == []


def test_top_pairs_can_release_tau_of_the_chosen_pairs(table):
    from dpmic_dask.stats.statistics import get_statistic, union_layout

    ledger = dm.InMemoryLedger(uncapped=True)
    result = table.dpmic.top_pairs(2, 1e6, bounds=BOUNDS, B=40, c=5, ledger=ledger,
                                   statistics=("mic", "tau_a"), bounds_check=None)
    nonprivate = dm.InMemoryLedger(uncapped=True)
    whole = table.dpmic.pairwise(1e9, bounds=BOUNDS, B=40, c=5, ledger=nonprivate,
                                 statistics=("mic", "tau_a"))
    exact_tau = dict(zip(whole.pairs, whole.tau_a))
    for pair, t in zip(result.pairs, result.tau_a):
        assert t == pytest.approx(exact_tau[pair], abs=1e-3)
    (charge,) = ledger.charges()
    assert charge.mechanism == "NoisyTopK+micr-lap+tau-lap"
    assert "tau-lap with epsilon" in charge.description
    assert "tau_a" in result.to_pandas().columns  # the binned tau is output as tau_a
    both = union_layout((get_statistic("micr"), get_statistic("tau")), 40, 5)
    assert both is get_statistic("tau").layout(40, 5)
    assert both.n_cells == get_statistic("micr").layout(40, 5).n_cells + 20 * 20


def test_auto_screening_scores_on_a_small_grid_and_releases_at_B(table, monkeypatch):
    import dpmic_dask.release.stages as stages

    exact = exact_micr(table, B=60, c=5)
    grids = []
    real = stages.evaluate_pairs

    def spy(frame, backend, request, layout, rows, B, c, fn, progress, side=None):
        grids.append(B)
        return real(frame, backend, request, layout, rows, B, c, fn, progress, side=side)

    monkeypatch.setattr(stages, "evaluate_pairs", spy)
    result = table.dpmic.top_pairs(2, 1e6, bounds=BOUNDS, B=60, c=5,
                                   ledger=dm.InMemoryLedger(uncapped=True))
    assert grids == [40]  # scored at the screening grid; the chosen pairs recounted at B
    assert result.B == 60
    for pair, value in zip(result.pairs, result.values):
        assert value == pytest.approx(exact[pair], abs=1e-4)
    grids.clear()
    table.dpmic.top_pairs(2, 1e6, bounds=BOUNDS, B=60, c=5, screen_B=None,
                          ledger=dm.InMemoryLedger(uncapped=True))
    assert grids == [60]


@pytest.mark.parametrize("call", [
    lambda f, led: f.dpmic.top_pairs(2, 1e-13, bounds=BOUNDS, ledger=led),
    lambda f, led: f.dpmic.pairs_above(0.2, 1e-13, bounds=BOUNDS, max_pairs=3, ledger=led),
])
def test_noise_that_cannot_be_sampled_is_refused_before_the_charge(table, call):
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError):
        call(table, ledger)
    assert ledger.charges() == []


def test_the_chosen_pairs_are_counted_again_from_their_own_columns_only():
    """After screening, only the chosen pairs' columns are read and binned again
    (a wide table's recount after the charge must not read every column)."""
    from dpmic_dask.release.request import pairwise_request
    from dpmic_dask.release.stages import chosen_pairs_spec
    from dpmic_dask.stats.statistics import get_statistic

    schema = {f"c{k}": np.dtype("float64") for k in range(6)}
    request = pairwise_request(schema, eps=1.0, bounds={n: (k, k + 1.0) for k, n in
                                                        enumerate(schema)})
    layout = get_statistic("micr").layout(20, 2)
    spec = chosen_pairs_spec(request, layout, [(1, 4), (0, 4)])
    assert spec.columns == ("c0", "c1", "c4")
    assert spec.bounds == ((0.0, 1.0), (1.0, 2.0), (4.0, 5.0))
    assert spec.pairs == ((1, 2), (0, 2))  # the same pairs, by their new positions
    gen = np.random.default_rng(2)  # test data only
    a = gen.uniform(0, 1, 4000)
    frame = pd.DataFrame({"a": a, "b": gen.uniform(0, 1, 4000), "c": np.cos(5 * a),
                          "d": gen.uniform(0, 1, 4000)})
    bounds = {"a": (0, 1), "b": (0, 1), "c": (-1, 1), "d": (0, 1)}
    top = frame.dpmic.top_pairs(1, 50.0, bounds=bounds, B=60, c=3, screen_B=12)
    assert top.pairs == (("a", "c"),)
    exact = dm.micr(frame["a"], frame["c"], x_bounds=(0, 1), y_bounds=(-1, 1), B=60, c=3)
    assert abs(top.values[0] - exact) < 20 * top.privacy.noise_scale


@pytest.mark.parametrize("mechanism, warned", [("micr-geom", True), ("micr-lap", True),
                                                ("micr-gauss", False)])
def test_a_delta_a_pure_mechanism_does_not_use_is_said(table, mechanism, warned):
    """``delta`` given with a pure mechanism is not used (the release is pure
    eps-DP): said with an UnusedParameterWarning, before the charge; the charge is
    the pure eps on a pure budget."""
    import warnings as _warnings

    ledger = dm.InMemoryLedger(uncapped=True)
    with _warnings.catch_warnings(record=True) as seen:
        _warnings.simplefilter("always")
        result = table.dpmic.pairwise(1.0, bounds=BOUNDS, delta=1e-6, mechanism=mechanism,
                                      B=20, c=2, ledger=ledger, bounds_check=None)
    unused = [w for w in seen if issubclass(w.category, dm.UnusedParameterWarning)]
    assert bool(unused) == warned
    if warned:
        assert "delta" in str(unused[0].message) and unused[0].filename == __file__
        assert result.privacy.delta == 0.0 and ledger.charges()[0].cost.delta == 0.0


@pytest.mark.parametrize("rule", ["top", "above"])
def test_a_selection_whose_noise_is_large_warns_as_pairwise_does(rule):
    """pairwise warned of noise above 0.25 (before the charge and after); top_pairs
    (fewer pairs than there are) and pairs_above never did, at the same noise."""
    gen = np.random.default_rng(4)  # test data only
    frame = pd.DataFrame({c: gen.normal(size=60) for c in "abc"})
    bounds = {c: (-4.0, 4.0) for c in "abc"}
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.warns(dm.NoiseWarning, match="noise is large") as said:
        if rule == "top":
            frame.dpmic.top_pairs(1, 1.0, bounds=bounds, ledger=ledger)
        else:
            frame.dpmic.pairs_above(0.0, 1.0, bounds=bounds, max_pairs=1, ledger=ledger)
    assert len(ledger.charges()) == 1
    assert any("within their noise" in str(w.message) for w in said) or rule == "above"


def test_max_pairs_beyond_the_number_of_pairs_counts_as_every_pair(table):
    """At most every pair can pass the threshold: max_pairs = 1000 over 21 pairs drew
    the sparse vector's query noise for 1000 positive answers (50 times wider than
    for 21), and chose noise. It plans as max_pairs = 21."""
    bounds = BOUNDS
    wide = table.dpmic.plan(1.0, bounds=bounds, threshold=0.3, max_pairs=1000)
    exact = table.dpmic.plan(1.0, bounds=bounds, threshold=0.3, max_pairs=21)
    assert wide.planned.selection.selection == exact.planned.selection.selection
    assert "(at most 21)" in wide.explain(show=False)


@pytest.mark.parametrize("how", ["top_pairs", "pairs_above"])
def test_a_choice_made_mostly_by_noise_is_said_in_a_warning_and_in_the_report(table, how):
    """top_pairs(1, eps=0.001) picked an unrelated pair over the planted one and the
    report said "Selection: top 1 by MICr" as a fact."""
    ledger = dm.InMemoryLedger(uncapped=True)

    def run(eps):
        if how == "top_pairs":
            return table.dpmic.top_pairs(1, eps, bounds=BOUNDS, ledger=ledger)
        return table.dpmic.pairs_above(0.3, eps, max_pairs=2, bounds=BOUNDS, ledger=ledger)

    with pytest.warns(dm.NoiseWarning, match="selection's noise is large"):
        noisy = run(1e-3)
    assert "at this budget the pairs are chosen mostly by noise" in noisy.report()
    with warnings.catch_warnings():
        warnings.simplefilter("error", dm.NoiseWarning)
        clear = run(1e4)
    assert "mostly by noise" not in clear.report()


def test_the_selection_noise_warning_comes_before_the_charge(table, monkeypatch):
    from dpmic_dask.release import executor

    seen = []
    real = executor.charge_budget
    monkeypatch.setattr(executor, "charge_budget",
                        lambda *a, **k: seen.append("charge") or real(*a, **k))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        original = warnings.showwarning

        def note(message, *args, **kwargs):
            if "selection's noise is large" in str(message):
                seen.append("warned")
            return original(message, *args, **kwargs)

        warnings.showwarning = note
        table.dpmic.top_pairs(1, 1e-3, bounds=BOUNDS, ledger=dm.InMemoryLedger(uncapped=True))
    assert caught is not None and seen[:2] == ["warned", "charge"]
