"""The Gaussian-copula causal test: exhaustive sensitivity checks of the released
tau vector, the tau grids, the partial-correlation gradient, the choice of the
test from the column kinds, and the exact Fisher z path against causal-learn."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.causal import causal_graph, causal_graph_exact
from dpmic_dask.causal.copula import (
    CopulaBudget,
    CorrelationTests,
    copula_bins,
    fine_codings,
    grid_partition,
    nearest_correlation,
    partial_gradient,
    tau_matrix,
    tau_vector_l1,
    tau_vector_l2,
)
from dpmic_dask.causal.copulabins import binned_codings
from dpmic_dask.causal.request import check_request
from dpmic_dask.causal.tables import ColumnCoding
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger


def exact_tau_on(frame, bounds, bins=None) -> np.ndarray:
    """The exact tau_a matrix of ``frame``'s columns on the copula release's bins:
    equal-width fine bins of ``bounds``, or the released ``bins`` (per column the
    bin of each fine bin, ``CausalGraph.released_bins``)."""
    names = list(bounds)
    p = len(names)
    public = tuple(ColumnCoding(c, 5, bounds=bounds[c]) for c in names)
    size = copula_bins(p * (p - 1) // 2)
    codings = (fine_codings(public, size) if bins is None
               else binned_codings(public, [bins[c] for c in names], size))
    return tau_matrix(grid_partition(frame, codings), p, size, len(frame))


def worst_replace_one(values, names, statistic) -> tuple[float, float]:
    """The largest L1 and L2 change of ``statistic(frame)`` over every 2-row frame
    of ``names`` columns (each row a tuple of ``values``) and every replacement of
    its second row: an exhaustive replace-one sensitivity check."""
    rows = list(itertools.product(values, repeat=len(names)))
    out = {}
    for pair in itertools.product(range(len(rows)), repeat=2):
        frame = pd.DataFrame([rows[r] for r in pair], columns=names)
        out[pair] = np.asarray(statistic(frame), dtype=float).ravel()
    worst_l1 = worst_l2 = 0.0
    for (keep, _), before in out.items():
        for new in range(len(rows)):
            diff = out[(keep, new)] - before
            worst_l1 = max(worst_l1, float(np.abs(diff).sum()))
            worst_l2 = max(worst_l2, math.sqrt(float((diff ** 2).sum())))
    return worst_l1, worst_l2


def tau_vectors(data: np.ndarray) -> np.ndarray:
    """tau_a of every pair of columns, for a stack of datasets data[..., n, p]."""
    n, p = data.shape[-2:]
    sign = np.sign(data[..., :, None, :] - data[..., None, :, :])  # [..., n, n, p]
    iu = np.triu_indices(n, 1)
    sign = sign[..., iu[0], iu[1], :]  # [..., pairs of rows, p]
    out = [(sign[..., a] * sign[..., b]).sum(axis=-1) for a, b in itertools.combinations(
        range(p), 2)]
    return np.stack(out, axis=-1) / (n * (n - 1) / 2.0)


@pytest.mark.parametrize("n, p, levels", [(2, 4, 3), (3, 3, 3), (3, 4, 2), (4, 3, 2)])
def test_tau_vector_sensitivity_exhaustive(n, p, levels):
    """Every dataset of n rows on a levels^p grid and every replace-one neighbour:
    the whole vector of tau_a moves by at most 2 p / n in L2 and p^2 / n in L1
    (attained where the grid has an interior: n = 2, p = 4 on 3 levels)."""
    rows = np.array(list(itertools.product(range(levels), repeat=p)), dtype=float)
    datasets = np.array(list(itertools.product(range(len(rows)), repeat=n)))
    taus = tau_vectors(rows[datasets])
    radix = len(rows) ** np.arange(n - 1, -1, -1)
    index = datasets @ radix
    position = np.empty(len(datasets), dtype=np.int64)
    position[index] = np.arange(len(datasets))
    worst_l2 = worst_l1 = 0.0
    for r in range(n):
        for new in range(len(rows)):
            other = index + (new - datasets[:, r]) * radix[r]
            diff = taus[position[other]] - taus
            worst_l2 = max(worst_l2, float(np.sqrt((diff ** 2).sum(axis=1)).max()))
            worst_l1 = max(worst_l1, float(np.abs(diff).sum(axis=1).max()))
    assert worst_l2 <= 2 * p / n + 1e-12
    assert worst_l1 <= p * p / n + 1e-12
    if (n, p, levels) == (2, 4, 3):
        assert worst_l2 == pytest.approx(2 * p / n)
        assert worst_l1 == pytest.approx(p * p / n)


@pytest.mark.parametrize("p", range(2, 7))
def test_one_row_lemma_exhaustive(p):
    """The lemma behind the bounds: for sign vectors u, v in {-1, 0, 1}^p,
    sum_{a<b} (u_a u_b - v_a v_b)^2 <= p^2 and sum |u_a u_b - v_a v_b| <= p^2 / 2."""
    signs = np.array(list(itertools.product((-1, 0, 1), repeat=p)))
    iu = np.triu_indices(p, 1)
    prods = (signs[:, :, None] * signs[:, None, :])[:, iu[0], iu[1]]
    diff = prods[:, None, :] - prods[None, :, :]
    assert (diff ** 2).sum(axis=-1).max() <= p * p
    assert np.abs(diff).sum(axis=-1).max() <= p * p / 2


def test_sensitivities_and_scale():
    assert tau_vector_l2(10, 1000) >= 0.02 and tau_vector_l1(10, 1000) >= 0.1
    pure = CopulaBudget.plan(1.0, 0.0, p=10, n=1000)
    assert pure.scale == pytest.approx(0.1, rel=1e-9)
    gauss = CopulaBudget.plan(1.0, 1e-6, p=10, n=1000)
    assert gauss.scale == pytest.approx(0.02 / math.sqrt(2 * gauss.total.rho), rel=1e-9)


def test_grid_tau_is_exact_tau_a():
    """On values that fall one per bin, the grids' tau is the O(n^2) tau_a."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 16, (300, 4)).astype(float)
    x[:, 1] = np.clip(x[:, 0] + rng.integers(-3, 4, 300), 0, 15)
    frame = pd.DataFrame(x, columns=list("abcd"))
    codings = fine_codings([ColumnCoding(c, 5, bounds=(0.0, 16.0)) for c in "abcd"], 16)
    tau = tau_matrix(grid_partition(frame, codings), 4, 16, 300)
    expected = tau_vectors(x)
    assert np.allclose(tau[np.triu_indices(4, 1)], expected, atol=1e-12)
    halves = grid_partition(frame.iloc[:100], codings) + grid_partition(frame.iloc[100:],
                                                                        codings)
    assert np.array_equal(halves.counts, grid_partition(frame, codings).counts)


