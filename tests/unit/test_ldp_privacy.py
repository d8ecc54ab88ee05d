"""Local model, client side: the randomizer is eps-LDP for a whole row.

Exhaustive checks enumerate every report of small domains and compute its exact
probability from the protocol's definition (rational arithmetic on the dyadic
probabilities the client uses); goodness-of-fit checks tie the implementation's
draws to those probabilities.
"""

from __future__ import annotations

import itertools
import math
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpmic_dask.errors import (
    InvalidDataError,
    InvalidParameterError,
    MissingValuesError,
    NoiseWarning,
    PrivacyLeakWarning,
)
from dpmic_dask.ldp import (
    make_design,
    pairwise,
    randomize,
    randomize_not_private_seeded,
    read_reports,
    write_reports,
)
from dpmic_dask.ldp.bits import WORD, ByteSource
from dpmic_dask.ldp.client import randomize_with
from dpmic_dask.ldp.protocols import Protocol, make_protocol, value_digits
from dpmic_dask.testing import ENV_FLAG
from tests.statistical.helpers import rerun_once

EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)


def exact_probability(proto: Protocol, value: int, report) -> Fraction:
    """P(report | value) from the protocol's definition, as an exact rational."""
    W = Fraction(WORD)
    if proto.name == "grr":
        keep = proto.keep / W
        return keep if report == value else (1 - keep) / (proto.k - 1)
    if proto.name == "olh":
        seed, y = report
        a = value_digits(np.array([seed]), proto.g, proto.w)[0]
        d = value_digits(np.array([value]), proto.g, proto.w)[0]
        h = int((a * d).sum() % proto.g)
        keep = proto.keep / W
        inner = keep if y == h else (1 - keep) / (proto.g - 1)
        return inner / proto.g ** proto.w
    other = proto.keep / W
    prob = Fraction(1)
    for j, bit in enumerate(report):
        pj = Fraction(1, 2) if j == value else other
        prob *= pj if bit else 1 - pj
    return prob


def all_reports(proto: Protocol):
    if proto.name == "grr":
        return range(proto.k)
    if proto.name == "olh":
        return itertools.product(range(proto.g ** proto.w), range(proto.g))
    return itertools.product((0, 1), repeat=proto.k)


def exp_upper(eps: float) -> Fraction:
    """A rational at least e^eps (exp rounded up by more than its float error)."""
    return Fraction(math.exp(eps)) * (1 + Fraction(1, 10 ** 13))


def check_exhaustive(proto: Protocol, eps: float) -> float:
    table = np.array([[exact_probability(proto, v, r) for r in all_reports(proto)]
                      for v in range(proto.k)], dtype=object)
    for v in range(proto.k):
        assert sum(table[v]) == 1
    worst = Fraction(0)
    for v, w in itertools.permutations(range(proto.k), 2):
        for a, b in zip(table[v], table[w]):
            assert b > 0
            worst = max(worst, a / b)
    assert worst <= exp_upper(eps)
    return float(worst)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("k", [2, 3, 5, 9])
def test_grr_exhaustive(eps, k):
    worst = check_exhaustive(make_protocol("grr", eps, k), eps)
    assert worst > math.exp(eps) * (1 - 1e-6)  # the budget is used, not wasted


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("k", [4, 7, 10])
def test_olh_exhaustive(eps, k):
    proto = make_protocol("olh", eps, k)
    if proto.g ** (proto.w + 1) > 4000:
        proto = Protocol("olh", k, eps, make_protocol("grr", eps, 3).keep, 3,
                         int(math.ceil(math.log(k, 3) - 1e-12)))
    check_exhaustive(proto, eps)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("k", [2, 3, 6])
def test_oue_exhaustive(eps, k):
    check_exhaustive(make_protocol("oue", eps, k), eps)


def test_olh_hash_collides_with_probability_one_over_g():
    """The pure-protocol property behind the estimator: for v != v', exactly a
    fraction 1/g of the hash keys map them to the same bucket."""
    for g, w, k in [(3, 2, 9), (5, 2, 20), (7, 1, 7), (2, 4, 16)]:
        keys = value_digits(np.arange(g ** w), g, w)
        d = value_digits(np.arange(k), g, w)
        h = (keys @ d.T) % g  # [key, value]
        for v, u in itertools.combinations(range(k), 2):
            assert Fraction(int((h[:, v] == h[:, u]).sum()), g ** w) == Fraction(1, g)


