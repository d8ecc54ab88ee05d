"""What a user reads: privacy statements, the tidy table and the heatmap."""

import math

import pytest

from dpmic_dask.accounting import PrivacyCost, privacy_statement, rho_from_eps_delta
from dpmic_dask.results import PairwiseResult, PrivacyReport


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