def test_partition_grids_are_int32_and_their_sums_exact_int64():
    """One partition's grids take half the memory; sums widen before adding, so
    counts past 2^31 stay exact."""
    frame = pd.DataFrame({"a": [0.5, 1.5, 2.5], "b": [2.5, 0.5, 1.5]})
    codings = fine_codings([ColumnCoding(c, 5, bounds=(0.0, 3.0)) for c in "ab"], 16)
    one = grid_partition(frame, codings)
    assert one.counts.dtype == np.int32 and int(one.counts.sum()) == 3
    big = dataclasses.replace(one, counts=np.full_like(one.counts, 2**31 - 1))
    total = big + big + one
    assert total.counts.dtype == np.int64
    assert int(total.counts.max()) == 2 * (2**31 - 1) + 1 and total.rows == 9


def test_partial_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5))
    r = nearest_correlation(np.corrcoef(a @ a.T + 5 * np.eye(5)))

    def partial(m):
        prec = np.linalg.inv(m)
        return -prec[0, 1] / math.sqrt(prec[0, 0] * prec[1, 1])

    grad = partial_gradient(np.linalg.inv(r))
    h = 1e-6
    for i, j in itertools.combinations(range(5), 2):
        up, down = r.copy(), r.copy()
        up[i, j] = up[j, i] = r[i, j] + h
        down[i, j] = down[j, i] = r[i, j] - h
        assert grad[i, j] == pytest.approx((partial(up) - partial(down)) / (2 * h), abs=1e-6)


def test_noise_widens_the_null():
    r = np.eye(3)
    tau = np.eye(3)
    exact = CorrelationTests(r, 10_000, 0.05, "copula", tau=tau)
    noisy = CorrelationTests(r, 10_000, 0.05, "copula", tau=tau, noise_var=1e-4)
    r[0, 1] = r[1, 0] = 0.05
    assert noisy.zscore(0, 1, ()) < exact.zscore(0, 1, ())
    assert noisy.smallest_visible() > exact.smallest_visible()


