"""Feedback on noise and on bounds: the within_noise flag in the tidy table and in
job outputs, the large-noise warning before the charge (public quantities) and
after (released values), tau reported as tau_a, and a public domain far wider
than the data reported from released bounds only."""

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.release.report import NOISY_CI95


def small_frame(n=569, seed=0):
    gen = np.random.default_rng(seed)  # test data only
    a = gen.random(n)
    return pd.DataFrame({"a": a, "b": a + 0.05 * gen.random(n), "c": gen.random(n)})


def test_within_noise_flags_values_inside_their_own_ci95():
    frame = small_frame(n=20_000)
    ledger = dm.InMemoryLedger(uncapped=True)
    result = frame.dpmic.pairwise(2.0, bounds={c: (0, 1) for c in frame},
                                  statistics=("mic", "tau_a"), ledger=ledger)
    table = result.to_pandas()
    np.testing.assert_array_equal(table.within_noise, np.abs(table.mic) <= table.ci95)
    np.testing.assert_array_equal(table.tau_a_within_noise,
                                  np.abs(table.tau_a) <= table.tau_a_ci95)
    strong = table[(table.x == "a") & (table.y == "b")].iloc[0]
    assert not strong.within_noise and not strong.tau_a_within_noise
    assert "tau" not in table.columns and "tau_a" in table.columns
    np.testing.assert_allclose(table.nonlinearity, table.mic - table.tau_a ** 2)
    with pytest.warns(FutureWarning, match="older spelling"):
        assert result.tau_a == result.tau
    assert "tau_a (binned Kendall tau-a)" in result.report()


def test_large_noise_warns_before_the_charge_and_after():
    frame = small_frame()  # 569 rows at eps 1: the issue's +/-1.5 example, smaller
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.warns(dm.NoiseWarning) as record:
        result = frame.dpmic.pairwise(1.0, bounds={c: (0, 1) for c in frame}, ledger=ledger)
    messages = [str(w.message) for w in record if w.category is dm.NoiseWarning]
    assert any("noise is large" in m for m in messages)            # before
    assert any("within their noise" in m for m in messages)         # after
    assert result.ci95 > NOISY_CI95 and "flagged within_noise" in result.report()


def test_the_warning_before_comes_before_the_charge():
    frame = small_frame()
    ledger = dm.InMemoryLedger(uncapped=True)
    charges_when_warned = []

    def seen(message, category, *args, **kwargs):
        if category is dm.NoiseWarning and "noise is large" in str(message):
            charges_when_warned.append(len(ledger.charges()))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = seen
        frame.dpmic.pairwise(1.0, bounds={c: (0, 1) for c in frame}, ledger=ledger)
    assert charges_when_warned and charges_when_warned[0] == 0  # before the charge
    assert len(ledger.charges()) == 1


def test_small_noise_does_not_warn():
    frame = small_frame(n=50_000)
    ledger = dm.InMemoryLedger(uncapped=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dm.NoiseWarning)
        result = frame.dpmic.pairwise(5.0, bounds={c: (0, 1) for c in frame}, ledger=ledger)
    assert result.ci95 <= NOISY_CI95


def test_tau_is_a_not_b_on_binary_columns():
    """The binned tau counts ties in its denominator (tau-a): on two binary columns
    it is smaller in size than scipy's tau-b, as docs/statistics.md says."""
    from scipy import stats

    from dpmic_dask.stats.statistics.tau import tau_a

    gen = np.random.default_rng(3)
    x = (gen.random(4000) < 0.3).astype(float)
    y = np.where(gen.random(4000) < 0.8, x, 1 - x)
    table = pd.crosstab(x, y).to_numpy()
    ours = tau_a(table)
    b = stats.kendalltau(x, y).statistic
    assert 0 < ours < b - 0.1


