"""Every release path draws its noise, at the scale its report states.

Each path is called through its public function (``pairwise``, ``top_pairs``,
``pairs_above``, ``private_mic``, a batch job run), on a table of 60 related
columns (1,770 pairs, so one release gives over a thousand values), and its
released values are compared with the values the same call releases when every
sampler returns zero (the exact values, on the output lattice). The residuals
must follow the stated distribution at the stated scale: the scale estimate
within 12% (it misses at 0.7x and 1.3x of the true scale; checked on the same
samples), and a Kolmogorov-Smirnov test against the stated law. Count noise
(``micr-geom``) is checked where it is drawn, on the counts the public release
noised, and the released values must be the statistic of those noisy counts.

The test of the tests: with every sampler patched to return zero noise, each
path's check fails.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmic_dask as dm
from dpmic_dask.batch.cli import Exit
from dpmic_dask.privacy.mechanisms import _RELEASES, mechanism_names
from dpmic_dask.privacy.mechanisms.geometric import GeometricCountsMechanism
from dpmic_dask.privacy.noise import _ACTIVE, GAUSSIAN, LAPLACE, DiscreteGaussian
from dpmic_dask.stats.statistics import get_statistic, public_statistics
from tests.cli import invoke
from tests.jobfiles import write_job
from tests.statistical.helpers import ALPHA, chi_square_pvalue, discrete_laplace_pmf, rerun_once

pytestmark = pytest.mark.slow

N, COLUMNS, B, C = 1000, 60, 40, 5
EPS = 5000.0  # over 1,770 pairs: a noise scale near 0.01, far from the [0, 1] clamp
#: The sparse vector under zCDP stops at max_pairs = 1,770 positives, so its noise
#: is large: a larger budget lets well over 1,000 of the 1,770 pairs pass.
SCAN_EPS = 10 * EPS
DELTA = 1e-6
BAND = 0.12  # scale estimate within 12% (relative s.e. ~2.5-3.2% at >= 1,000 samples)
MIN_SAMPLES = 1000


class ZeroSampler:
    """Every noise draw is 0 (the exact values, for reference and for the test of
    the tests); keys stay random."""

    secure = False

    def discrete_laplace(self, scale, size):
        return np.zeros(size, dtype=np.int64)

    def discrete_gaussian(self, sigma, size):
        return np.zeros(size, dtype=np.int64)

    def random_keys(self, size):
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64).copy()


@contextlib.contextmanager
def zero_noise():
    token = _ACTIVE.set(ZeroSampler())
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@pytest.fixture(scope="module")
def table():
    gen = np.random.default_rng(11)  # test data only
    u = gen.uniform(0, 1, N)
    return pd.DataFrame({f"x{k:02d}": u + gen.normal(0, 0.04 + 0.004 * k, N)
                         for k in range(COLUMNS)})


def public_bounds(frame):
    return {name: (-1.0, 2.0) for name in frame.columns}


# ------------------------------------------------------------------ the check


def check_noise(residuals, scale, law):
    """Residuals of released minus exact values follow ``law`` ("laplace" or
    "gauss") at ``scale`` (Laplace b, Gaussian sigma)."""
    r = np.asarray(residuals, dtype=np.float64)
    assert r.size >= MIN_SAMPLES, f"only {r.size} residuals"
    if law == "laplace":
        estimate = np.mean(np.abs(r))  # maximum-likelihood b
        dist = stats.laplace(scale=scale)
    else:
        estimate = np.sqrt(np.mean(r ** 2))
        dist = stats.norm(scale=scale)
    assert abs(estimate / scale - 1) < BAND, f"scale {estimate:.4g} against {scale:.4g}"
    assert stats.kstest(r, dist.cdf).pvalue > ALPHA


def assert_noise_at_stated_scale(residuals, scale, law):
    """The check passes at the stated scale and fails at 0.7x and 1.3x of it."""
    check_noise(residuals, scale, law)
    for wrong in (0.7 * scale, 1.3 * scale):
        with pytest.raises(AssertionError):
            check_noise(residuals, wrong, law)


def law_of(mechanism: str) -> str:
    """The law a released statistic's noise follows, from its mechanism's type."""
    if mechanism in _RELEASES:
        law = _RELEASES[mechanism][1].law
    else:  # a companion statistic's part: named after its measure's noise
        law = GAUSSIAN if mechanism.endswith("-gauss") else LAPLACE
    return "gauss" if isinstance(law, DiscreteGaussian) else "laplace"


def residuals(values, exact, scale, low=0.0, high=1.0):
    """``values - exact`` of the values whose exact value lies 8 scales inside the
    statistic's range (the clamp then almost never acts)."""
    values, exact = np.asarray(values), np.asarray(exact)
    inside = (exact > low + 8 * scale) & (exact < high - 8 * scale)
    return (values - exact)[inside]