def gaussian_frame(seed, p=6, n=3000):
    rng = np.random.default_rng(seed)
    weights = np.triu(rng.uniform(0.4, 1.0, (p, p)) * (rng.random((p, p)) < 0.4), 1)
    x = np.zeros((n, p))
    for j in range(p):
        x[:, j] = x @ weights[:, j] + rng.standard_normal(n)
        x[:, j] /= x[:, j].std()
    return pd.DataFrame(x, columns=[f"v{j}" for j in range(p)])


@pytest.mark.parametrize("seed", range(4))
def test_exact_fisherz_skeleton_matches_causallearn(seed):
    """The exact path with test="fisherz": the same skeleton and separations as
    causal-learn's pc(..., indep_test="fisherz", stable=True) on the raw values."""
    from causallearn.search.ConstraintBased.PC import pc
    frame = gaussian_frame(seed)
    bounds = {c: (-6.0, 6.0) for c in frame}
    ours = causal_graph_exact(frame, bounds=bounds, test="fisherz", max_condition_size=3)
    cg = pc(frame.to_numpy(), alpha=0.05, indep_test="fisherz", stable=True,
            show_progress=False, max_k=3)
    assert np.array_equal(ours.graph | ours.graph.T, cg.G.graph != 0)
    assert ours.report().passes == 1


def test_exact_copula_recovers_chain_under_monotone_transforms():
    rng = np.random.default_rng(0)
    n = 5000
    a = rng.standard_normal(n)
    b = rng.standard_normal(n)
    c = 0.7 * a + 0.7 * b + 0.5 * rng.standard_normal(n)
    d = 0.8 * c + 0.6 * rng.standard_normal(n)
    frame = pd.DataFrame({"a": np.exp(a), "b": b ** 3, "c": c, "d": np.tanh(d)})
    bounds = {"a": (0.0, 60.0), "b": (-30.0, 30.0), "c": (-5.0, 5.0), "d": (-1.0, 1.0)}
    g = causal_graph_exact(frame, bounds=bounds)
    assert g.report().test == "copula"
    edges = {(r.source, r.target, r.directed) for r in g.edges.itertuples()}
    assert edges == {("a", "c", True), ("b", "c", True), ("c", "d", True)}
    assert g.separating_sets[("a", "d")] == ("c",)
    assert set(g.separation_statistic) == set(g.separating_sets)


def test_test_chosen_from_kinds():
    dtypes = pd.DataFrame({"x": [1.0], "y": [2.0], "k": ["a"]}).dtypes
    common = dict(columns=None, alpha=0.05, max_condition_size=1, bins=5)
    bounded = check_request(dtypes, bounds={"x": (0, 1), "y": (0, 1)}, categories=None,
                            test="auto", **common)
    assert bounded.test == "copula"
    binary = check_request(dtypes, bounds={"x": (0, 1)}, categories={"k": ["a"]},
                           test="auto", **common)
    assert binary.test == "tau"  # "a" or "other": a binary column's order is only a sign
    # two listed categories and "other" are three unordered levels, whatever the data
    # hold: never ranked (tau ranked a < b < other and lost a strong edge)
    two = check_request(dtypes, bounds={"x": (0, 1)}, categories={"k": ["a", "b"]},
                        test="auto", **common)
    assert two.test == "chisq"
    with pytest.raises(InvalidParameterError, match=r"\['k'\] have more than two levels"):
        check_request(dtypes, bounds={"x": (0, 1)}, categories={"k": ["a", "b"]},
                      test="tau", **common)
    mixed = check_request(dtypes, bounds={"x": (0, 1)}, categories={"k": ["a", "b", "c"]},
                          test="auto", **common)
    assert mixed.test == "chisq"  # released tables, never a rank statistic
    categorical = check_request(dtypes, columns=["k", "x"], bounds=None,
                                categories={"k": ["a", "b"], "x": [1.0, 2.0]}, test="auto",
                                alpha=0.05, max_condition_size=1, bins=5)
    assert categorical.test == "chisq"
    with pytest.raises(InvalidParameterError):
        check_request(dtypes, bounds={"x": (0, 1)}, categories={"k": ["a"]},
                      test="copula", **common)
    assert check_request(dtypes, bounds={"x": (0, 1), "y": (0, 1)}, categories=None,
                         test="tau", **common).test == "tau"