def test_a_public_domain_far_wider_than_the_data_is_reported():
    gen = np.random.default_rng(4)
    frame = pd.DataFrame({"amount": 700 * gen.random(20_000)})
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.warns(dm.BoundsWarning, match="far wider than"):
        found = dm.private_bounds(frame, 0.5, columns=["amount"], domain=(0.0, 10_000.0),
                                  ledger=ledger)
    assert found.domain_use["amount"] < 0.25
    assert "far wider than" in found.report()
    with warnings.catch_warnings():
        warnings.simplefilter("error", dm.BoundsWarning)
        tight = dm.private_bounds(frame, 0.5, columns=["amount"], domain=(0.0, 1000.0),
                                  ledger=ledger)
    assert tight.domain_use["amount"] >= 0.25


def test_pairwise_says_a_public_range_is_far_wider_than_the_data():
    """The issue's amount up to 700 with a schema range [0, 10000]: given as the
    domain of its private bounds, the release uses tight bounds and says so."""
    gen = np.random.default_rng(5)
    a = 700 * gen.random(20_000)
    frame = pd.DataFrame({"amount": a, "y": np.sin(a / 100) + 0.1 * gen.normal(size=a.size)})
    ledger = dm.InMemoryLedger(uncapped=True)
    wide = frame.dpmic.pairwise(1.0, bounds={"amount": (0, 10_000), "y": (-1.5, 1.5)},
                                ledger=ledger)
    # every release (the private bounds no longer cut into the data now and then:
    # 150 of 150 fresh releases beat the wide bounds)
    with pytest.warns(dm.BoundsWarning, match="far wider than the data"):
        checked = frame.dpmic.pairwise(1.0, bounds={"amount": "private", "y": (-1.5, 1.5)},
                                       domain={"amount": (0, 10_000)}, ledger=ledger)
    assert "far wider than the data" in checked.report()
    assert checked.private_bounds.bounds["amount"][1] < 2_000
    assert checked.values[0] > wide.values[0]


@pytest.mark.parametrize("domain, beyond", [((0.0, 100.0), 0.6), ((0.0, 1e-300), 1.0)])
def test_rows_piled_at_an_end_of_a_public_domain_are_said(domain, beyond):
    """A domain narrower than the data: every value beyond its end is counted in
    the end bin and clamped there in the release, so the bounds stopped at the
    domain's end without a word (and with all rows beyond it, the domain was said
    to be far wider than the data). Said now, in a warning, the bounds' report,
    the release's report and its page; a domain that holds the data says nothing."""
    gen = np.random.default_rng(6)  # test data only
    n = 20_000
    x = np.where(gen.random(n) < beyond, domain[1] + 1 + 50 * gen.random(n),
                 domain[1] * gen.random(n))
    frame = pd.DataFrame({"x": x, "y": x + gen.normal(0, 5, n)})
    ledger = dm.InMemoryLedger(uncapped=True)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        found = dm.private_bounds(frame, 1.0, columns=["x"], domain=domain, ledger=ledger)
    said = [str(w.message) for w in said if issubclass(w.category, dm.BoundsWarning)]
    assert any("piled at an end of a public domain" in w for w in said)
    assert not any("far wider" in w for w in said)
    side, share = found.piled["x"]
    assert side == "upper" and share == pytest.approx(beyond, abs=0.1)
    assert "x " in found.piled_note() and "piled" in found.report()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        released = frame.dpmic.pairwise(1.0, bounds={"x": "private", "y": (-10, 400)},
                                        domain={"x": domain}, ledger=ledger)
    assert any("piled at an end" in str(w.message) for w in said)
    assert "piled at an end of a public domain" in released.report()
    assert "far wider than the data" not in released.report()
    assert released.private_bounds.piled["x"][0] == "upper"
    page = released.to_html(Path(tempfile.mkdtemp()) / "page.html").read_text()
    assert "piled at the upper end of its public domain" in page
    # the same column inside a domain that holds it: nothing piled, nothing said
    with warnings.catch_warnings():
        warnings.simplefilter("error", dm.BoundsWarning)
        held = dm.private_bounds(frame, 1.0, columns=["x"], domain=(0.0, 200.0), ledger=ledger)
    assert held.piled == {} and "piled" not in held.report()