# ------------------------------------------------------------------ the paths
# Each returns [(residuals, stated scale, law), ...] for every released statistic.


def exact_pairwise(frame, bounds, **kw):
    """Exact values of every pair (every sampler returning 0), by pair."""
    with zero_noise():
        ref = frame.dpmic.pairwise(EPS, bounds=bounds, B=B, c=C, **kw)
    tau = dict(zip(ref.pairs, ref.tau_a)) if "statistics" in kw else {}
    return dict(zip(ref.pairs, ref.values)), tau


def value_parts(result, mic, tau=None):
    p = result.privacy
    out = [(residuals(result.values, [mic[q] for q in result.pairs], p.noise_scale),
            p.noise_scale, law_of(p.mechanism))]
    if tau is not None:
        part = result.companions[0]
        out.append((residuals(part.values, [tau[q] for q in result.pairs], part.noise_scale,
                              -1.0, 1.0), part.noise_scale, law_of(part.mechanism)))
    return out


def pairwise_path(mechanism, delta=0.0, statistics=("mic",)):
    def run(frame):
        kw = {"statistics": statistics} if len(statistics) > 1 else {}
        bounds = public_bounds(frame)
        mic, tau = exact_pairwise(frame, bounds, delta=delta, mechanism=mechanism, **kw)
        result = frame.dpmic.pairwise(EPS, bounds=bounds, delta=delta, mechanism=mechanism,
                                      B=B, c=C, **kw)
        return value_parts(result, mic, tau if kw else None)
    return run


def categorical_tau_path(delta=0.0):
    """MIC and tau beside a categorical column: tau's share split over the pairs
    whose tau is defined (every pair of numbers), MIC's over every pair."""
    def run(frame):
        gen = np.random.default_rng(17)  # test data only
        frame = frame.assign(cat=gen.choice(["p", "q", "r"], len(frame)))
        kw = {"statistics": ("mic", "tau_a"), "categories": {"cat": ["p", "q", "r"]}}
        bounds = public_bounds(frame.drop(columns="cat"))
        mechanism = "micr-gauss" if delta else "micr-lap"
        mic, tau = exact_pairwise(frame, bounds, delta=delta, mechanism=mechanism, **kw)
        result = frame.dpmic.pairwise(EPS, bounds=bounds, delta=delta, mechanism=mechanism,
                                      B=B, c=C, **kw)
        return value_parts(result, mic, tau)
    return run


def private_bounds_path(delta=0.0, select=None):
    def run(frame):
        kw = {} if select is None else dict(select)
        call = frame.dpmic.pairwise if select is None else (
            frame.dpmic.top_pairs if "k" in kw else frame.dpmic.pairs_above)
        args = () if select is None else ((kw.pop("k"),) if "k" in kw
                                          else (kw.pop("threshold"),))
        share = kw.pop("bounds_share", 0.5)
        eps = SCAN_EPS if delta and "threshold" in (select or {}) else EPS
        result = call(*args, eps=eps, bounds="private", columns=list(frame.columns),
                      delta=delta, B=B, c=C, bounds_share=share, **kw)
        released = result.private_bounds.bounds  # the exact values at these bounds
        mic, _ = exact_pairwise(frame, released, delta=delta,
                                mechanism="micr-gauss" if delta else "micr-lap")
        return value_parts(result, mic)
    return run


