"""dpmic run / validate / deliver with a [causal] section: a private CPDAG as a batch
release, charged once through the run's journaled ledger."""

import datetime as dt
import html
import json
import math
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobcausal import CAUSAL_FILES
from dpmic_dask.batch.journal import find_run
from dpmic_dask.batch.pageledger import recorded
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.jobfiles import write_job

COLUMNS = {"a": [-3, 3], "b": [-3, 3], "c": [-5, 5], "s": {"categories": [1]}}  # binary: 1 or "other"
CAUSAL = {"alpha": 0.05, "max_condition_size": 1, "bins": 4, "test": "tau",
          "select_share": 0.25}


def write_input(folder, rows=2000):
    gen = np.random.default_rng(3)  # test data only: a -> c <- b, s independent
    a, b = gen.normal(size=rows), gen.normal(size=rows)
    frame = pd.DataFrame({"a": a, "b": b, "c": a + b + 0.5 * gen.normal(size=rows),
                          "s": gen.integers(0, 2, rows)})
    folder.mkdir(parents=True, exist_ok=True)
    frame.iloc[: rows // 2].to_parquet(folder / "part-0.parquet")
    frame.iloc[rows // 2:].to_parquet(folder / "part-1.parquet")


@pytest.fixture
def setup(tmp_path):
    write_input(tmp_path / "in")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(5.0))

    def job(*, columns=None, causal=None, eps=2.0, **given):
        """The job file; ``columns`` and ``causal`` change those sections' keys (a
        ``None`` value leaves the key out), any other keyword is write_job's."""
        return write_job(tmp_path / "job.toml", name="cpdag", eps=eps,
                         columns={**COLUMNS, **(columns or {})},
                         causal={**CAUSAL, **(causal or {})}, **given)

    return tmp_path, ledger, job



def history(ledger):
    out = invoke("budget", "history", "--ledger", ledger, "--dataset", "d", "--json")
    assert out.exit_code == Exit.OK, out.output
    return [json.loads(line) for line in out.output.splitlines() if line.strip()]


def test_causal_job_runs_once_and_writes_its_files(setup):
    tmp_path, ledger, job = setup
    path = job()
    ok = invoke("validate", path)
    assert ok.exit_code == Exit.OK, ok.output
    assert "4 columns, a causal graph, eps=2" in ok.output
    first = invoke("run", path, "--run-id", "r1")
    assert first.exit_code == Exit.OK, first.output
    assert "released a causal graph of 4 columns" in first.output
    folder = tmp_path / "out" / "run-r1--cpdag"
    for name in CAUSAL_FILES:
        assert (folder / name).is_file(), name
    edges = pd.read_csv(folder / "edges.csv")
    assert list(edges.columns) == ["source", "target", "directed", "statistic"]
    assert set(edges.source) | set(edges.target) <= {"a", "b", "c", "s"}
    # at eps 2 on 2000 rows these two strong dependences survive the noise
    skeleton = {frozenset(p) for p in zip(edges.source, edges.target)}
    assert {frozenset("ac"), frozenset("bc")} <= skeleton
    sets = json.loads((folder / "separating_sets.json").read_text())
    assert all(set(s) == {"pair", "separating_set", "statistic"} for s in sets)
    # every removed pair carries the noisy value of the test that removed it
    assert all(isinstance(s["statistic"], float) and math.isfinite(s["statistic"])
               for s in sets)
    # a pair is either an edge or separated, never both
    assert {frozenset(s["pair"]) for s in sets}.isdisjoint(skeleton)
    assert len(sets) + len(skeleton) == 6
    assert (folder / "graph.dot").read_text().startswith("digraph cpdag {")
    assert "charged once before any noise" in (folder / "report.txt").read_text()
    page = (folder / "report.html").read_text()  # the run's page, drawn from the same graph
    assert "Private causal graph" in page and page.count('<g class="edge"') == len(edges)
    # the dataset's ledger history up to this run's charge, as on a pairwise run's page
    assert '<table id="ledger-charges">' in page
    assert "The ledger's history is not available" not in page
    # `dpmic report` rebuilds the page, history included, from the ledger it recorded
    assert recorded(folder / "report.html") == {"ledger": ledger, "dataset": "d"}
    (folder / "report.html").unlink()
    lost = invoke("report", str(folder))  # without the page, nothing names the dataset
    assert lost.exit_code == Exit.OK, lost.output
    assert "the run's files do not name its dataset" in html.unescape(
        (folder / "report.html").read_text())
    (folder / "report.html").write_text(page)
    rebuilt = invoke("report", str(tmp_path / "out"))
    assert rebuilt.exit_code == Exit.OK, rebuilt.output
    assert (folder / "report.html").read_text() == page

    charges = history(ledger)
    assert len(charges) == 1
    (charge,) = charges
    assert "causal-pc-tau" in json.dumps(charge)
    assert charge["release"] == "delivered"
    assert SQLLedger(ledger).remaining("d") == pytest.approx(3.0)
    entry = find_run(SQLLedger(ledger), "d", "cpdag", "r1")
    assert entry is not None and json.loads(entry.payload)["kind"] == "causal"

    # the same run id again: nothing computed, nothing charged
    again = invoke("run", path, "--run-id", "r1")
    assert again.exit_code == Exit.OK, again.output
    assert "nothing to do" in again.output
    assert len(history(ledger)) == 1

    # files of the delivered folder lost: the rerun writes the journaled graph again
    kept = {name: (folder / name).read_text() for name in ("edges.csv", "report.txt")}
    for name in kept:
        (folder / name).unlink()
    rerun = invoke("run", path, "--run-id", "r1")
    assert rerun.exit_code == Exit.OK, rerun.output
    assert "edges.csv and 1 more file are missing or empty in its folder" in rerun.output
    assert "delivered its journaled values again" in rerun.output
    assert {name: (folder / name).read_text() for name in kept} == kept
    assert len(history(ledger)) == 1
    # an emptied file and a lost page: written again too
    (folder / "edges.csv").write_text("")
    (folder / "report.html").unlink()
    rerun = invoke("run", path, "--run-id", "r1")
    assert rerun.exit_code == Exit.OK, rerun.output
    assert "edges.csv and 1 more file are missing or empty" in rerun.output
    assert (folder / "edges.csv").read_text() == kept["edges.csv"]
    assert (folder / "report.html").is_file() and len(history(ledger)) == 1

    # the output lost: delivered again from the journal, the same graph, no charge
    written = (folder / "edges.csv").read_text()
    shutil.rmtree(tmp_path / "out")
    redo = invoke("deliver", path, "--run-id", "r1")
    assert redo.exit_code == Exit.OK, redo.output
    assert "nothing was charged" in redo.output
    assert (folder / "edges.csv").read_text() == written
    assert len(history(ledger)) == 1

    # another run id is another release, charged again
    second = invoke("run", path, "--run-id", "r2")
    assert second.exit_code == Exit.OK, second.output
    assert len(history(ledger)) == 2
    assert SQLLedger(ledger).remaining("d") == pytest.approx(1.0)


def test_a_changed_causal_section_is_another_job(setup):
    _, ledger, job = setup
    assert invoke("run", job(), "--run-id", "r1").exit_code == Exit.OK
    other = invoke("run", job(causal={"alpha": 0.01}), "--run-id", "r1")
    assert other.exit_code == Exit.INVALID, other.output
    assert "different job" in other.output
    assert len(history(ledger)) == 1


def test_a_causal_dry_run_and_schema_check_print_its_plan(setup):
    """A causal job's --dry-run said only "a causal graph of 4 columns" (and validate
    --schema nothing): both print its plan, as a release's, and charge nothing."""
    tmp_path, ledger, job = setup
    path = job(privacy={"delta": 1e-6})
    for command in (["run", str(path), "--dry-run"], ["validate", "--schema", str(path)]):
        out = invoke(*command)
        assert out.exit_code == Exit.OK, out.output
        assert "Causal plan: 4 columns, test 'tau'" in out.output
        assert "one charge of epsilon 2, delta 1e-06 (rho " in out.output
        assert "Released: one noisy decision per possible edge" in out.output
        assert "public bounds [-5, 5], 4 bins" in out.output
        assert "1 public category (others: 'other')" in out.output
    assert history(ledger) == [] and not (tmp_path / "out").exists()


def test_over_budget_refused_before_reading(setup):
    tmp_path, ledger, job = setup
    out = invoke("run", job(eps=6.0), "--run-id", "r1")
    assert out.exit_code == Exit.BUDGET, out.output
    assert history(ledger) == []
    assert not (tmp_path / "out" / "run-r1--cpdag").exists()


@pytest.mark.parametrize("change, words", [
    ({"causal": {"alpha": 1.5}}, "causal.alpha must be a number in (0, 1)"),
    ({"causal": {"alpha": "x"}}, "causal.alpha must be a number"),
    ({"causal": {"alpha": 1e-16}}, "alpha must be at least 1e-15"),
    ({"causal": {"bins": 40}}, "causal.bins must be an integer in [2, 16]"),
    ({"causal": {"test": "chi"}}, "test must be one of"),
    ({"causal": {"select_share": 1}}, "causal.select_share must be a number in (0, 1)"),
    ({"causal": {"max_condition_size": -1}}, "max_condition_size must be"),
    ({"causal": {"bins": None, "depth": 4}}, "unknown key causal.depth"),
    ({"select": {"top_k": 2}}, "[causal] and [select] cannot be combined"),
    ({"columns": {"a": {"bounds": "private"}}}, "public bounds"),
    ({"privacy": {"statistics": ["mic", "tau_a"]}}, "privacy.statistics does not apply"),
    ({"privacy": {"nulls": "drop"}}, "privacy.nulls does not apply"),
])
def test_validate_refuses_bad_causal_sections(setup, change, words):
    tmp_path, ledger, job = setup
    path = job(**change)
    out = invoke("validate", path)
    assert out.exit_code == Exit.INVALID, out.output
    assert words in out.output
    assert len(out.output.strip().splitlines()) == 1
    assert str(path) in out.output
    run = invoke("run", path, "--run-id", "r1")
    assert run.exit_code == Exit.INVALID
    assert history(ledger) == []


def test_date_bounds_on_a_column_of_numbers_are_refused_before_the_charge(setup):
    # the job declares a date column: validate takes it (a causal graph reads dates
    # as seconds); the input's column holds integers, which the run refuses
    tmp_path, ledger, job = setup
    path = job(columns={"s": [dt.date(2020, 1, 1), dt.date(2021, 1, 1)]})
    assert invoke("validate", path).exit_code == Exit.OK
    run = invoke("run", path, "--run-id", "r1")
    assert run.exit_code == Exit.INVALID, run.output
    assert "'s'" in run.output and history(ledger) == []


def test_example_job_validates():
    from pathlib import Path

    from dpmic_dask.batch.jobs import load_job

    example = Path(__file__).resolve().parents[2] / "examples" / "causal_job.toml"
    job = load_job(example)
    assert job.causal is not None and job.causal["test"] == "auto"


def test_missing_values_and_wrong_types_refused_before_the_charge(setup):
    tmp_path, ledger, job = setup
    frame = pd.read_parquet(tmp_path / "in" / "part-0.parquet")
    frame.loc[frame.index[5], "a"] = np.nan
    frame["note"] = "text"
    frame.to_parquet(tmp_path / "in" / "part-0.parquet")
    other = pd.read_parquet(tmp_path / "in" / "part-1.parquet")
    other["note"] = "text"
    other.to_parquet(tmp_path / "in" / "part-1.parquet")
    out = invoke("run", job(), "--run-id", "r1")
    assert out.exit_code == Exit.INVALID, out.output
    assert "missing values" in out.output and "nothing was charged" in out.output
    assert history(ledger) == []
    assert find_run(SQLLedger(ledger), "d", "cpdag", "r1") is None
    # a text column with bounds: refused by validate --schema, no data read
    path = job(columns={"s": None, "note": [0, 1]})
    assert invoke("validate", path).exit_code == Exit.OK
    schema = invoke("validate", "--schema", path)
    assert schema.exit_code == Exit.INVALID, schema.output
    assert "not numeric" in schema.output and "text" not in schema.output


@pytest.mark.parametrize("test, delta", [("tau", 0.0), ("g", 1e-6), ("tau", 1e-6)])
def test_the_journaled_graph_is_the_released_graph(tmp_path, test, delta):
    from types import SimpleNamespace

    from dpmic_dask import InMemoryLedger
    from dpmic_dask.batch.jobcausal import decode_graph, encode_graph
    from dpmic_dask.causal import causal_graph

    write_input(tmp_path)
    frame = pd.concat([pd.read_parquet(p) for p in sorted(tmp_path.glob("*.parquet"))])
    graph = causal_graph(frame, 2.0, delta=delta, test=test, max_condition_size=1,
                         bounds={"a": (-3, 3), "b": (-3, 3), "c": (-5, 5)},
                         categories={"s": [1]}, ledger=InMemoryLedger(uncapped=True))
    text = encode_graph(graph, run_id="r1", job=SimpleNamespace(name="j", dataset="d"))
    kept, report = decode_graph(text)
    pd.testing.assert_frame_equal(kept.edges, graph.edges)
    assert kept.separating_sets == graph.separating_sets
    assert kept.separation_statistic == graph.separation_statistic
    assert set(graph.separation_statistic) == set(graph.separating_sets)
    assert kept.to_dot() == graph.to_dot()
    assert report == str(graph.report())


def test_a_zcdp_causal_job(setup):
    tmp_path, _, job = setup
    ledger = f"sqlite:///{tmp_path / 'zcdp.db'}"
    SQLLedger(ledger).init("d", Budget(5.0, 1e-5))
    path = job(privacy={"delta": 1e-6}, causal={"test": "g"}, ledger=ledger)
    out = invoke("run", path, "--run-id", "z1")
    assert out.exit_code == Exit.OK, out.output
    (charge,) = history(ledger)
    assert "causal-pc-g" in json.dumps(charge)
    # the budget left in its unit, to 4 digits, with what it implies (it was a raw
    # Decimal of 18 digits without a unit)
    left = re.search(r"remaining budget of 'd': (\S+) rho \(zCDP\), implies \(eps=", out.output)
    assert left is not None and len(left.group(1).replace(".", "").lstrip("0")) <= 4
    assert re.search(r"pays for \d+ more runs? of job 'cpdag' \([0-9.e-]+ rho each\)",
                     out.output)
    folder = tmp_path / "out" / "run-z1--cpdag"
    assert (folder / "edges.csv").is_file()
    # the page is rebuilt: its stated (eps, delta) are the ledger's charge
    rebuilt = invoke("report", str(folder))
    assert rebuilt.exit_code == Exit.OK, rebuilt.output


def test_a_causal_page_is_not_rebuilt_from_a_changed_or_missing_report(setup):
    """A run folder whose report.txt states another epsilon than the ledger charged
    (edited), or has none: the page would state a guarantee the ledger
    contradicts, or NaN; it is refused, and the page is rebuilt once the run's
    files are delivered again."""
    tmp_path, ledger, job = setup
    path = job()
    assert invoke("run", path, "--run-id", "r1").exit_code == Exit.OK
    folder = tmp_path / "out" / "run-r1--cpdag"
    report = folder / "report.txt"
    text = report.read_text()
    assert "This release is 2-differentially" in text
    report.write_text(text.replace("This release is 2-differentially",
                                   "This release is 0.01-differentially"))
    edited = invoke("report", str(folder))
    assert edited.exit_code != Exit.OK
    assert "states epsilon 0.01" in edited.output and "charged the run epsilon 2" in edited.output
    report.unlink()
    missing = invoke("report", str(folder))
    assert missing.exit_code != Exit.OK and "report.txt is missing" in missing.output
    again = invoke("run", path, "--run-id", "r1")  # delivers the journaled files again
    assert again.exit_code == Exit.OK, again.output
    assert invoke("report", str(folder)).exit_code == Exit.OK


def test_a_causal_job_per_unit(setup):
    tmp_path, _, job = setup
    for part in sorted((tmp_path / "in").glob("*.parquet")):
        frame = pd.read_parquet(part)
        frame["who"] = np.arange(len(frame)) // 3  # three rows per unit
        frame.to_parquet(part)
    ledger = f"sqlite:///{tmp_path / 'units.db'}"
    SQLLedger(ledger).init("d", Budget(5.0, privacy_unit="who"))
    unit = {"unit": "who", "max_rows_per_unit": 2}
    # the table test (a categorical column) is refused per unit, before the charge
    refused = invoke("run", job(privacy=unit, ledger=ledger), "--run-id", "u0")
    assert refused.exit_code == Exit.INVALID, refused.output
    assert "copula test" in refused.output
    # the mixed table's "auto" test per unit: the released tables, as causal_graph
    mixed = job(privacy=unit, ledger=ledger, causal={"test": "auto"})
    assert invoke("validate", mixed).exit_code == Exit.OK
    out = invoke("run", mixed, "--run-id", "u2")
    assert out.exit_code == Exit.OK, out.output
    (charge,) = history(ledger)
    assert "causal-pc-chisq" in json.dumps(charge)
    # its page states the guarantee per unit, as the ledger charged it
    assert invoke("report", str(tmp_path / "out" / "run-u2--cpdag")).exit_code == Exit.OK
    path = job(privacy=unit, ledger=ledger, columns={"s": None}, causal={"test": "copula"})
    assert invoke("validate", path).exit_code == Exit.OK
    # its plan says what a run per unit releases: a noisy row count, then the signs
    # (it named the tau matrix, never released per unit, and bins the test ignores)
    planned = invoke("run", path, "--dry-run")
    assert planned.exit_code == Exit.OK, planned.output
    assert "Released: a noisy row count, then one noisy vector of sums of signs" in \
        planned.output
    assert "Kendall tau" not in planned.output and " bins\n" not in planned.output
    out = invoke("run", path, "--run-id", "u1")
    assert out.exit_code == Exit.OK, out.output
    _, charge = history(ledger)
    assert "causal-pc-copula" in json.dumps(charge)
    report = (tmp_path / "out" / "run-u1--cpdag" / "report.txt").read_text()
    assert "adding or removing all rows of any one who" in report
    assert "at most 2 rows each" in report