def test_a_fill_outside_its_released_private_bounds_is_said():
    """Private bounds without a domain cannot check a fill before the charge (the
    bounds are not known yet); a fill far outside them clamped every filled row to
    a bound without a word. Said now: a warning, the report and the page; a fill
    inside them says nothing."""
    gen = np.random.default_rng(8)  # test data only
    n = 20_000
    x = 2 + 9 * gen.random(n)
    frame = pd.DataFrame({"x": x, "y": x + gen.normal(0, 1, n)})
    frame.loc[:99, "x"] = np.nan  # 0.5%: a tail the bounds (coverage 0.99) leave out
    ledger = dm.InMemoryLedger(uncapped=True)
    kwargs = dict(bounds={"x": "private", "y": (-5, 20)}, nulls="fill", ledger=ledger,
                  bounds_check=None)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        far = frame.dpmic.pairwise(1.0, fill={"x": 1e6, "y": 0.0}, **kwargs)
    lo, hi = far.private_bounds.bounds["x"]
    assert hi < 1e6 and far.private_bounds.clamped_fills == {"x": 1e6}
    assert any("Fill values outside their released bounds" in str(w.message) for w in said)
    assert "x 1e+06 outside [" in far.report()
    page = far.to_html(Path(tempfile.mkdtemp()) / "page.html").read_text()
    assert "its fill value lies outside them" in page
    with warnings.catch_warnings():
        warnings.simplefilter("error", dm.BoundsWarning)
        near = frame.dpmic.pairwise(1.0, fill={"x": 5.0, "y": 0.0}, **kwargs)
    assert near.private_bounds.clamped_fills == {} and "Fill values" not in near.report()


def test_a_warning_the_caller_ignores_stays_ignored_after_the_charge():
    """After the charge every filter was reset to "default" (so that no warning
    could be raised there): a BoundsWarning the caller had ignored was shown, and
    so were other libraries' deprecation notices. Only "error" becomes "default"."""
    gen = np.random.default_rng(4)
    frame = pd.DataFrame({"amount": 700 * gen.random(20_000)})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=dm.BoundsWarning)
        found = dm.private_bounds(frame, 0.5, columns=["amount"], domain=(0.0, 10_000.0),
                                  ledger=dm.InMemoryLedger(uncapped=True))
    assert found.domain_use["amount"] < 0.25  # the case that warns
    assert not [w for w in seen if issubclass(w.category, dm.BoundsWarning)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("error")  # shown after the charge, never raised
        dm.private_bounds(frame, 0.5, columns=["amount"], domain=(0.0, 10_000.0),
                          ledger=dm.InMemoryLedger(uncapped=True))
    assert any(issubclass(w.category, dm.BoundsWarning) for w in seen)


def test_the_noise_warnings_are_never_raised():
    """Under a warnings-as-errors filter the charged release is still returned (the
    plan check that warns also runs after the charge, inside a prepaid part)."""
    frame = small_frame()
    ledger = dm.InMemoryLedger(uncapped=True)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("error", dm.NoiseWarning)
        result = frame.dpmic.pairwise(1.0, bounds={"a": "private", "b": (0, 1),
                                                   "c": (0, 1)}, ledger=ledger)
    assert len(ledger.charges()) == 1 and len(result.values) == 3
    assert any(w.category is dm.NoiseWarning for w in shown)


def test_a_release_without_public_bounds_does_not_say_they_were_used_as_given():
    """Every bound private, a boolean and a listed category beside them: the report
    said "Public bounds: used as given, not checked" of bounds nobody gave."""
    gen = np.random.default_rng(12)
    n = 20_000
    frame = pd.DataFrame({"a": gen.normal(size=n), "vip": gen.random(n) < 0.3,
                          "r": gen.choice(["x", "y"], n)})
    ledger = dm.InMemoryLedger(uncapped=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dm.BoundsWarning)
        released = frame.dpmic.pairwise(2.0, bounds={"a": "private"}, columns=["a", "vip", "r"],
                                        categories={"r": ["x", "y"]}, ledger=ledger)
        given = frame.dpmic.pairwise(2.0, bounds={"a": (-5, 5)}, columns=["a", "vip", "r"],
                                     categories={"r": ["x", "y"]}, ledger=ledger,
                                     bounds_check=None)
        bare = frame.dpmic.pairwise(2.0, bounds={"a": "private"}, columns=["a", "vip"],
                                    ledger=ledger)
    assert "used as given" not in released.report()
    # the public list is checked (the rows outside it): the check's lines, not the note
    assert tuple(released.bounds_check.bounds) == tuple(released.bounds_check.lists) == ("r",)
    assert "categorical: rows outside the list" in released.report()
    assert "used as given" not in bare.report()
    assert "No public bounds given" in bare.report()
    assert "used as given" in given.report() and "No public bounds given" not in given.report()


def test_a_release_with_filled_nulls_says_so_with_the_public_fill_values():
    """95% of a column missing and filled with 0: MIC fell from 0.87 to 0.04 and
    nothing in the report, page or file said that values were filled."""
    gen = np.random.default_rng(4)
    n = 20_000
    x = gen.uniform(0, 1, n)
    y = np.where(gen.random(n) < 0.95, np.nan, np.sin(6 * x))
    frame = pd.DataFrame({"x": x, "y": y, "t": pd.Timestamp("2024-01-01")
                          + pd.to_timedelta(gen.integers(0, 86_400, n), unit="s")})
    result = frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (-2, 2),
                                               "t": ("2024-01-01", "2024-01-02")},
                                  nulls="fill", fill={"x": 0.5, "y": 0.0, "t": "2024-01-01"})
    report = result.report()
    assert "Missing values were filled with each column's public fill value (nulls='fill': " \
        "x 0.5, y 0, t 2024-01-01)" in report
    plain = frame.dropna().dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (-2, 2)},
                                          columns=["x", "y"])
    assert "Missing values were filled" not in plain.report()


