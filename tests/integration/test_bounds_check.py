"""bounds_check through the public API and job files: the warning on bounds far
wider than the data (the issue's example: values up to 700, bounds [0, 10000]),
none on tight bounds, one charge of the release's eps, the report's lines."""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask import InMemoryLedger
from dpmic_dask.errors import BoundsWarning, MissingValuesError
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.release.bounds_check import read_check
from dpmic_dask.release.results import UNCHECKED
from tests.cli import invoke

N = 100_000


@pytest.fixture(scope="module")
def amounts():
    gen = np.random.default_rng(7)  # test data only
    amount = gen.uniform(0.0, 700.0, N)
    return pd.DataFrame({"amount": amount,
                         "wave": np.sin(amount / 60.0) + gen.normal(0.0, 0.3, N)})


def release(frame, bounds, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = frame.dpmic.pairwise(eps=1.0, bounds=bounds, **kw)
    return result, [w for w in seen if issubclass(w.category, BoundsWarning)]


def test_bounds_far_wider_than_the_data_are_reported(amounts):
    ledger = InMemoryLedger({"d": Budget(5.0)})
    # 0.1 of eps: noise scale 40 counts; the 12 bins outside a run of 4 hold about
    # 240 +- 120 of clipped noise, far below 1% of the rows
    result, seen = release(amounts, {"amount": (0, 10000), "wave": (-2, 2)},
                           bounds_check=0.1, ledger=ledger, dataset="d")
    assert [w for w in seen if "column amount" in str(w.message)]
    assert not [w for w in seen if "column wave" in str(w.message)]
    found = result.bounds_check
    assert found.wide == ("amount",)
    lo, hi = found.suggested("amount")
    assert lo == 0 and 700 <= hi <= 1250  # the run's edges: 625 per bin
    report = result.report()
    assert "column amount: its public bounds look at least" in report
    assert "consider bounds 0..1250" in report or "consider bounds 0..625" in report
    assert UNCHECKED not in report
    # one charge: the release's eps, the check's share inside it
    (charge,) = ledger.history("d")
    assert float(charge.cost.epsilon) == pytest.approx(1.0)
    assert result.epsilon == pytest.approx(1.0)
    assert result.privacy.release_cost.epsilon == pytest.approx(0.9)
    # no value of the data in what is said: only bin edges of the public range
    for line in (str(w.message) for w in seen):
        assert "700" not in line and "699" not in line


def test_tight_bounds_are_not_reported(amounts):
    result, seen = release(amounts, {"amount": (0, 1000), "wave": (-2, 2)}, bounds_check=0.1)
    assert not seen and result.bounds_check.wide == ()
    assert "No checked column's public bounds look far wider" in result.report()


@pytest.mark.parametrize("shift", [+1, -1])
def test_values_past_a_bound_piled_in_its_bin_are_said(amounts, shift):
    """Every value beyond one public bound (a column in cents, say) is clamped into
    the end bin. The run's reading cannot tell (the other bins' clipped noise, 2,250
    counts at this noise, outweighs 1% of 70,000 rows), so the pile is read on its
    own: its share of the noisy total, in a warning and a line of the report."""
    frame = amounts.iloc[:70_000].copy()
    frame["amount"] = frame["amount"] * 100 + 2e7 * shift  # all past 10000 or below 0
    # 3 columns share 0.02 of eps 1: noise scale 300 counts per column
    frame["third"] = frame["wave"] * 2
    result, seen = release(frame, {"amount": (0, 10000), "wave": (-2, 2), "third": (-4, 4)},
                           bounds_check=0.02)
    found = result.bounds_check
    assert found.noise_scale == pytest.approx(300)
    side = "upper" if shift > 0 else "lower"
    assert found.checks["amount"].confident  # 233 scales of rows, the noise's sd 6
    assert found.checks["amount"].piled == side
    # said once: as a pile, or (about 1 release in 20, when the clipped noise happens
    # to stay under 1% of the rows) as bounds far wider whose run sits at that bound
    words = (f"at its {side} bound: values beyond" if found.wide == ("amount",) else
             f"of its rows in the bin at its {side} bound")
    said = [str(w.message) for w in seen if "column amount" in str(w.message)]
    assert len(said) == 1 and words in said[0], said
    # both readings of a pile at a bound, never only one of them
    assert found.wide == ("amount",) or (
        "either the bounds are far wider than its values, or values beyond" in said[0])
    assert words in result.report()
    # nothing said of columns inside their bounds
    assert not [w for w in seen if "column wave" in str(w.message)]
    assert found.checks["wave"].piled is None and found.checks["third"].piled is None


def test_columns_at_a_bound_by_design_are_not_a_pile(amounts):
    """A 0/1 column (both end bins full), a rare 0/1 one (95% zeros) and a
    zero-inflated amount (60% at 0, the rest spread) sit at their bounds by design:
    no pile, no warning (the report says where their rows sit, values at a bound
    or beyond it alike)."""
    gen = np.random.default_rng(9)  # test data only
    n = len(amounts)
    frame = pd.DataFrame({
        "flag": (gen.random(n) < 0.4).astype(np.int64),
        "rare": (gen.random(n) < 0.05).astype(np.int64),
        "spend": np.where(gen.random(n) < 0.6, 0.0, gen.uniform(0, 100, n)),
        "wave": amounts["wave"].to_numpy()})
    result, seen = release(frame, {"flag": (0, 1), "rare": (0, 1), "spend": (0, 100),
                                   "wave": (-2, 2)}, bounds_check=0.2)
    found = result.bounds_check
    assert all(found.checks[c].confident for c in frame.columns)
    assert [c for c, f in found.checks.items() if f.piled] == []
    assert not [w for w in seen if "bin at its" in str(w.message)]
    assert {c for c, f in found.checks.items() if f.at_bound} == {"flag", "rare", "spend"}
    assert found.checks["rare"].other_end_spike  # two values, one at each bound


def test_without_the_check_the_report_says_the_bounds_were_not_checked(amounts):
    result, seen = release(amounts, {"amount": (0, 10000), "wave": (-2, 2)}, bounds_check=None)
    assert not seen and result.bounds_check is None
    lines = result.report().splitlines()
    assert UNCHECKED in lines and "bounds_check" in UNCHECKED
    assert not any(ch.isdigit() for ch in UNCHECKED)


def test_selection_releases_take_the_check_too(amounts):
    frame = amounts.assign(noise=np.random.default_rng(1).uniform(0, 1, N))
    bounds = {"amount": (0, 10000), "wave": (-2, 2), "noise": (0, 1)}
    ledger = InMemoryLedger({"d": Budget(5.0)})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        top = frame.dpmic.top_pairs(1, 1.0, bounds=bounds, bounds_check=0.3, ledger=ledger,
                                    dataset="d")
        above = frame.dpmic.pairs_above(0.2, 1.0, bounds=bounds, max_pairs=1,
                                        bounds_check=0.3, ledger=ledger, dataset="d")
    for result in (top, above):
        assert result.bounds_check.wide == ("amount",)
        assert "Selection:" in result.report() and "column amount" in result.report()
    assert [float(c.cost.epsilon) for c in ledger.history("d")] == pytest.approx([1.0, 1.0])
    assert sum("column amount" in str(w.message) for w in seen) == 2


def test_times_are_printed_in_their_kind():
    gen = np.random.default_rng(3)  # test data only
    start = pd.Timestamp("2024-01-01").value // 10**9
    seconds = gen.uniform(start, start + 30 * 86400, N)
    frame = pd.DataFrame({"signup": pd.to_datetime(seconds, unit="s"),
                          "spend": gen.uniform(0, 1, N)})
    result, seen = release(frame, {"signup": ("2020-01-01", "2028-01-01"), "spend": (0, 1)},
                           bounds_check=0.1)
    assert result.bounds_check.wide == ("signup",)
    (message,) = [str(w.message) for w in seen]
    # bins of half a year from 2020-01-01: the data's month falls in the one from 2024-01-01
    assert "consider bounds 2024-01-01..2024-07-01" in message


def test_missing_values_are_refused_before_the_charge_and_filled_when_asked():
    gen = np.random.default_rng(4)  # test data only
    x = gen.uniform(0, 10, 5000)
    x[::50] = np.nan
    frame = pd.DataFrame({"x": x, "y": gen.uniform(0, 10, 5000)})
    ledger = InMemoryLedger({"d": Budget(5.0)})
    with pytest.raises(MissingValuesError, match="nothing was charged"):
        frame.dpmic.pairwise(1.0, bounds={"x": (0, 10), "y": (0, 10)}, bounds_check=0.05,
                             ledger=ledger, dataset="d")
    assert ledger.history("d") == []
    filled = frame.dpmic.pairwise(1.0, bounds={"x": (0, 10), "y": (0, 10)}, nulls="fill",
                                  fill={"x": 5.0, "y": 5.0}, bounds_check=0.05, ledger=ledger,
                                  dataset="d")
    assert sum(filled.bounds_check.histograms["x"]) == pytest.approx(5000, abs=2000)
    dropped = frame.dpmic.pairwise(1.0, bounds={"x": (0, 10), "y": (0, 10)}, nulls="drop",
                                   min_rows=1000, bounds_check=0.05, ledger=ledger,
                                   dataset="d")
    assert "min_rows" in dropped.privacy.statement and dropped.bounds_check is not None
    assert len(ledger.history("d")) == 2


def test_a_dask_frame_merges_partitions_by_summing(amounts, monkeypatch):
    import dask.dataframe as dd

    from dpmic_dask.testing import seeded_noise

    monkeypatch.setenv("DPMIC_DASK_ALLOW_SEEDED_NOISE", "1")
    bounds = {"amount": (0, 10000), "wave": (-2, 2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with seeded_noise(5, not_private=True):
            one = amounts.dpmic.pairwise(1.0, bounds=bounds, bounds_check=0.05)
        with seeded_noise(5, not_private=True):
            many = dd.from_pandas(amounts, npartitions=7).dpmic.pairwise(
                1.0, bounds=bounds, bounds_check=0.05)
    assert one.bounds_check.histograms == many.bounds_check.histograms
    assert one.bounds_check.seeded and "NOT PRIVATE" in one.report()


# ------------------------------------------------------------------ job files


@pytest.fixture
def job_setup(tmp_path):
    from dpmic_dask.privacy.ledger import SQLLedger
    from tests.jobfiles import COLUMNS, write_job

    gen = np.random.default_rng(0)  # test data only
    rows = 100_000
    a = gen.uniform(0, 700, rows)
    frame = pd.DataFrame({"a": a, "b": np.sin(a / 60) + 0.1 * gen.normal(size=rows),
                          "c": gen.random(rows)})
    (tmp_path / "in").mkdir()
    frame.to_parquet(tmp_path / "in" / "part-0.parquet")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(5.0))

    def job(bounds={"check": 0.05}):  # noqa: B006 - never changed
        return write_job(tmp_path / "job.toml", columns={**COLUMNS, "a": [0, 10000]},
                         bounds=bounds)

    return ledger, job


def test_a_job_file_checks_its_bounds(job_setup):
    from dpmic_dask.batch.jobplan import job_cost
    from dpmic_dask.batch.jobs import load_job
    from dpmic_dask.privacy.ledger import SQLLedger

    ledger, job = job_setup
    loaded = load_job(job())
    assert loaded.bounds_check == 0.05
    assert job_cost(loaded).epsilon == pytest.approx(1.0)
    assert load_job(job(None)).bounds_check is None
    # 0.2 of eps over three columns: noise scale 30 counts, far below 1% of the rows
    run = invoke("run", job({"check": 0.2}), "--run-id", "r1")
    assert run.exit_code == 0, run.output
    assert "Public bounds checked privately" in run.output
    assert "column a: its public bounds look at least" in run.output
    (charge,) = SQLLedger(ledger).history("d")
    assert float(charge.cost.epsilon) == pytest.approx(1.0)
    assert charge.mechanism.startswith("bounds-check+")


@pytest.mark.parametrize("section, message", [
    ({"check": 0}, "bounds.check must be a number between 0 and 1"),
    ({"check": 1.5}, "bounds.check must be a number between 0 and 1"),
    ({"check": "5%"}, "bounds.check must be a number between 0 and 1"),
    ({"check": True}, "bounds.check must be a number between 0 and 1"),
    ({"check": "on"}, 'or "auto" (the default), or false (off)'),
    ({"chek": 0.05}, "unknown key bounds.chek"),
])
def test_a_bad_bounds_check_key_is_refused_with_one_line(job_setup, section, message):
    from dpmic_dask.batch.cli import Exit

    _, job = job_setup
    result = invoke("validate", job(section))
    assert result.exit_code == Exit.INVALID, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_the_warning_never_refuses_after_the_charge(amounts):
    ledger = InMemoryLedger({"d": Budget(5.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        with pytest.warns(BoundsWarning, match="column amount") as seen:
            result = amounts.dpmic.pairwise(1.0, bounds={"amount": (0, 10000), "wave": (-2, 2)},
                                            bounds_check=0.3, ledger=ledger, dataset="d")
    assert result.bounds_check.wide == ("amount",) and len(ledger.history("d")) == 1
    assert seen[0].filename == __file__  # points at the caller's line


def test_the_check_is_part_of_a_jobs_fingerprint(job_setup):
    from dpmic_dask.batch.jobplan import job_fingerprint
    from dpmic_dask.batch.jobs import load_job

    _, job = job_setup
    off = job_fingerprint(load_job(job(None)))
    on = job_fingerprint(load_job(job({"check": 0.05})))
    other = job_fingerprint(load_job(job({"check": 0.1})))
    assert len({off, on, other}) == 3
    assert "[bounds]\n" in job({}).read_text()
    assert job_fingerprint(load_job(job({}))) == off  # an empty section changes nothing
    # the default written out is the same job (it was "charged by a different job");
    # a run charged when the written default counted still settles
    from dpmic_dask.batch.jobplan import job_fingerprints

    written = load_job(job({"check": "auto"}))
    assert job_fingerprint(written) == off
    assert job_fingerprint(written, auto_written=True) in job_fingerprints(written)
    assert job_fingerprint(written, auto_written=True) != off


def test_a_dry_run_prints_the_plan_and_charges_nothing(job_setup):
    from dpmic_dask.privacy.ledger import SQLLedger

    ledger, job = job_setup
    path = job()
    for command in (["run", str(path), "--dry-run"], ["validate", "--schema", str(path)]):
        result = invoke(command)
        assert result.exit_code == 0, result.output
        assert "Steps, in order:" in result.output and "1. bounds check" in result.output
        assert "public bounds [0, 10000], checked privately" in result.output
    assert SQLLedger(ledger).history("d") == [] and not (path.parent / "out").exists()


def test_the_pile_rule_allows_for_the_noise_of_the_empty_end_bin():
    # 70,000 rows clamped into the top bin, noise scale 300: an empty bottom bin
    # whose noise reads 800 (above 1% of the rows, about 1 release in 30) is still
    # next to none; 3,000 is not; a 0/1 column with 5% ones is never a pile
    scale = 300.0
    middle = [0] * 14
    piled = read_check([800, *middle, 70_000], (0.0, 10_000.0), scale)
    assert piled.confident and piled.piled == "upper"
    assert read_check([3_000, *middle, 70_000], (0.0, 10_000.0), scale).piled is None
    n = int(400 * scale)
    rare = read_check([int(0.95 * n), *middle, int(0.05 * n)], (0.0, 1.0), scale)
    assert rare.confident and rare.piled is None


def test_values_clamped_at_a_bound_are_said_however_many_and_a_smooth_edge_is_not():
    """85% of a column beyond its upper bound (clamped into the top bin) was not a
    pile (under 90%): the release was charged, MIC fell from 0.87 to 0.18, and the
    report said nothing. An end bin holding a tenth of the rows and four times its
    neighbour is now said (a warning from three quarters, the other end bin not a
    spike of its own); clamping at both ends too; a column only dense near a
    bound (exponential) is not."""
    gen = np.random.default_rng(21)  # test data only
    x = gen.uniform(0.0, 1.0, N)
    frame = pd.DataFrame({"x": x, "n": gen.normal(size=N), "e": gen.exponential(1.0, N),
                          "y": np.sin(6 * x) + gen.normal(0.0, 0.1, N)})
    result, seen = release(frame, {"x": (0, 0.15), "n": (-1, 1), "e": (0, 10), "y": (-2, 2)},
                           bounds_check=0.1)
    found = result.bounds_check
    (side, share), = found.checks["x"].at_bound
    assert side == "upper" and 0.8 < share < 0.9
    assert [w for w in seen if str(w.message).startswith("column x: the private check puts")]
    assert {s for s, _ in found.checks["n"].at_bound} == {"lower", "upper"}  # 16% each
    assert not [w for w in seen if "column n" in str(w.message)]  # a line, no warning
    assert not found.checks["e"].at_bound and not found.checks["y"].at_bound
    report = result.report()
    assert "column x: the private check puts" in report and "upper bound 0.15" in report
    assert "column n: the private check puts" in report and "at its upper bound 1" in report
    assert "cannot tell for ['x']" not in report


def test_rows_mostly_in_one_inner_bin_are_said_without_bounds_that_would_clamp_the_rest():
    gen = np.random.default_rng(23)  # test data only
    x = np.where(gen.random(N) < 0.92, 50.0, gen.uniform(0, 100, N))
    frame = pd.DataFrame({"x": x, "y": x + gen.normal(0, 5, N)})
    result, seen = release(frame, {"x": (0, 100), "y": (-20, 120)}, bounds_check=0.2)
    found = result.bounds_check.checks["x"]
    assert found.one_bin is not None and found.one_bin[0] == 8
    (line,) = [str(w.message) for w in seen if str(w.message).startswith("column x:")]
    assert "in one bin, 50..56.25" in line and "consider bounds" not in line
