"""The copula test without bins (signs at released medians): exhaustive
sensitivity checks of the released sums and of the medians' scores, the
tetrachoric post-processing, and the release through ``causal_graph``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.causal import causal_graph
from dpmic_dask.causal.copulabins import MARGIN_BINS, fine_margin_codings, margin_partition
from dpmic_dask.causal.quadrant import (
    median_scores,
    quadrant_l1,
    quadrant_l2,
    sign_partition,
    tetrachoric,
)
from dpmic_dask.causal.tables import ColumnCoding
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from tests.unit.test_causal_copula import worst_replace_one


def _change(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The change of the sums ``(M, C)`` when one row's signs go from ``u`` to ``v``."""
    p = u.size
    iu = np.triu_indices(p, 1)
    return np.concatenate([v - u, (np.outer(v, v) - np.outer(u, u))[iu]])


@pytest.mark.parametrize("p", range(1, 8))
def test_one_row_lemma_exhaustive(p):
    """Every pair of sign vectors: L1 at most floor((p + 1)^2 / 2) and L2 at most
    sqrt(2 floor((p + 1)^2 / 2)), both attained."""
    worst_l1 = worst_l2 = 0.0
    for u in itertools.product((-1, 1), repeat=p):
        for v in itertools.product((-1, 1), repeat=p):
            d = _change(np.array(u), np.array(v))
            worst_l1 = max(worst_l1, float(np.abs(d).sum()))
            worst_l2 = max(worst_l2, float(np.sqrt((d * d).sum())))
    assert worst_l1 == quadrant_l1(p)
    assert worst_l2 == pytest.approx(quadrant_l2(p)) and quadrant_l2(p) <= p + 1


@pytest.mark.parametrize("p, values", [(1, (-3.0, 0.2, 0.5, 0.7, 1.0, 9.0)),
                                       (2, (-3.0, 0.2, 0.5, 0.7, 1.0, 9.0)),
                                       (3, (-3.0, 0.5, 9.0))])
def test_released_sums_sensitivity_exhaustive(p, values):
    """Every replace-one neighbour of 2-row datasets on values below, at and above
    each column's cut, inside and beyond the bounds: the sums move by at most the
    stated L1 and L2, both attained."""
    names = [f"c{j}" for j in range(p)]
    codings = fine_margin_codings([ColumnCoding(c, 5, bounds=(0.0, 1.0)) for c in names])
    cuts = np.full(p, MARGIN_BINS // 2)
    worst_l1, worst_l2 = worst_replace_one(
        values, names, lambda frame: sign_partition(frame, codings, cuts).vector())
    assert worst_l1 == quadrant_l1(p) and worst_l2 == pytest.approx(quadrant_l2(p))


def test_median_scores_move_by_at_most_one():
    """Every replace-one neighbour of 3-row datasets over a few fine bins (bounds
    (0, 1), values inside and beyond): every cut's score moves by at most 1, and by
    1 somewhere."""
    codings = fine_margin_codings([ColumnCoding("x", 5, bounds=(0.0, 1.0))])
    values = (-1.0, 0.0, 0.25, 0.5, 0.9999, 1.0, 4.0)
    scores = {}
    for rows in itertools.product(range(len(values)), repeat=3):
        frame = pd.DataFrame({"x": [values[r] for r in rows]})
        scores[rows] = median_scores(margin_partition(frame, codings).counts[0], 3)
    worst = 0.0
    for rows, before in scores.items():
        for new in range(len(values)):
            worst = max(worst, float(np.abs(scores[(*rows[:2], new)] - before).max()))
    assert worst == 1.0


def test_median_scores_peak_at_the_median():
    scores = median_scores(np.array([1, 0, 2, 1]), 4)
    # rows below each cut: 0, 1, 1, 3, 4 -> |. - 2|
    assert scores.tolist() == [-2.0, -1.0, -1.0, -1.0, -2.0]


def test_tetrachoric_recovers_the_correlation_at_any_cut():
    """Gaussian data cut away from the medians: the tetrachoric correlations match
    the true ones; the slope matches a finite difference; at the medians the
    sampling factor is pi^2 / 4."""
    rng = np.random.default_rng(0)  # test data only
    n = 400_000
    cov = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.0]])
    x = rng.multivariate_normal(np.zeros(3), cov, n)
    signs = np.where(x >= np.array([0.3, -0.8, 1.2]), 1.0, -1.0)
    iu = np.triu_indices(3, 1)
    sums = np.concatenate([signs.sum(axis=0), (signs.T @ signs)[iu]])
    r, slope, sampling, _ = tetrachoric(sums, 3, n)
    assert np.allclose(r, cov, atol=0.01)
    bumped = sums.copy()
    bumped[3] += 1000  # C_01
    r2, _, _, _ = tetrachoric(bumped, 3, n)
    assert (r2[0, 1] - r[0, 1]) / (1000 / n) == pytest.approx(slope[0, 1], rel=0.02)
    median = np.concatenate([[0.0, 0.0], [0.0]])
    _, slope0, sampling0, _ = tetrachoric(median, 2, 1000)
    assert sampling0[0, 1] == pytest.approx(math.pi**2 / 4)
    assert slope0[0, 1] == pytest.approx(math.pi / 2)
    assert sampling[0, 1] > math.pi**2 / 4  # cuts away from the medians see less