def test_the_public_bounds_and_lists_used_are_kept_with_the_release(tmp_path):
    """The report named the columns with public bounds, not the bounds: an archived
    result (its Parquet file's report, its page) could not show what its values
    were computed at."""
    import pyarrow.parquet as pq

    gen = np.random.default_rng(9)
    n = 5_000
    frame = pd.DataFrame({"x": gen.uniform(0, 1, n), "g": gen.choice(["a", "b"], n),
                          "t": pd.Timestamp("2024-01-01")
                          + pd.to_timedelta(gen.integers(0, 86_400, n), unit="s"),
                          "f": gen.random(n) < 0.5, "p": gen.normal(size=n)})
    result = frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "t": ("2024-01-01", "2024-01-02"),
                                               "p": "private"},
                                  categories={"g": ["a", "b"]},
                                  columns=["x", "g", "t", "f", "p"])
    day = ("2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00")
    assert result.public_bounds == {"x": (0.0, 1.0), "g": ["a", "b"], "t": day}  # not f, p
    line = ("Public bounds and lists used: x [0, 1]; g ['a', 'b'] (others: 'other'); "
            f"t [{day[0]}, {day[1]}].")
    assert line in result.report()
    result.to_parquet(tmp_path / "r.parquet")
    meta = pq.read_schema(tmp_path / "r.parquet").metadata
    assert line in meta[b"dpmic.report"].decode()
    result.to_html(tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "x [0, 1]" in page and "(given, not released)" in page
    assert "type (booleans: 0 and 1): f." in page
    # exact, never rounded for printing: integers, sub-seconds
    exact = frame.assign(i=np.arange(n)).dpmic.pairwise(
        1.0, columns=["i", "t"], bounds={"i": (0, 1234567),
                                         "t": ("2024-01-01 00:00:00.5", "2024-01-02 00:00:00.75")})
    assert exact.public_bounds == {"i": (0.0, 1234567.0),
                                   "t": ("2024-01-01T00:00:00.500000+00:00",
                                         "2024-01-02T00:00:00.750000+00:00")}
    assert "i [0, 1234567];" in exact.report()
