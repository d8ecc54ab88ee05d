"""What a user reads: privacy statements, the tidy table and the heatmap."""

import math

import pytest

from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.report import PrivacyReport
from dpmic_dask.release.results import PairwiseResult


def result(values, *, eps=1.0, delta=0.0, rho=None, ci95=0.05, mechanism="micr-lap"):
    columns = ("a", "b", "c")
    pairs = (("a", "b"), ("a", "c"), ("b", "c"))
    cost = PrivacyCost(eps, delta, rho)
    report = PrivacyReport(mechanism=mechanism, statistic="micr", epsilon=eps, delta=delta,
                           rho=rho, noise_scale=ci95 / 3, ci95=ci95, sensitivity=0.02, n=1000,
                           B=20, c=2, charge_id="c1", seeded=False,
                           statement=privacy_statement(cost, len(pairs)), released=3,
                           candidates=3)
    return PairwiseResult(columns=columns, pairs=pairs, values=tuple(values), privacy=report)


def test_pure_statement_says_implies_not_equivalent():
    text = privacy_statement(PrivacyCost(0.5), 3)
    assert "This implies" in text and "Equivalently" not in text
    assert "0.166667 per pair over 3 pairs" in text and "0.25 nats" in text


def test_gaussian_report_prints_no_per_pair_epsilon():
    rho = rho_from_eps_delta(1.0, 1e-6)
    r = result([0.1, 0.2, 0.3], delta=1e-6, rho=rho, mechanism="micr-gauss")
    text = r.report()
    assert f"{1.0 / 3:.4g}" not in text  # the meaningless "0.3333 per pair" epsilon
    assert f"rho = {rho:.4g} zCDP ({rho / 3:.4g} per pair)" in text
    assert "epsilons of Gaussian releases do not" in r.statement
    assert "nats" not in r.statement  # the MI bound is stated for pure releases only


@pytest.mark.parametrize("delta,rho,cost,unit", [
    (0.0, None, 1.0 / 3, "epsilon"),
    (1e-6, rho_from_eps_delta(1.0, 1e-6), rho_from_eps_delta(1.0, 1e-6) / 3, "rho (zCDP)"),
])
def test_table_names_the_release_total_and_each_value_cost(delta, rho, cost, unit):
    table = result([0.1, 0.2, 0.3], delta=delta, rho=rho).to_pandas()
    assert "epsilon" not in table.columns  # ambiguous: total or per value?
    assert (table.release_epsilon == 1.0).all() and (table.release_delta == delta).all()
    assert table.value_cost.tolist() == pytest.approx([cost] * 3)
    assert (table.cost_unit == unit).all()


def _hatched(ax):
    return [p for p in ax.patches if p.get_hatch()]


def test_heatmap_marks_cells_within_the_noise_interval():
    ax = result([0.01, 0.5, 0.05]).plot(path="/dev/null")
    # a-b (0.01) and b-c (0.05, on the interval's edge) lie within +/-0.05, a-c does not;
    # each pair is drawn twice (symmetric matrix)
    assert len(_hatched(ax)) == 4
    assert "+/-0.05" in ax.get_title() and "hatched" in ax.get_title()
    grey = [t for t in ax.texts if t.get_color() == "0.6"]
    assert sorted(t.get_text() for t in grey) == ["0.01", "0.01", "0.05", "0.05"]


def test_heatmap_of_noise_on_counts_has_no_interval():
    ax = result([0.01, 0.5, 0.05], ci95=math.nan, mechanism="micr-geom").plot(path="/dev/null")
    assert _hatched(ax) == [] and "noise on every grid count" in ax.get_title()


def test_heatmap_of_many_columns_is_grouped_and_has_no_cell_text(tmp_path):
    from itertools import combinations

    from dpmic_dask.release.results import spectral_order

    # 60 columns: 30 "a" columns strongly related among themselves, 30 "b" ones
    names = [f"{'ab'[k % 2]}{k:02d}" for k in range(60)]
    pairs = tuple(combinations(names, 2))
    values = [0.8 if a[0] == b[0] == "a" else 0.01 for a, b in pairs]
    report = PrivacyReport(mechanism="micr-gauss", statistic="micr", epsilon=1.0, delta=1e-6,
                           rho=0.01, noise_scale=0.02, ci95=0.04, sensitivity=0.001, n=10**6,
                           B=200, c=5, charge_id="c", seeded=False, statement="s",
                           released=len(pairs), candidates=len(pairs))
    result = PairwiseResult(columns=tuple(names), pairs=pairs, values=tuple(values),
                            privacy=report)
    ax = result.plot(path=tmp_path / "wide-heatmap.png")
    assert len(ax.texts) == 0 and _hatched(ax) == []
    assert "paled cells lie within it" in ax.get_title()
    order = [label.get_text() for label in ax.get_xticklabels()]
    first = next(k for k, name in enumerate(order) if name.startswith("a"))
    assert all(name.startswith("a") for name in order[first:first + 30])  # one contiguous group
    assert len(ax.images) == 2  # the matrix and the veil over cells within the noise
    assert len(spectral_order(result.matrix().to_numpy())) == 60