@pytest.mark.parametrize("name", ["grr", "olh", "oue"])
def test_protocol_check_refuses_a_ratio_above_eps(name):
    proto = make_protocol(name, 1.0, 9)
    proto.check()
    bigger = proto.keep + (1 << 24) if name != "oue" else proto.keep - (1 << 24)
    bad = Protocol(proto.name, proto.k, proto.eps, bigger, proto.g, proto.w)
    with pytest.raises(InvalidParameterError):
        bad.check()


def test_auto_picks_grr_on_small_domains():
    for eps in (0.5, 1.0, 2.0, 4.0):
        small = int(3 * math.exp(eps) + 2) - 4
        large = int(3 * math.exp(eps) + 2) + 8
        if small >= 2:
            assert make_protocol("auto", eps, small).name == "grr"
        assert make_protocol("auto", eps, large).name == "olh"


# ------------------------------------------------------ the implementation's draws


@pytest.mark.parametrize("name,k", [("grr", 5), ("olh", 5), ("oue", 3)])
@rerun_once  # chi-square checks at ALPHA on fresh draws
def test_encode_draws_follow_the_exact_probabilities(name, k):
    proto = make_protocol(name, 1.0, k)
    src = ByteSource()  # the secure source
    n = 60_000
    reports = list(all_reports(proto))
    index = {r: i for i, r in enumerate(reports)}
    for value in (0, k - 1):
        out = proto.encode(np.full(n, value, dtype=np.int64), src)
        if name == "grr":
            keys = list(out["y"])
        elif name == "olh":
            keys = list(zip(out["seed"].tolist(), out["y"].tolist()))
        else:
            from dpmic_dask.ldp.protocols import unpack_bits

            keys = [tuple(int(b) for b in row) for row in unpack_bits(out, k)]
        observed = np.bincount([index[r] for r in keys], minlength=len(reports))
        expected = np.array([float(exact_probability(proto, value, r)) for r in reports]) * n
        assert stats.chisquare(observed, expected).pvalue > 1e-4