def test_private_copula_two_passes_one_charge():
    frame = gaussian_frame(0, p=5, n=4000)
    bounds = {c: (-6.0, 6.0) for c in frame}
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0))
    g = causal_graph(frame, 1.0, bounds=bounds, ledger=ledger, dataset="d")
    # the marginal histograms' pass (with the row count), then the signs' pass (too
    # few rows for bins at released quantiles at this eps)
    assert g.report().test == "copula" and g.report().passes == 2
    assert g.report().statistic == "signs" and g.report().bins == 2
    assert float(ledger.spent("d")) == pytest.approx(1.0)
    assert len(ledger.charges("d")) == 1
    text = str(g.report())
    assert "noise scale" in text and "smallest |correlation|" in text
    assert "sums of signs at the released medians" in text
    assert g.released_tau is None and g.released_bins is None
    assert g.released_signs.shape == (5, 5) and g.correlation.shape == (5, 5)
    assert set(g.released_cuts) == set(frame.columns)
    with pytest.raises(InvalidParameterError):
        causal_graph(frame, 1.0, bounds=bounds, test="fisherz")
    # a huge budget: the exact decisions
    exact = causal_graph_exact(frame, bounds=bounds)
    private = causal_graph(frame, 1e9, delta=1e-6, bounds=bounds)
    assert np.array_equal(exact.graph, private.graph)



def test_a_conditioning_set_as_large_as_the_table_keeps_the_edge_after_the_charge():
    # 4 rows, 5 identical columns at a huge eps: every edge survives to sets of
    # size n - 3 and more, where the test has no degrees of freedom left. It must
    # keep the edge (cannot reject), never fail after the one charge.
    x = np.linspace(0.05, 0.95, 4)
    frame = pd.DataFrame({f"c{i}": x for i in range(5)})
    bounds = {c: (0, 1) for c in frame.columns}
    ledger = InMemoryLedger({"d": Budget(1e7)})
    graph = causal_graph(frame, 1e6, bounds=bounds, test="copula", ledger=ledger, dataset="d")
    assert len(ledger.history("d")) == 1
    assert len(graph.edges) == 10  # every pair: no test could separate them