def test_impossible_released_sums_stay_inside_the_orthant_bounds():
    """Noise can make the released sums impossible (shares outside (0, 1), a pair
    outside its Frechet bounds): the correlations stay in [-1, 1], finite."""
    released = np.array([1200, -1500, 5000])  # n = 1000
    r, slope, sampling, _ = tetrachoric(released, 2, 1000)
    assert np.isfinite(r).all() and np.isfinite(slope).all() and np.isfinite(sampling).all()
    assert abs(r[0, 1]) < 1.0


def _skewed(n, seed):
    rng = np.random.default_rng(seed)  # test data only
    x = rng.standard_normal(n)
    y = 0.8 * x + 0.6 * rng.standard_normal(n)
    z = 0.8 * y + 0.6 * rng.standard_normal(n)
    return pd.DataFrame({"x": x, "y": np.exp(2 * y), "z": z})


SKEWED_BOUNDS = {"x": (-5.0, 5.0), "y": (0.0, 1000.0), "z": (-5.0, 5.0)}


def test_signs_charge_once_split_ten_ninety_and_find_a_chain_on_a_skewed_column():
    """Too few rows for bins at released quantiles: the medians take a tenth, the
    sums the rest, one charge; the chain x - y - z (y exp-transformed, nearly all of
    its rows in 1% of its bounds, which equal-width bins would tie) is found."""
    frame = _skewed(20_000, 0)
    ledger = InMemoryLedger({"d": Budget(1.0)})
    g = causal_graph(frame, 1.0, bounds=SKEWED_BOUNDS, ledger=ledger, dataset="d")
    assert len(ledger.charges("d")) == 1 and float(ledger.spent("d")) == pytest.approx(1.0)
    report = g.report()
    assert report.statistic == "signs" and report.passes == 2
    (_, picks, _), (_, sums, scale) = report.parts
    assert "epsilon 0.1" in picks and "epsilon 0.9" in sums
    assert scale == pytest.approx(quadrant_l1(3) / 0.9)
    assert report.noise_scale == pytest.approx(scale / 20_000)
    assert g.skeleton == {frozenset("xy"), frozenset("yz")}
    # y's cut near its median: exp(2 * 0) = 1 of (0, 1000), fine bin 2
    assert abs(g.released_cuts["y"] - 2) <= 2
    assert abs(g.released_signs.loc["y", "y"]) < 0.3 * 20_000


def test_quasi_random_covariance_matches_the_closed_forms():
    """Four columns (the quasi-random path): the covariance of the sign products
    agrees with the exact forms where they exist -- independent columns give each
    product unit variance and no covariance; pairs sharing a column give
    beta_bc - beta_ab beta_ac with beta = (2 / pi) arcsin(r) at the medians."""
    from dpmic_dask.causal.quadrant import concordance_variance

    k = 4
    grad = np.triu(np.arange(1.0, 17.0).reshape(4, 4), 1)
    pairs_grad = grad[np.triu_indices(k, 1)]
    independent = concordance_variance(grad, np.eye(k), np.eye(k), np.zeros(k))
    assert independent == pytest.approx(float((pairs_grad**2).sum()), rel=0.01)
    r = np.array([[1.0, 0.6, -0.3, 0.2], [0.6, 1.0, 0.1, 0.4],
                  [-0.3, 0.1, 1.0, 0.5], [0.2, 0.4, 0.5, 1.0]])
    beta = 2.0 / math.pi * np.arcsin(r)
    only = np.zeros((k, k))
    only[0, 1], only[0, 2] = 1.0, -2.0  # two pairs sharing column 0
    expected = ((1 - beta[0, 1]**2) + 4 * (1 - beta[0, 2]**2)
                - 4 * (beta[1, 2] - beta[0, 1] * beta[0, 2]))
    assert concordance_variance(only, beta, r, np.zeros(k)) == pytest.approx(expected, abs=0.02)
    # the same with three columns takes the exact path
    assert concordance_variance(only[:3, :3], beta[:3, :3], r[:3, :3], np.zeros(3)) == \
        pytest.approx(expected, rel=1e-12)


def test_a_column_on_one_side_of_its_cut_shows_no_dependence():
    """Two columns with every row released on one side (constants): their shares
    sit at the clip, and their tetrachoric correlation is 0, not the orthant's
    bound (about 0.999), so no edge is read into them."""
    n = 1000
    released = np.array([n, n, 10, n, 10, 10])  # M_a, M_b, M_c, C_ab, C_ac, C_bc
    r, slope, _, _ = tetrachoric(released, 3, n)
    assert r[0, 1] == 0.0 and r[0, 2] == 0.0 and r[1, 2] == 0.0
    assert np.isfinite(slope).all()