def selection_path(rule, delta=0.0, statistics=("mic",)):
    def run(frame):
        bounds = public_bounds(frame)
        pairs = COLUMNS * (COLUMNS - 1) // 2
        kw = {"statistics": statistics} if len(statistics) > 1 else {}
        mic, tau = exact_pairwise(frame, bounds, delta=delta,
                                  mechanism="micr-gauss" if delta else "micr-lap", **kw)
        if rule == "top-k":
            result = frame.dpmic.top_pairs(pairs - 1, EPS, bounds=bounds, delta=delta, B=B,
                                           c=C, **kw)
        else:
            # under zCDP more budget, most of it to the scan: most pairs pass
            result = frame.dpmic.pairs_above(0.0, SCAN_EPS if delta else EPS, bounds=bounds,
                                             max_pairs=pairs, delta=delta, B=B, c=C,
                                             select_share=0.9 if delta else 0.5, **kw)
        assert len(result.pairs) > MIN_SAMPLES
        return value_parts(result, mic, tau if kw else None)
    return run


def private_mic_path(mechanism, delta=0.0):
    def run(frame):
        x, y = frame["x00"].to_numpy(), frame["x01"].to_numpy()
        kw = dict(eps=50.0, x_bounds=(-1, 2), y_bounds=(-1, 2), mechanism=mechanism,
                  delta=delta, B=B, c=C)
        if mechanism == "mice-lap":  # ranks in memory: fewer rows, a larger budget
            x, y, kw = x[:300], y[:300], {**kw, "B": None, "c": None, "eps": 500.0}
        with zero_noise():
            exact = dm.private_mic(x, y, **kw).value
        releases = [dm.private_mic(x, y, **kw) for _ in range(1200)]
        scale = releases[0].privacy.noise_scale
        values = [r.value for r in releases]
        return [(residuals(values, [exact] * len(values), scale), scale,
                 law_of(releases[0].privacy.mechanism))]
    return run


def job_run_path(tmp_path_factory):
    def run(frame):
        folder = tmp_path_factory.mktemp("job")
        frame.to_parquet(folder / "data.parquet")
        job = write_job(folder / "job.toml", name="noise", dataset="noise",
                        input={"paths": [str(folder / "data.parquet")]},
                        columns={c: [-1, 2] for c in frame.columns}, eps=EPS,
                        privacy={"B": B, "c": C})
        init = invoke("budget", "init", "--ledger", f"sqlite:///{folder / 'ledger.db'}",
                      "--dataset", "noise", "--eps", 10 * EPS)
        assert init.exit_code == Exit.OK, init.output
        ran = invoke("run", job, "--run-id", "one")
        assert ran.exit_code == Exit.OK, ran.output
        (written,) = list((folder / "out").glob("*.parquet"))
        rows = pd.read_parquet(written)
        mic, _ = exact_pairwise(frame, public_bounds(frame))
        exact = [mic[(x, y)] for x, y in zip(rows["x"], rows["y"])]
        scale = float(rows["ci95"].iloc[0]) / np.log(20.0)
        return [(residuals(rows["mic"], exact, scale), scale, "laplace")]
    return run


def value_paths():
    """Every path the registries can build: each registered mechanism (its own
    measure: Gaussian ones with ``delta > 0``), each further statistic beside MIC,
    each selection rule under each measure, public and private bounds. A new
    mechanism, statistic or rule is covered without editing this test."""
    paths = {}
    # each companion by its public label (an alias such as "tau" warns)
    companions = sorted({get_statistic(name).label for name in public_statistics().values()
                         if name != "micr"})
    for name in mechanism_names()[1:]:
        statistic, cls = _RELEASES[name]
        delta = DELTA if cls.needs_delta else 0.0
        if cls.acts_on == "counts":
            continue  # count noise: checked where it is drawn (below)
        paths[f"private_mic {name}"] = private_mic_path(name, delta)
        if not get_statistic(statistic).mergeable:
            continue  # ranks: in memory only
        paths[f"pairwise {name}"] = pairwise_path(name, delta)
        for other in companions:
            paths[f"pairwise {name} mic+{other}"] = pairwise_path(name, delta, ("mic", other))
    for delta, measure in ((0.0, "pure"), (DELTA, "zCDP")):
        paths[f"pairwise private bounds {measure}"] = private_bounds_path(delta)
        paths[f"pairwise mic+tau_a beside a categorical column {measure}"] = \
            categorical_tau_path(delta)
        for rule in ("top-k", "above"):
            paths[f"{rule} {measure}"] = selection_path(rule, delta)
            for other in companions:
                paths[f"{rule} {measure} mic+{other}"] = selection_path(rule, delta,
                                                                        ("mic", other))
        paths[f"top-k private bounds {measure}"] = private_bounds_path(delta, {"k": 1500})
        paths[f"above private bounds {measure}"] = private_bounds_path(
            delta, {"threshold": 0.0, "max_pairs": 1770,
                    **({"select_share": 0.9, "bounds_share": 0.2} if delta else {})})
    return paths