def test_quantile_lookup_places_bins_at_the_quantiles_and_runs_fine_bins_together():
    from dpmic_dask.causal.copulabins import quantile_lookup

    hist = np.zeros(64)
    hist[10:14] = 100.0  # all rows in 4 fine bins
    lookup = np.frombuffer(quantile_lookup(hist, 4), dtype=np.uint8).astype(int)
    assert lookup[10:14].tolist() == [0, 1, 2, 3]  # one bin per quarter of the rows
    assert (np.diff(lookup) >= 0).all() and lookup.min() == 0 and lookup.max() == 3
    noisy = hist + np.random.default_rng(0).normal(0, 5, 64)  # test data, not privacy noise
    assert (np.diff(np.frombuffer(quantile_lookup(noisy, 4), dtype=np.uint8)) >= 0).all()
    # nothing positive: equal-width bins
    assert quantile_lookup(-np.ones(64), 4) == (np.arange(64) // 16).astype(np.uint8).tobytes()


@pytest.mark.parametrize("p", [1, 2])
def test_the_marginal_histograms_move_by_2p_in_l1_and_sqrt_2p_in_l2(p):
    """Every replace-one neighbour of 2-row datasets on a grid of values inside,
    on and beyond the bounds (and the same value): the p histograms move by at most
    2 p in L1 and sqrt(2 p) in L2, both attained."""
    from dpmic_dask.causal.copulabins import fine_margin_codings, margin_partition

    names = [f"c{j}" for j in range(p)]
    codings = fine_margin_codings([ColumnCoding(c, 5, bounds=(0.0, 1.0)) for c in names])
    worst_l1, worst_l2 = worst_replace_one(
        (-1.0, 0.0, 0.3, 0.99999, 1.0, 7.0), names,
        lambda frame: margin_partition(frame, codings).counts)
    assert worst_l1 == 2 * p and worst_l2 == pytest.approx(math.sqrt(2 * p))


def test_bins_at_quantiles_only_with_enough_rows_for_the_noise():
    frame = gaussian_frame(0, p=4, n=30_000)
    skewed = frame.assign(v0=np.exp(frame["v0"]))
    bounds = {c: (-6.0, 6.0) for c in frame}
    bounds["v0"] = (0.0, 500.0)
    g = causal_graph(skewed, 2.0, delta=1e-6, bounds=bounds)
    assert g.released_bins is not None and g.report().passes == 2
    # the skewed column's rows (nearly all below 10, 2% of its bounds: about 5 of
    # 256 equal-width bins) spread over the ~40 fine bins they occupy
    assert len(set(g.released_bins["v0"])) > 25
    assert "marginal histograms" in str(g.report())
    # pure DP: Laplace of scale 2 p / (0.1 eps); a cumulative count's deviation,
    # sqrt(2 * 2048) times it, against a tenth of the 30,000 rows
    # (eps 1.5 falls between the rule by the deviation, 5120 / eps <= 3000, and a rule
    # by the Laplace scale alone, 3620 / eps <= 3000: only the first keeps it equal-width)
    for eps, delta, quantiles in ((2.0, 0.0, True), (1.5, 0.0, False), (0.5, 0.0, False),
                                  (0.01, 1e-6, False)):
        ledger = InMemoryLedger()
        ledger.set_budget("d", Budget(eps) if not delta else Budget(eps, delta))
        g = causal_graph(skewed, eps, delta=delta, bounds=bounds, ledger=ledger, dataset="d")
        assert (g.released_bins is not None) is quantiles and g.report().passes == 2
        assert ("marginal histograms" in str(g.report())) is quantiles
        assert len(ledger.charges("d")) == 1
        if not delta:  # the whole eps charged, once
            assert float(ledger.spent("d")) == pytest.approx(eps)
        if quantiles and not delta:  # the margins' tenth and the tau matrix's rest
            parts = g.report().parts
            assert "epsilon 0.2" in parts[0][1] and "epsilon 1.8" in parts[1][1]
            assert parts[0][2] == pytest.approx(2 * 4 / 0.2)


_CALLS = []


def _growing_part(k):
    """A partition one row longer on every read (a table that changes between
    passes; test data only)."""
    _CALLS.append(k)
    rng = np.random.default_rng(k)
    return pd.DataFrame(rng.normal(size=(5000 + len(_CALLS), 3)), columns=["a", "b", "c"])


def test_rows_that_change_between_the_copula_passes_fail_after_the_charge_saying_so():
    import dask.dataframe as dd

    from dpmic_dask.errors import ReleaseIncompleteError

    ddf = dd.from_map(_growing_part, [0, 1], meta=_growing_part(9).iloc[:0])
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(10.0, 1e-6))
    with pytest.raises(ReleaseIncompleteError, match="charged"):
        causal_graph(ddf, 5.0, delta=1e-6, bounds={c: (-5.0, 5.0) for c in "abc"},
                     ledger=ledger, dataset="d")
    assert len(ledger.charges("d")) == 1


def test_near_copies_are_said():
    """A column that copies another makes PC separate their neighbours through
    either (as without noise): the true edges of the copied column go and
    nothing said why. The report names pairs whose released correlation is
    about +-1; a table without such a pair names none."""
    import warnings

    from dpmic_dask.causal import causal_graph
    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    n = 20_000
    a, b = gen.normal(size=n), gen.normal(size=n)
    c = 0.8 * a + 0.8 * b + 0.6 * gen.normal(size=n)
    frame = pd.DataFrame({"a": a, "b": b, "c": c, "d": 0.9 * c + 0.6 * gen.normal(size=n)})
    bounds = {k: (-6.0, 6.0) for k in ["a", "b", "c", "d", "dup"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eps far beyond any use
        copied = causal_graph(frame.assign(dup=-c), 1e6, bounds=bounds,
                              ledger=InMemoryLedger(uncapped=True))
        plain = causal_graph(frame, 1e6, bounds={k: bounds[k] for k in "abcd"},
                             ledger=InMemoryLedger(uncapped=True))
    assert copied.report().copies == (("c", "dup"),)
    assert "near copies (released |correlation| >= 0.99): c and dup" in str(copied.report())
    assert plain.report().copies == () and "near copies" not in str(plain.report())
    # where the noise could carry independent columns to 0.99, nothing is named
    few = pd.DataFrame(gen.normal(size=(60, 4)), columns=list("abcd"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        noisy = [causal_graph(few, 0.5, bounds={k: (-5.0, 5.0) for k in "abcd"},
                              ledger=InMemoryLedger(uncapped=True)).report().copies
                 for _ in range(10)]
    assert noisy == [()] * 10
