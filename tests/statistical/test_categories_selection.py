"""Private categories: the choice is DP (exactly, on every neighbouring pair of
small tables) and the release draws its noise at the stated scale.

The output of a choice is a set of values; its probability is a product of
independent discrete Laplace tails, so it is computed exactly, not sampled.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.privacy.partition_selection import (
    candidate_scale,
    candidate_threshold,
    check_unknown_domain,
    select_partitions,
    unknown_domain_threshold,
)
from dpmic_dask.release.private_categories import CATEGORIES_SHARE
from dpmic_dask.stats.sensitivity import safe_down
from tests.statistical.helpers import ALPHA, rerun_once
from tests.statistical.test_release_noise_paths import zero_noise

pytestmark = pytest.mark.slow


def tail(scale: float, t: int) -> float:
    """``P(Z >= t)`` for the discrete Laplace of ``scale`` (exact, any integer t)."""
    r = math.exp(-1.0 / scale)
    if t <= 0:
        return 1.0 - r ** (1 - t) / (1 + r)
    return r ** t / (1 + r)


def output_law(counts: dict, scale: float, threshold: int) -> dict:
    """Exact probability of every output set of a threshold choice over ``counts``
    (value -> count; values with count 0 are never considered)."""
    present = sorted(v for v, c in counts.items() if c > 0)
    keep = {v: tail(scale, threshold - counts[v]) for v in present}
    law = {}
    for bits in itertools.product((False, True), repeat=len(present)):
        p = 1.0
        for v, b in zip(present, bits):
            p *= keep[v] if b else 1 - keep[v]
        law[frozenset(v for v, b in zip(present, bits) if b)] = p
    return law


def neighbours(domain, n):
    """Every table of ``n`` rows on ``domain`` (as counts) and every replace-one
    neighbour of it."""
    for rows in itertools.combinations_with_replacement(domain, n):
        base = {v: rows.count(v) for v in domain}
        for old in set(rows):
            for new in domain:
                if new != old:
                    other = dict(base)
                    other[old] -= 1
                    other[new] += 1
                    yield base, other


def delta_needed(p: dict, q: dict, eps: float) -> float:
    """The smallest delta with ``P(O) <= e^eps Q(O) + delta`` for every set of
    outputs ``O`` (the worst ``O`` takes every output where ``P > e^eps Q``)."""
    return sum(max(0.0, pv - math.exp(eps) * q.get(s, 0.0)) for s, pv in p.items())


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_public_candidates_are_pure_dp(eps):
    # candidates a, b; 'x' is a value that is not a candidate (never counted)
    scale = candidate_scale(eps)
    threshold = candidate_threshold(scale, 2)
    worst = 0.0
    for n in range(1, 6):
        for base, other in neighbours(("a", "b", "x"), n):
            # candidates are considered even with no rows: every count enters
            p = _candidate_law((base["a"], base["b"]), scale, threshold)
            q = _candidate_law((other["a"], other["b"]), scale, threshold)
            for s in p:
                worst = max(worst, math.log(p[s] / q[s]))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.45 * eps  # each of the two counts a row moves costs eps / 2


def _candidate_law(counts, scale, threshold):
    keep = [tail(scale, threshold - c) for c in counts]
    law = {}
    for bits in itertools.product((False, True), repeat=len(counts)):
        law[bits] = math.prod(k if b else 1 - k for k, b in zip(keep, bits))
    return law


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-3), (0.5, 1e-2), (2.0, 1e-4)])
def test_unknown_domain_choice_is_eps_delta_dp(eps, delta):
    scale = 2.0 / eps
    threshold = unknown_domain_threshold(eps, delta)
    worst = 0.0
    for n in range(1, 6):
        for base, other in neighbours(("a", "b", "c"), n):
            p = output_law(base, scale, threshold)
            q = output_law(other, scale, threshold)
            worst = max(worst, delta_needed(p, q, eps), delta_needed(q, p, eps))
    assert worst <= delta
    # the threshold matters: three noise scales below it, one row's value costs more
    lower = threshold - math.ceil(3 * scale)
    low = {}
    for n in range(1, 4):
        for base, other in neighbours(("a", "b"), n):
            p, q = output_law(base, scale, lower), output_law(other, scale, lower)
            low[n] = max(low.get(n, 0.0), delta_needed(p, q, eps), delta_needed(q, p, eps))
    assert max(low.values()) > delta


def test_unknown_domain_needs_delta():
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        check_unknown_domain(1.0, 0.0)
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        select_partitions({"a": 5}, 1.0, 0.0)
    frame = pd.DataFrame({"g": pd.Series(["a", "b"] * 4, dtype=object), "x": np.arange(8.0)})
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        frame.dpmic.pairwise(eps=1.0, delta=0.0, bounds={"x": (0, 8)},
                             categories={"g": "private"}, ledger=ledger)
    assert not ledger.charges()


def test_unknown_domain_keeps_common_values():
    kept = select_partitions({"big": 10_000, "one": 1}, 1.0, 1e-6)
    assert kept == ["big"]


# ------------------------------------------------------ through the public release

EPS = 20.0
CANDIDATES = 40


def _column_eps() -> float:
    return safe_down(safe_down(CATEGORIES_SHARE * EPS) / 1)


def _table(threshold: int) -> pd.DataFrame:
    # candidate j holds threshold - 4 + (j % 4) rows: keep probabilities at 4 levels
    counts = [threshold - 4 + j % 4 for j in range(CANDIDATES)]
    values = np.repeat([f"c{j:02d}" for j in range(CANDIDATES)], counts)
    gen = np.random.default_rng(3)  # test data only
    return pd.DataFrame({"g": pd.Series(values, dtype=object),
                         "x": gen.uniform(0, 1, values.size)}), counts


def keep_frequencies(runs: int, sampler_zero: bool = False):
    scale = candidate_scale(_column_eps())
    threshold = candidate_threshold(scale, CANDIDATES)
    frame, counts = _table(threshold)
    candidates = [f"c{j:02d}" for j in range(CANDIDATES)]
    kept = np.zeros(4)
    trials = np.zeros(4)
    for _ in range(runs):
        if sampler_zero:
            with zero_noise():
                res = _release(frame, candidates)
        else:
            res = _release(frame, candidates)
        chosen = set(res.private_categories["g"])
        for j, name in enumerate(candidates):
            kept[j % 4] += name in chosen
            trials[j % 4] += 1
    return kept, trials, scale, threshold, counts


def _release(frame, candidates):
    return frame.dpmic.pairwise(eps=EPS, bounds={"x": (0, 1)},
                                categories={"g": {"private": candidates}}, B=90, c=1,
                                ledger=InMemoryLedger(uncapped=True))


def fits(kept, trials, scale, threshold, offsets=(-4, -3, -2, -1)) -> bool:
    """Whether the keep counts at each level fit the discrete Laplace of ``scale``."""
    pvalues = []
    for k, t, off in zip(kept, trials, offsets):
        p = tail(scale, threshold - (threshold + off))
        pvalues.append(stats.binomtest(int(k), int(t), p).pvalue)
    return min(pvalues) > ALPHA / len(pvalues)


@rerun_once
def test_the_choice_draws_its_noise_at_the_stated_scale():
    kept, trials, scale, threshold, _ = keep_frequencies(300)
    assert scale == pytest.approx(2.0 / _column_eps(), rel=1e-9)
    assert fits(kept, trials, scale, threshold)
    assert not fits(kept, trials, 0.7 * scale, threshold)
    assert not fits(kept, trials, 1.3 * scale, threshold)


@rerun_once
def test_the_check_fails_without_noise():
    kept, trials, scale, threshold, _ = keep_frequencies(20, sampler_zero=True)
    assert not fits(kept, trials, scale, threshold)


def test_candidates_of_which_none_is_kept_are_said_in_a_warning_and_the_report():
    """No candidate occurs: none is kept (an empty candidate passes with probability
    at most FALSE_KEEP), the column is one 'other' bin, and the release says so
    after its one charge instead of releasing a constant column's noise silently."""
    from dpmic_dask.errors import BoundsWarning

    gen = np.random.default_rng(21)  # test data only
    x = gen.uniform(0, 100, 5000)
    frame = pd.DataFrame({"x": x, "s": np.where(x < 50, "north", "south")})
    # an empty candidate is kept with probability up to FALSE_KEEP (5%): whatever
    # is kept, the warning and the report line come exactly when nothing is, and
    # five releases all keeping something has probability below 1e-6
    for _ in range(5):
        ledger = InMemoryLedger(uncapped=True)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            res = frame.dpmic.pairwise(1.0, bounds={"x": (0, 100)}, columns=["x", "s"],
                                       categories={"s": {"private": ["east", "west"]}},
                                       ledger=ledger)
        said = [w for w in seen if issubclass(w.category, BoundsWarning)
                and "no category of column(s) ['s']" in str(w.message)]
        empty = res.private_categories["s"] == ()
        assert len(ledger.charges()) == 1
        assert bool(said) == empty
        assert ("Categories chosen privately, none kept for ['s']" in res.report()) == empty
        if empty:
            return
    pytest.fail("five releases each kept an empty candidate")


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_private_categories_in_front_of_a_selection_charge_once(delta):
    gen = np.random.default_rng(8)  # test data only
    n = 4000
    region = gen.choice(["north", "south", "east"], n)
    amount = np.array([{"north": 10, "south": 20}.get(r, 30) for r in region])
    frame = pd.DataFrame({"region": pd.Series(region, dtype=object),
                          "amount": amount + gen.normal(0, 2, n),
                          "noise": gen.uniform(0, 1, n), "z": gen.uniform(0, 1, n)})
    ledger = InMemoryLedger(uncapped=True)
    res = frame.dpmic.top_pairs(1, eps=2.0, delta=delta,
                                bounds={"amount": (0, 40), "noise": (0, 1), "z": (0, 1)},
                                categories={"region": {"private": ["north", "south", "east",
                                                                   "mars"]}},
                                ledger=ledger)
    assert res.pairs == (("region", "amount"),)
    assert set(res.private_categories["region"]) >= {"north", "south", "east"}
    (charge,) = ledger.charges()
    assert charge.cost.epsilon == 2.0 and charge.mechanism.startswith("categories-lap+")
    assert "top 1" in res.privacy.parts
    # with private bounds in the same release: still one charge, the chosen lists
    both = frame.dpmic.top_pairs(1, eps=2.0, delta=delta,
                                 bounds={"amount": "private", "noise": (0, 1), "z": (0, 1)},
                                 categories={"region": {"private": ["north", "south", "east",
                                                                    "mars"]}},
                                 ledger=ledger)
    assert len(ledger.charges()) == 2 and ledger.charges()[1].cost.epsilon == 2.0
    assert both.pairs == (("region", "amount"),) and "amount" in both.private_bounds.bounds
    assert set(both.private_categories["region"]) >= {"north", "south", "east"}
    with pytest.raises(InvalidParameterError, match="at least one category"):
        frame.dpmic.top_pairs(1, eps=2.0, bounds={"amount": "private", "noise": (0, 1)},
                              categories={"region": {"private": []}}, ledger=ledger)
    assert len(ledger.charges()) == 2