VALUE_PATHS = value_paths()


def test_every_registered_mechanism_and_rule_has_a_path():
    from dpmic_dask.privacy.selection import rule_names

    covered = " ".join(VALUE_PATHS) + " micr-geom"  # count noise: its own tests below
    assert all(name in covered for name in mechanism_names()[1:])
    assert all(f"{rule} " in covered for rule in rule_names())  # a new rule needs a path


@pytest.mark.parametrize("path", list(VALUE_PATHS))
@rerun_once
def test_released_values_carry_the_stated_noise(path, table):
    parts = VALUE_PATHS[path](table)
    for r, scale, law in parts:
        assert_noise_at_stated_scale(r, scale, law)


@pytest.mark.parametrize("path", list(VALUE_PATHS))
@rerun_once
def test_the_check_fails_when_no_noise_is_drawn(path, table):
    with zero_noise():
        parts = VALUE_PATHS[path](table)
    with pytest.raises(AssertionError):
        for r, scale, law in parts:
            check_noise(r, scale, law)


@rerun_once
def test_a_job_run_releases_values_with_the_stated_noise(table, tmp_path_factory):
    (part,) = job_run_path(tmp_path_factory)(table)
    assert_noise_at_stated_scale(*part)
    with zero_noise():
        (silent,) = job_run_path(tmp_path_factory)(table)
    with pytest.raises(AssertionError):
        check_noise(*silent)


# ------------------------------------------------------------------ count noise


@pytest.fixture
def noised_counts(monkeypatch):
    """Every (exact, noisy) count vector a public micr-geom release noises."""
    seen = []
    original = GeometricCountsMechanism.randomise

    def spy(self, data, plan):
        noisy = original(self, data, plan)
        seen.append((np.asarray(data).copy(), np.asarray(noisy).copy(), plan))
        return noisy

    monkeypatch.setattr(GeometricCountsMechanism, "randomise", spy)
    return seen


# counts well above the per-cell noise (a few counts): 20 copies of the table's rows
COPIES = 20


def geom_pairwise(frame):
    small = pd.concat([frame[["x00", "x01", "x02", "x03"]]] * COPIES, ignore_index=True)
    result = small.dpmic.pairwise(200.0, bounds=public_bounds(small), mechanism="micr-geom",
                                  B=B, c=C)
    return result, result.values


def geom_private_mic(frame):
    x, y = (np.tile(frame[name].to_numpy(), COPIES) for name in ("x00", "x01"))
    releases = [dm.private_mic(x, y, eps=40.0, x_bounds=(-1, 2), y_bounds=(-1, 2),
                               mechanism="micr-geom", B=B, c=C) for _ in range(3)]
    return releases[0], tuple(r.value for r in releases)


def check_count_noise(seen, result, released):
    """The counts the release noised carry two-sided geometric noise of the stated
    per-cell scale (cells away from the [0, n] clamp), and the released values
    are MICr of exactly those noisy counts."""
    # a pair's counts per row (pairwise noises every pair's counts in one call)
    rows = [(e, n, plan) for exact, noisy, plan in seen
            for e, n in zip(np.atleast_2d(exact), np.atleast_2d(noisy))]
    assert len(rows) == len(released)
    scale = result.privacy.noise_scale
    layout = get_statistic("micr").layout(B, C)
    z = []
    for (exact, noisy, plan), value in zip(rows, released):
        assert plan.noise_scale == scale
        inside = (exact > 8 * scale) & (exact < plan.n - 8 * scale)
        z.append((noisy - exact)[inside])
        assert get_statistic("micr").value(noisy, layout) == pytest.approx(value, abs=1e-12)
    z = np.concatenate(z)
    assert z.size >= MIN_SAMPLES
    return z, scale