@rerun_once  # chi-square checks at ALPHA on fresh draws
def test_bits_bernoulli_and_uniform_are_exact_in_law():
    src = ByteSource()
    n = 400_000
    hits = src.bernoulli(WORD // 3, n).sum()
    assert abs(hits - n / 3) < 5 * math.sqrt(n * 2 / 9)
    for m in (2, 3, 7, 1000):
        draws = src.below(m, n)
        assert draws.min() >= 0 and draws.max() < m
        if m <= 7:
            assert stats.chisquare(np.bincount(draws, minlength=m)).pvalue > 1e-4
    mixed = src.below(np.array([2, 5, 9] * 1000), 3000)
    assert (mixed < np.array([2, 5, 9] * 1000)).all()


def test_seeded_stream_rejection_is_uniform_for_awkward_bounds():
    src = ByteSource(seed=b"x" * 32)
    m = 3 * 2 ** 30  # a quarter of the words are rejected
    draws = src.below(m, 200_000)
    assert draws.max() < m
    assert abs((draws < m // 2).mean() - 0.5) < 0.01


# ------------------------------------------------------ whole rows


@pytest.mark.parametrize("protocol", ["grr", "olh", "oue"])
def test_whole_row_ratio_is_bounded_exhaustively(protocol):
    """Rows of three columns on a 2-bin grid (every combination of bins): the report
    is (pair j drawn independently of the row, protocol report of the row's joint cell
    of pair j), so P(j, z | row) = P(j) P(z | cell_j(row)). Every pair of rows and every
    report stays within e^eps."""
    eps = 1.0
    design = make_design(eps, bounds={"a": (0, 1), "b": (0, 1), "c": (0, 1)}, rows=100, bins=2,
                         protocol=protocol)
    proto = Protocol.from_dict(design["protocol"])
    m = design["bins"]
    where = {name: i for i, name in enumerate(design["columns"])}
    rows = list(itertools.product(range(m), repeat=3))
    P = len(design["pairs"])

    def prob(row, j, z):
        a, b = design["pairs"][j]
        cell = row[where[a]] * m + row[where[b]]
        return Fraction(1, P) * exact_probability(proto, cell, z)

    bound = exp_upper(eps)
    for r1, r2 in itertools.permutations(rows, 2):
        for j in range(P):
            for z in all_reports(proto):
                assert prob(r1, j, z) <= bound * prob(r2, j, z)


def test_randomize_bins_like_the_package_and_clamps():
    """The cell a row reports is its equal-width bin on the public bounds, values
    outside clamped: at eps = 30 GRR keeps the cell with overwhelming probability."""
    df = pd.DataFrame({"a": [-5.0, 0.0, 0.49, 0.5, 0.99, 7.0], "b": [0.0] * 6})
    out = randomize(df, 30.0, bounds={"a": (0, 1), "b": (0, 1)}, bins=2, protocol="grr")
    assert list(out["y"]) == [0, 0, 0, 2, 2, 2]
    assert out.attrs["dpmic_ldp"]["rows"] == 6
    assert out.attrs["dpmic_ldp"]["seeded"] is False


def test_design_is_public_and_json():
    import json

    design = make_design(2.0, bounds={"a": (0, 1), "b": (-1, 1), "c": (0, 5)}, rows=1000)
    assert json.loads(json.dumps(design)) == design
    assert len(design["pairs"]) == 3 and design["model"] == "local"


def test_missing_values_refused_without_quoting_data():
    df = pd.DataFrame({"a": [0.123456, np.nan], "b": [0.987654, 0.5]})
    with pytest.raises(MissingValuesError) as err:
        randomize(df, 1.0, bounds={"a": (0, 1), "b": (0, 1)})
    assert "0.123" not in str(err.value) and "0.987" not in str(err.value)
    out = randomize(df, 1.0, bounds={"a": (0, 1), "b": (0, 1)}, fill={"a": 0.5})
    assert len(out) == 2
    # a fill outside the bounds is refused (as in the central model), needed or not
    for frame in (df, df.fillna(0.5)):
        with pytest.raises(InvalidParameterError, match=r"fill\['a'\] must lie inside"):
            randomize(frame, 1.0, bounds={"a": (0, 1), "b": (0, 1)}, fill={"a": 2.0})


@pytest.mark.parametrize("times", [
    pd.date_range("2024-01-01", periods=3, freq="D"),
    pd.date_range("2024-01-01", periods=3, freq="D", tz="UTC"),
    pd.to_timedelta([1, 2, 3], unit="h"),
])
def test_time_columns_are_refused_with_a_hint_not_read_as_nanoseconds(times):
    # read as float64 they would be nanoseconds: every value clamped to bounds (0, 1)
    df = pd.DataFrame({"t": times, "b": [0.1, 0.2, 0.3]})
    with pytest.raises(InvalidDataError, match="local model takes numbers only") as err:
        randomize(df, 1.0, bounds={"t": (0, 1), "b": (0, 1)})
    assert "2024" not in str(err.value) and "days since a public date" in str(err.value)


@pytest.mark.parametrize("column", [
    pd.Series([0.2 + 5j, 0.4 + 0j, 0.9 - 3j]),  # complex128: a cast keeps the real part
    pd.Series([0.2 + 5j, 0.4, 0.9], dtype=object),
    pd.Series([10**400, 1, 2], dtype=object),  # no float64 holds it
    pd.Series([Decimal("1e400"), Decimal("0.5"), Decimal("0.2")], dtype=object),  # nor this
])
def test_values_a_float64_cannot_hold_are_refused_not_cast(column):
    df = pd.DataFrame({"x": column, "b": [0.1, 0.2, 0.3]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing discarded with a mere warning
        with pytest.raises(InvalidDataError, match="column 'x' holds") as err:
            randomize(df, 1.0, bounds={"x": (0, 1), "b": (0, 1)}, bins=2)
    assert "5j" not in str(err.value) and "0.2" not in str(err.value)


def test_parameters_are_checked():
    df = pd.DataFrame({"a": [0.1], "b": [0.2]})
    for kwargs in [dict(eps=0), dict(eps=-1), dict(eps=float("nan")), dict(bins=1),
                   dict(bins=64), dict(protocol="rappor"), dict(pairs=[("a", "a")])]:
        args = dict(eps=1.0, bounds={"a": (0, 1), "b": (0, 1)})
        args.update(kwargs)
        eps = args.pop("eps")
        with pytest.raises(InvalidParameterError):
            randomize(df, eps, **args)


def test_seeded_mode_is_guarded_reproducible_and_marked(monkeypatch, tmp_path):
    df = pd.DataFrame({"a": np.linspace(0, 1, 50), "b": np.linspace(1, 0, 50)})
    kwargs = dict(bounds={"a": (0, 1), "b": (0, 1)}, protocol="olh")
    monkeypatch.delenv(ENV_FLAG, raising=False)
    with pytest.raises(InvalidParameterError, match=ENV_FLAG):
        randomize_not_private_seeded(df, 1.0, seed=3, **kwargs)
    monkeypatch.setenv(ENV_FLAG, "1")
    with pytest.warns(PrivacyLeakWarning):
        one = randomize_not_private_seeded(df, 1.0, seed=3, **kwargs)
    with pytest.warns(PrivacyLeakWarning):
        two = randomize_not_private_seeded(df, 1.0, seed=3, **kwargs)
    pd.testing.assert_frame_equal(one, two)
    assert one.attrs["dpmic_ldp"]["seeded"] is True
    fresh = randomize(df, 1.0, **kwargs)  # outside the context: secure again
    assert fresh.attrs["dpmic_ldp"]["seeded"] is False
    # seeded reports are never read as a private design's: mixed with secure ones
    # (one frame, or one folder) they were released as private, without NOT PRIVATE
    mixed = pd.concat([fresh, one])
    with pytest.raises(InvalidDataError, match="another design"):
        pairwise(mixed, design=fresh.attrs["dpmic_ldp"])
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_reports(fresh, folder / "a.parquet")
    write_reports(one, folder / "b.parquet")
    with pytest.raises(InvalidParameterError, match="more than one design"):
        read_reports(folder)
    alone = pairwise(one)
    assert alone.privacy.seeded and "NOT PRIVATE" in alone.report()


def test_secure_source_differs_between_calls():
    df = pd.DataFrame({"a": np.linspace(0, 1, 200), "b": np.linspace(1, 0, 200)})
    design = make_design(1.0, bounds={"a": (0, 1), "b": (0, 1)}, rows=200, protocol="olh")
    one = randomize_with(df, design, ByteSource())
    two = randomize_with(df, design, ByteSource())
    assert not one.equals(two)


@pytest.mark.parametrize("eps", [1e-9, 0.0, -1.0, 700.0, 1e308, float("nan"), float("inf")])
def test_budgets_outside_the_design_range_are_refused_with_the_package_error(eps):
    from dpmic_dask.ldp import randomize

    frame = pd.DataFrame({"x": [0.1, 0.5], "y": [0.2, 0.9]})
    with pytest.raises(InvalidParameterError, match="eps must be"):
        randomize(frame, eps, bounds={"x": (0, 1), "y": (0, 1)})


def test_pairs_without_a_report_are_said_in_a_warning_and_the_report():
    # 20 people over 45 pairs: at least 25 pairs get no report, whatever the draws
    gen = np.random.default_rng(0)  # test data only
    cols = [f"v{i}" for i in range(10)]
    reports = randomize(pd.DataFrame(gen.uniform(0, 1, (20, 10)), columns=cols), 1.0,
                        bounds={c: (0, 1) for c in cols})
    with pytest.warns(NoiseWarning, match="pairs got no report") as caught:
        result = pairwise(reports, replicates=20)
    table = result.to_pandas()
    empty = int((table.reports == 0).sum())
    assert empty >= 25 and table.mic.isna().sum() == empty
    assert f"{empty} of 45 pairs got no report" in str(caught[0].message)
    assert f"No estimate: {empty} of 45 pairs" in result.report()
    assert sorted(result.unreported()) == sorted(
        zip(table.x[table.reports == 0], table.y[table.reports == 0]))