def test_heatmap_of_tau_is_signed_and_marks_small_magnitudes():
    import dataclasses

    from dpmic_dask.release.results import Companion

    tau = Companion(statistic="tau", mechanism="tau-lap", values=(-0.02, 0.7, -0.6),
                    noise_scale=0.01, ci95=0.03, sensitivity=0.004, cost=PrivacyCost(0.5))
    res = dataclasses.replace(result([0.01, 0.5, 0.05]), companions=(tau,))
    assert res.matrix("tau").loc["a", "c"] == 0.7 and res.matrix("tau").loc["c", "b"] == -0.6
    ax = res.plot(path="/dev/null", statistic="tau")
    image = ax.images[0]
    assert image.get_clim() == (-1.0, 1.0) and image.get_cmap().name == "RdBu_r"
    assert len(_hatched(ax)) == 2  # only a-b: |-0.02| <= 0.03; -0.6 is far from 0
    assert "tau-lap" in ax.get_title() and "+/-0.03" in ax.get_title()
    with pytest.raises(KeyError, match="no 'tau'"):
        result([0.1, 0.2, 0.3]).matrix("tau")


@pytest.mark.parametrize("n, eps, swamped", [(20_000, 1.0, True), (2_000_000, 50.0, False)])
def test_count_noise_that_swamps_the_cells_is_said_before_the_charge_and_in_the_report(
        n, eps, swamped):
    """micr-geom has no ci95; when its count noise exceeds a quarter of an average
    cell of the finest grid (public: n, B, eps) the values mostly measure the noise
    -- an independent pair reads high -- and the release says so before its charge
    and in its report; with little noise it says nothing of the kind."""
    import warnings

    import numpy as np
    import pandas as pd

    import dpmic_dask  # noqa: F401  (registers the accessor)
    from dpmic_dask.errors import NoiseWarning
    from dpmic_dask.privacy.accounting import InMemoryLedger
    from dpmic_dask.release import executor

    gen = np.random.default_rng(17)  # test data only
    frame = pd.DataFrame({"a": gen.uniform(0, 1, n), "c": gen.uniform(0, 1, n)})
    order: list[str] = []
    real = executor.charge_budget

    def charged(*args, **kwargs):
        order.append("charge")
        return real(*args, **kwargs)

    with warnings.catch_warnings(record=True), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("always")
        mp.setattr(executor, "charge_budget", charged)
        showwarning = warnings.showwarning

        def record(message, *args, **kwargs):
            if issubclass(args[0], NoiseWarning) and "count noise" in str(message):
                order.append("warned")
            return showwarning(message, *args, **kwargs)

        warnings.showwarning = record
        result = frame.dpmic.pairwise(eps, mechanism="micr-geom", B=150, c=1,
                                      bounds={"a": (0, 1), "c": (0, 1)},
                                      ledger=InMemoryLedger(uncapped=True))
    text = result.report()
    assert ("mostly measure the noise" in text) is swamped
    assert "no ci95 can be stated for count noise" in text
    assert (order == ["warned", "charge"]) if swamped else (order == ["charge"]), order
    if swamped:  # what it warns of: the independent pair reads high
        assert result.to_pandas()["mic"].iloc[0] > 0.3


def test_the_companion_is_named_tau_a_as_the_docs_spell_it():
    from tests.htmlpages import pairwise_result

    result = pairwise_result()
    assert result.matrix("tau_a").equals(result.matrix("tau"))
    assert result.companion("tau_a").values == result.tau_a


def test_a_wide_reports_first_line_names_thirty_columns_and_counts_the_rest():
    """The first line listed every column (2,360 characters at 400 short names)."""
    import warnings

    import numpy as np
    import pandas as pd

    from dpmic_dask.privacy.accounting import InMemoryLedger

    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(200, 40)),  # test data only
                         columns=[f"column_{k}" for k in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the noise of 780 pairs
        first = frame.dpmic.pairwise(1.0, bounds=dict.fromkeys(frame.columns, (-5, 5)),
                                     ledger=InMemoryLedger(uncapped=True)
                                     ).report().splitlines()[0]
    assert "column_29 and 10 more)" in first and "column_30" not in first