def test_per_unit_tiny_tables_never_fail_after_the_charge():
    """Three rows, one per unit, at a large eps: the noisy count is often 3 or
    less, where the tests have no degrees of freedom; the release completes with
    the count floored at 4 (post-processing), charged once each time."""
    frame = pd.DataFrame({"a": [0.1, 0.5, 0.9], "b": [0.2, 0.4, 0.8],
                          "c": [0.3, 0.6, 0.1], "u": [1, 2, 3]})
    bounds = {c: (0.0, 1.0) for c in "abc"}
    for _ in range(10):
        ledger = InMemoryLedger()
        ledger.set_budget("d", Budget(8.0, privacy_unit="u"))
        g = causal_graph(frame, 8.0, columns=list("abc"), bounds=bounds, privacy_unit="u",
                         max_rows_per_unit=1, ledger=ledger, dataset="d")
        assert g.report().rows >= 4 and len(ledger.charges("d")) == 1
        assert 0.0 < g.report().smallest_visible <= 1.0
    empty = causal_graph(frame.iloc[:0], 8.0, columns=list("abc"), bounds=bounds,
                         privacy_unit="u", max_rows_per_unit=1)
    assert empty.report().rows >= 4


def test_a_constant_column_leaves_the_smallest_visible_correlation_as_it_was():
    """The report's smallest |correlation| a level-0 test detects is a typical
    pair's: a constant column, whose pairs no test sees (all its signs on one
    side), is left out of it (with its pairs in the median, 0.83 was reported
    where the other pairs see 0.05)."""
    import warnings

    gen = np.random.default_rng(2)  # test data only
    n = 4000
    a = gen.normal(size=n)
    frame = pd.DataFrame({"a": a, "b": a + gen.normal(size=n), "k": gen.normal(size=n)})
    bounds = {"a": (-5.0, 5.0), "b": (-8.0, 8.0), "k": (-5.0, 5.0)}
    figures = {}
    for name, third in (("varying", frame["k"]), ("constant", np.full(n, 0.5))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the constant column's BoundsWarning
            g = causal_graph(frame.assign(k=third), 1.0, bounds=bounds,
                             ledger=InMemoryLedger(uncapped=True))
        figures[name] = g.report().smallest_visible
    assert 0.02 < figures["varying"] < 0.1
    assert figures["constant"] == pytest.approx(figures["varying"], rel=0.3)


def test_a_constant_column_is_named_and_leaves_the_others_alone_under_every_draw():
    """A constant column's released share of one side lands within the noise of
    0 or 1, not always within 0.001 of it: it was read as a column (about a third
    of the draws at n = 5000 under zCDP), its tetrachoric correlations were noise
    (about +-0.6), the nearest correlation matrix bent the others', and the graph
    gained edges with nothing said. Now it is named every time and its
    correlations are 0: no edge reaches it."""
    import warnings

    from dpmic_dask.errors import BoundsWarning

    gen = np.random.default_rng(0)  # test data only
    n = 5000
    a, b = gen.normal(size=n), gen.normal(size=n)
    c = 0.8 * a + 0.8 * b + 0.6 * gen.normal(size=n)
    d = 0.9 * c + 0.6 * gen.normal(size=n)
    frame = pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "k": 1.0})
    bounds = {**{x: (-5.0, 5.0) for x in "abcd"}, "k": (0.0, 2.0)}
    for _ in range(12):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            g = causal_graph(frame, 1.0, delta=1e-6, bounds=bounds,
                             ledger=InMemoryLedger(uncapped=True))
        assert g.report().statistic == "signs"
        assert g.report().flat == ("k",)
        assert any(issubclass(w.category, BoundsWarning) and "'k'" in str(w.message)
                   for w in said)
        assert not any("k" in edge for edge in g.skeleton)


def test_wide_noise_does_not_read_every_column_as_one_sided():
    """The one-sided margin grows with the noise of a share, up to FLAT_MOST: at an
    eps where every share is mostly noise, a margin of four of its standard
    deviations named every column as piled at one side and read every
    correlation as 0."""
    import warnings

    from dpmic_dask.causal.quadrant import FLAT_MOST, one_sided

    n, p = 1000, 4
    released = np.concatenate([np.full(p, 0.0), np.zeros(p * (p - 1) // 2)])
    assert not one_sided(released, p, n, spread=0.3).any()  # shares of 1/2
    edge = np.concatenate([np.full(p, n * (1 - 2 * (FLAT_MOST - 0.01))),
                           np.zeros(p * (p - 1) // 2)])  # shares 4% from one side
    assert one_sided(edge, p, n, spread=0.3).all()
    gen = np.random.default_rng(1)  # test data only
    frame = pd.DataFrame(gen.normal(size=(5000, 6)), columns=list("abcdef"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the noise warnings at this eps
        g = causal_graph(frame, 0.05, bounds={c: (-5.0, 5.0) for c in frame},
                         ledger=InMemoryLedger(uncapped=True))
    assert g.report().statistic == "signs" and len(g.report().flat) < 6