@pytest.mark.parametrize("path", [geom_pairwise, geom_private_mic])
@rerun_once
def test_count_noise_is_drawn_at_the_stated_scale(path, table, noised_counts):
    result, released = path(table)
    z, scale = check_count_noise(noised_counts, result, released)
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(scale, s)) > ALPHA
    for wrong in (0.7 * scale, 1.3 * scale):
        assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(wrong, s)) < ALPHA


@pytest.mark.parametrize("path", [geom_pairwise, geom_private_mic])
@rerun_once
def test_the_count_check_fails_when_no_noise_is_drawn(path, table, noised_counts):
    with zero_noise():
        result, released = path(table)
    z, scale = check_count_noise(noised_counts, result, released)
    assert chi_square_pvalue(z, lambda s: discrete_laplace_pmf(scale, s)) < ALPHA


# ------------------------------------------------------------------ selection noise


def selection_law(scores, scale, zcdp):
    """P(each pair is chosen) by noisy top-1 over exact ``scores``: the maximum of
    ``s_i + Exp(scale)`` (pure DP) or of ``s_i + Gumbel(scale)`` (zCDP: the
    exponential mechanism, a softmax of ``s / scale``)."""
    from scipy import integrate

    s = np.asarray(scores, dtype=np.float64)
    if zcdp:
        z = np.exp((s - s.max()) / scale)
        return z / z.sum()

    def density(x, i):
        others = [stats.expon(loc=s[j], scale=scale).cdf(x) for j in range(s.size) if j != i]
        return stats.expon(loc=s[i], scale=scale).pdf(x) * np.prod(others)

    return np.array([integrate.quad(density, s[i], s[i] + 60 * scale, args=(i,),
                                    limit=200)[0] for i in range(s.size)])


@pytest.mark.parametrize("delta, eps", [(0.0, 1.0), (DELTA, 3.0)])
@rerun_once
def test_top_pairs_chooses_with_the_selection_noise_of_its_budget(delta, eps):
    """top_pairs(1) through the public function, 3,000 times on a table whose
    pairs' exact MICr differ by about the noise scale: the frequencies of the
    chosen pairs follow the law of noisy top-1 at the scale its selection budget
    sets, and not at 0.7x or 1.3x of it (an exact top-k would always choose one)."""
    from dpmic_dask.privacy.costs import measure_for
    from dpmic_dask.privacy.selection import _widened, top_k_scale
    from dpmic_dask.stats.sensitivity import micr_sensitivity

    gen = np.random.default_rng(5)  # test data only
    n, grid, clumps, runs = 300, 20, 2, 3000
    a = gen.uniform(0, 1, n)
    frame = pd.DataFrame({"a": a, "b": a + gen.normal(0, 0.15, n),
                          "c": a + gen.normal(0, 0.2, n)})
    bounds = {name: (-0.5, 1.5) for name in frame.columns}
    exact = frame.dpmic.pairwise_nonprivate(bounds=bounds, B=grid, c=clumps)
    pairs = list(zip(exact["x"], exact["y"]))
    measure = measure_for(delta)
    (choosing,) = measure.split(measure.total(eps, delta), (0.5,))
    scale = top_k_scale(1, _widened(micr_sensitivity(n)), choosing.amount(), measure)
    chosen = np.zeros(len(pairs))
    for _ in range(runs):
        result = frame.dpmic.top_pairs(1, eps, delta=delta, bounds=bounds, B=grid, c=clumps,
                                       screen_B=None)
        chosen[pairs.index(result.pairs[0])] += 1
    law = lambda factor: selection_law(exact["micr"], factor * scale, bool(delta))  # noqa: E731
    assert stats.chisquare(chosen, law(1.0) * runs).pvalue > ALPHA
    for wrong in (0.7, 1.3):
        assert stats.chisquare(chosen, law(wrong) * runs).pvalue < ALPHA
