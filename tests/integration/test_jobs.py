"""dpmic validate / dpmic run with job files, SQLite ledgers and file outputs."""

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobs import JobError, load_job
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke, process_env
from tests.jobfiles import write_job


def write_input(folder, rows=4000):
    gen = np.random.default_rng(0)  # test data only
    a = gen.random(rows)
    frame = pd.DataFrame({"a": a, "b": np.sin(6 * a) + 0.1 * gen.normal(size=rows),
                          "c": gen.random(rows), "note": ["x"] * rows})
    folder.mkdir(parents=True, exist_ok=True)
    frame.iloc[: rows // 2].to_parquet(folder / "part-0.parquet")
    frame.iloc[rows // 2:].to_parquet(folder / "part-1.parquet")
    return frame


@pytest.fixture
def setup(tmp_path):
    write_input(tmp_path / "in")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(2.5))

    def job(eps=1.0, replace=(), **sections):
        return write_job(tmp_path / "job.toml", eps=eps, replace=replace, **sections)

    return tmp_path, ledger, job


def test_validate_good_and_bad_jobs(setup, tmp_path):
    _, _, job = setup
    ok = invoke("validate", job())
    assert ok.exit_code == 0 and "3 columns, 3 pairs" in ok.output
    cases = {
        "eps = 1.0": ("eps = 0", "privacy.eps must be"),
        "[cluster]": ("[clusters]", "unknown section [clusters]"),
        "workers = 1": ("wrokers = 1", "unknown key cluster.wrokers"),
        "c = { bounds = [0, 1] }": ("c = { }", "columns.c has no bounds"),
        "a = { bounds = [0, 1] }": ("a = { bounds = [1, 0] }", "columns.a.bounds"),
        'name = "nightly"': ('name = "nightly', "not valid TOML"),
    }
    for old, (new, message) in cases.items():
        result = invoke("validate", job(replace={old: new}))
        assert result.exit_code == Exit.INVALID, (old, result.output)
        assert message in result.output and len(result.output.strip().splitlines()) == 1
    missing = invoke("validate", tmp_path / "nope.toml")
    assert missing.exit_code == Exit.INVALID and "nope.toml" in missing.output


def test_yaml_jobs_are_equivalent(setup, tmp_path):
    _, ledger, job = setup
    toml_job = load_job(job())
    yaml_path = write_job(tmp_path / "job.yaml", ledger=ledger)
    assert "columns:\n  a:\n    bounds:" in yaml_path.read_text()  # YAML, not TOML
    assert load_job(yaml_path) == type(toml_job)(**{**vars(toml_job), "source": str(yaml_path)})
    write_job(yaml_path, raw="job: [unclosed")
    with pytest.raises(JobError, match="not valid YAML"):
        load_job(yaml_path)


def test_run_charges_once_writes_atomically_and_is_idempotent(setup):
    tmp_path, ledger, job = setup
    first = invoke("run", job(), "--run-id", "2026-11-22")
    assert first.exit_code == 0, first.output
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 3 and (out.run_id == "2026-11-22").all()
    assert {"released_at", "job", "dataset", "charge_id", "mic", "release_epsilon", "value_cost"} <= set(out.columns)
    (record,) = SQLLedger(ledger).history("d")
    assert (record.description, record.mechanism, record.columns) == ("nightly", "micr-lap",
                                                                       ("a", "b", "c"))
    again = invoke("run", job(), "--run-id", "2026-11-22")
    assert again.exit_code == 0 and "already released" in again.output
    assert len(SQLLedger(ledger).history("d")) == 1 and len(pd.read_parquet(tmp_path / "out")) == 3
    second = invoke("run", job(), "--run-id", "2026-11-23")
    assert second.exit_code == 0
    assert len(pd.read_parquet(tmp_path / "out")) == 6
    # 2.5 budget, 1.0 per run: the third run is refused and writes nothing
    refused = invoke("run", job(), "--run-id", "2026-11-24")
    assert refused.exit_code == Exit.BUDGET and "no data was read" in refused.output
    assert len(pd.read_parquet(tmp_path / "out")) == 6
    assert len(SQLLedger(ledger).history("d")) == 2


def test_run_failures_charge_nothing(setup):
    tmp_path, ledger, job = setup
    bad_input = invoke("run", job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path}/missing/*.parquet"}))
    assert bad_input.exit_code == Exit.INVALID and "cannot open input" in bad_input.output
    no_ledger = invoke("run", job(replace={"ledger.db": "other.db"}))
    assert no_ledger.exit_code == Exit.LEDGER
    wrong_column = invoke("run", job(replace={"c = {": "zz = {"}))
    assert wrong_column.exit_code == Exit.INVALID and "no column(s) ['zz']" in wrong_column.output
    assert SQLLedger(ledger).history("d") == []
    assert not list((tmp_path / "out").glob("run-*"))


def test_a_recursive_glob_reads_a_hive_layout(setup):
    """``in/**/*.parquet`` over a hive layout (``year=2024/month=01/...``) was
    refused as "no such file": the check did not expand ``**``."""
    tmp_path, ledger, job = setup
    hive = tmp_path / "hive"
    for k, part in enumerate(sorted((tmp_path / "in").glob("*.parquet"))):
        folder = hive / "year=2024" / f"month=0{k + 1}"
        folder.mkdir(parents=True)
        part.rename(folder / "part-0.parquet")
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{hive}/**/*.parquet"})
    ran = invoke("run", path, "--run-id", "r1")
    assert ran.exit_code == 0, ran.output
    assert len(SQLLedger(ledger).history("d")) == 1 and len(pd.read_parquet(tmp_path / "out")) == 3


def _run_and_die(job, run_id, module, owner, name):
    """``dpmic run`` in a process that dies (exit 9) when ``module.owner.name`` (or
    ``module.name`` when ``owner`` is empty) is called."""
    where = f"where.{owner}" if owner else "where"
    script = textwrap.dedent(f"""
        import os, sys
        import {module} as where
        def die(*a, **k):
            os._exit(9)
        setattr({where}, {name!r}, die)
        from dpmic_dask.batch.cli import main
        sys.argv = ["dpmic", "run", {str(job)!r}, "--run-id", {run_id!r}]
        main()
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=process_env())


def test_killed_between_charge_and_write_keeps_charge_and_delivers_on_retry(setup):
    tmp_path, ledger, job = setup
    proc = _run_and_die(job(), "crash", "dpmic_dask.batch.joboutput", "", "deliver")
    assert proc.returncode == 9, proc.stderr[-2000:]
    assert len(SQLLedger(ledger).history("d")) == 1  # charged, never refunded
    assert not list((tmp_path / "out").glob("*"))  # no partial output
    # the retry writes the values kept with the charge: nothing read or charged again
    rerun = invoke("run", job(), "--run-id", "crash")
    assert rerun.exit_code == 0, rerun.output
    assert "delivered its journaled values" in rerun.output
    (record,) = SQLLedger(ledger).history("d")
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 3 and (out.charge_id == record.charge_id).all()


def test_killed_before_the_charge_commits_charges_nothing(setup):
    tmp_path, ledger, job = setup
    # dies after the charge's row is inserted and the noise drawn, before the
    # transaction that keeps both commits: nothing charged, nothing released
    proc = _run_and_die(job(), "early", "dpmic_dask.batch.journal", "JournaledRun", "keep")
    assert proc.returncode == 9, proc.stderr[-2000:]
    assert SQLLedger(ledger).history("d") == []
    assert not list((tmp_path / "out").glob("*"))
    again = invoke("run", job(), "--run-id", "early")
    assert again.exit_code == 0, again.output
    assert len(SQLLedger(ledger).history("d")) == 1


def test_csv_input_and_output(setup, tmp_path):
    _, ledger, job = setup
    frame = write_input(tmp_path / "csvin")
    frame.to_csv(tmp_path / "csvin" / "data.csv", index=False)
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path}/csvin/data.csv",
                  f'path = "{tmp_path / "out"}"': f'path = "{tmp_path / "csvout"}"\nformat = "csv"'})
    result = invoke("run", path, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(tmp_path / "csvout" / "run-r1--nightly.csv")) == 3


def test_csv_parts_whose_integer_column_has_empty_cells_in_a_later_part(setup, tmp_path):
    """Dask types a CSV column from its first block: integers there and an empty
    cell in a later file failed the run ("int64 found float64"), said as a value
    that does not convert. Integers are read as doubles and categories listed by
    integers as Int64; the empty cells are nulls (filled here), the run goes
    through, and a column of True/False is still read as booleans."""
    _, ledger, job = setup
    frame = write_input(tmp_path / "csvin")
    frame["a"] = (frame["a"] * 1000).round().astype("Int64")
    frame.loc[frame.index[-3:], "a"] = pd.NA  # empty cells in the last file only
    frame["k"] = pd.array(np.arange(len(frame)) % 3, dtype="Int64")
    frame.loc[frame.index[-2:], "k"] = pd.NA
    frame["flag"] = frame["b"] > 0
    half = len(frame) // 2
    frame.iloc[:half].to_csv(tmp_path / "csvin" / "part-0.csv", index=False)
    frame.iloc[half:].to_csv(tmp_path / "csvin" / "part-1.csv", index=False)
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path}/csvin/*.csv",
                        "a = { bounds = [0, 1] }": "a = { bounds = [0, 1000], fill = 0 }",
                        "b = { bounds = [-1.5, 1.5] }": "b = { bounds = [-1.5, 1.5], fill = 0 }",
                        "c = { bounds = [0, 1] }": "c = { bounds = [0, 1], fill = 0 }\n"
                        'k = { categories = [0, 1, 2], fill = 0 }\n'
                        'flag = { kind = "boolean", fill = false }',
                        "eps = 1.0": 'eps = 1.0\nnulls = "fill"'})
    result = invoke("run", path, "--run-id", "r1")
    assert result.exit_code == 0, result.output
    assert len(SQLLedger(ledger).history("d")) == 1


def test_csv_integer_ids_and_categories_are_read_exactly(setup, tmp_path):
    """Integers of a CSV read as doubles merged a privacy unit's ids beyond 2**53
    (snowflake ids, 64-bit hashes: 50 people read as one unit) and turned an
    integer column whose categories are chosen privately into floats (refused).
    Integer columns other than numbers with bounds are read as exact Int64."""
    from dpmic_dask.batch.jobio import load_input
    from dpmic_dask.batch.jobs import load_job

    _, _, job = setup
    gen = np.random.default_rng(0)  # test data only
    folder = tmp_path / "csvids"
    folder.mkdir()
    pd.DataFrame({"who": 2**60 + gen.integers(0, 50, 3000), "a": gen.random(3000),
                  "b": gen.random(3000), "occ": gen.integers(0, 4, 3000)}).to_csv(
        folder / "data.csv", index=False)
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{folder}/data.csv",
                        "c = { bounds = [0, 1] }": "occ = { categories = { private = [0, 1, 2, 3] } }",
                        "eps = 1.0": 'eps = 1.0\nunit = "who"\nmax_rows_per_unit = 10'})
    frame = load_input(load_job(path)).compute()
    assert str(frame["who"].dtype) == "Int64" and frame["who"].nunique() == 50
    assert str(frame["occ"].dtype) == "Int64" and str(frame["a"].dtype) == "float64"


def test_csv_input_with_a_duplicated_header_name_is_refused(setup, tmp_path):
    _, ledger, job = setup
    frame = write_input(tmp_path / "csvin")
    frame = frame[["a", "b", "c"]].assign(extra=frame.c)
    frame.columns = ["a", "b", "c", "a"]  # the second 'a' would be read as 'a.1'
    frame.to_csv(tmp_path / "csvin" / "data.csv", index=False)
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path}/csvin/*.csv"})
    result = invoke("run", path, "--run-id", "r1")
    assert result.exit_code == Exit.INVALID, result.output
    assert "names column 'a' more than once" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert SQLLedger(ledger).history("d") == []


def test_an_output_folder_inside_the_inputs_paths_is_refused_before_the_charge(setup,
                                                                              tmp_path):
    """Input ``data/**/*.parquet`` and output ``data/releases``: the second night read
    the first night's released rows as input ("the input has no column(s)")."""
    _, ledger, job = setup
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path / 'in'}/**/*.parquet",
                        f'path = "{tmp_path / "out"}"': f'path = "{tmp_path / "in" / "rel"}"'})
    assert invoke("run", path, "--run-id", "r1").exit_code == 0
    second = invoke("run", path, "--run-id", "r2")
    assert second.exit_code == Exit.INVALID, second.output
    assert "matches files in the output folder" in second.output
    assert len(SQLLedger(ledger).history("d")) == 1
    # a folder as the input (a Parquet dataset) holding the output folder: refused
    # on the first night already
    folder = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path / 'in'}",
                          f'path = "{tmp_path / "out"}"': f'path = "{tmp_path / "in" / "rel2"}"'})
    first = invoke("run", folder, "--run-id", "r3")
    assert first.exit_code == Exit.INVALID, first.output
    assert "matches files in the output folder" in first.output


def test_text_in_a_csv_column_of_numbers_is_said_as_such(setup, tmp_path):
    """Text among a CSV column of numbers: the column is named and said to hold
    text (never "check the paths and the format"), and no value is quoted."""
    _, ledger, job = setup
    frame = write_input(tmp_path / "csvin").astype({"a": object})
    frame.loc[4, "a"] = "SECRET_42"
    frame.to_csv(tmp_path / "csvin" / "data.csv", index=False)
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path}/csvin/data.csv"})
    result = invoke("run", path, "--run-id", "r1")
    assert result.exit_code == Exit.INVALID, result.output
    assert "column 'a' (dtype" in result.output and "numbers as text" in result.output
    assert "SECRET_42" not in result.output and SQLLedger(ledger).history("d") == []


def test_a_csv_without_a_header_never_has_its_first_row_quoted(setup, tmp_path):
    """A CSV file without a header has data on its first line: a value repeated
    there was quoted as "names column 'SECRET123' more than once". Only the job's
    own column names are quoted."""
    _, ledger, job = setup
    (tmp_path / "csvin").mkdir()
    (tmp_path / "csvin" / "data.csv").write_text("SECRET123,SECRET123,1.5\n1,2,3\n")
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{tmp_path}/csvin/*.csv"})
    for command in (["run", path, "--run-id", "r1"], ["validate", "--schema", path]):
        result = invoke(*command)
        assert result.exit_code == Exit.INVALID, result.output
        assert "more than once in its header" in result.output
        assert "SECRET123" not in result.output
    assert SQLLedger(ledger).history("d") == []


def test_verbose_logs_the_charge_after_it_is_committed(setup, monkeypatch):
    import logging

    from dpmic_dask.privacy.ledger import OpenCharge

    _, ledger, job = setup
    commit = OpenCharge.commit

    def noted_commit(self):
        commit(self)
        sys.stderr.write("<committed>\n")

    monkeypatch.setattr(OpenCharge, "commit", noted_commit)
    logger = logging.getLogger("dpmic_dask")
    handlers, level = list(logger.handlers), logger.level
    try:
        result = invoke("-v", "run", job(), "--run-id", "r1")
    finally:
        logger.handlers[:], logger.level = handlers, level
    assert result.exit_code == 0, result.output
    charged = "to dataset 'd' (charge "
    assert result.output.count(charged) == 1, result.output
    assert result.output.index("<committed>") < result.output.index(charged)


def test_run_as_a_real_process(setup):
    tmp_path, ledger, job = setup
    proc = invoke("run", job(), "--run-id", "p1", subprocess=True)
    assert proc.exit_code == 0, proc.stderr[-2000:]
    assert "run p1: released 3 pairs" in proc.stdout
    assert len(pd.read_parquet(tmp_path / "out" / "run-p1--nightly.parquet")) == 3


def test_unexpected_failures_name_the_type_only(setup, monkeypatch):
    tmp_path, ledger, job = setup
    import dpmic_dask.batch.jobio as jobio

    def broken(*args, **kwargs):
        raise RuntimeError("secret value 987654 leaked into a message")

    monkeypatch.setattr(jobio, "load_input", broken)
    result = invoke("run", job(), "--run-id", "x")
    assert result.exit_code == Exit.UNEXPECTED == 1
    assert "unexpected RuntimeError" in result.output and "987654" not in result.output
    with pytest.raises(RuntimeError):
        invoke("run", job(), "--run-id", "x", "--debug", raise_errors=True)
    assert SQLLedger(ledger).history("d") == []


def test_sql_query_input_and_sql_output_on_sqlite(setup, tmp_path):
    _, ledger, _ = setup
    from dpmic_dask.batch.jobio import sql_engine

    db = f"sqlite:///{tmp_path / 'warehouse.db'}"
    frame = write_input(tmp_path / "unused").drop(columns=["note"])
    frame.assign(region=np.where(frame.c > 0.5, "north", "south")).to_sql(
        "facts", sql_engine(db), index=False)
    job = write_job(tmp_path / "sql.yaml", name="sql-job", ledger=ledger, input={
        "sql_url": db,
        "sql_query": "SELECT a, b, c FROM facts WHERE region IN ('north', 'south')"},
        output={"sql_url": db, "sql_table": "releases"})
    result = invoke("run", job, "--run-id", "q1")
    assert result.exit_code == 0, result.output
    out = pd.read_sql_table("releases", sql_engine(db))
    assert len(out) == 3 and (out.n == len(frame)).all() and (out.run_id == "q1").all()
    again = invoke("run", job, "--run-id", "q1")
    assert again.exit_code == 0 and "already released" in again.output
    assert len(pd.read_sql_table("releases", sql_engine(db))) == 3


def test_select_section_releases_the_chosen_pairs_only(setup):
    tmp_path, ledger, job = setup
    path = job(select={"top_k": 1, "share": 0.6})
    checked = invoke("validate", path)
    assert checked.exit_code == 0, checked.output
    ran = invoke("run", path, "--run-id", "sel-1")
    assert ran.exit_code == 0, ran.output
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 1 and (out.x + out.y).item() == "ab"  # the planted pair
    (record,) = SQLLedger(ledger).history("d")
    assert record.cost.epsilon == 1.0 and record.mechanism == "NoisyTopK+micr-lap"
    assert "selection: top 1 by MICr" in record.description


@pytest.mark.parametrize("section, message", [
    ("[select]\ntop_k = 0", "select.top_k must be an integer >= 1"),
    ("[select]\nthreshold = 0.3", "select.threshold needs select.max_pairs"),
    ("[select]\nthreshold = 3\nmax_pairs = 2", "select.threshold must be a number in [0, 1]"),
    ("[select]\ntop_k = 2\nthreshold = 0.3", "exactly one of top_k, threshold"),
    ("[select]\ntop_k = 2\nshare = 1", "select.share must be"),
    ("[select]\ntop_k = 2\nscreen_B = 2", "select.screen_B"),
    ("[select]\ntop_k = 2\nmax_pairs = 2", "goes with select.threshold"),
])
def test_select_section_is_checked(setup, section, message):
    _, ledger, job = setup
    result = invoke("validate", job(replace={"[ledger]": f"{section}\n\n[ledger]"}))
    assert result.exit_code == Exit.INVALID and message in result.output, result.output


def test_statistics_in_the_job_file_add_tau_columns(setup):
    tmp_path, ledger, job = setup
    path = job(replace={"eps = 1.0": 'eps = 1.0\nstatistics = ["mic", "tau_a"]'})
    ran = invoke("run", path, "--run-id", "tau-1")
    assert ran.exit_code == 0, ran.output
    out = pd.read_parquet(tmp_path / "out")
    assert {"tau_a", "tau_a_ci95", "nonlinearity"} <= set(out.columns) and len(out) == 3
    assert out.tau_a.between(-1, 1).all()
    assert set(out.within_noise) <= {0, 1} and set(out.tau_a_within_noise) <= {0, 1}
    (record,) = SQLLedger(ledger).history("d")
    assert record.cost.epsilon == 1.0 and record.mechanism == "micr-lap+tau-lap"
    bad = invoke("validate", job(replace={"eps = 1.0": 'eps = 1.0\nstatistics = ["tau"]'}))
    assert bad.exit_code == Exit.INVALID and "privacy.statistics must be" in bad.output


def test_private_bounds_in_a_job_file(setup):
    tmp_path, ledger, job = setup
    path = job(replace={"b = { bounds = [-1.5, 1.5] }": 'b = { bounds = "private" }',
                  "eps = 1.0": "eps = 1.0\nbounds_share = 0.25"})
    checked = invoke("validate", path)
    assert checked.exit_code == 0, checked.output
    ran = invoke("run", path, "--run-id", "pb-1")
    assert ran.exit_code == 0, ran.output
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 3
    (record,) = SQLLedger(ledger).history("d")
    assert record.cost.epsilon == 1.0 and record.mechanism == "bounds-hist+micr-lap"
    assert "private bounds for ['b']: epsilon 0.25" in record.description
    bad = invoke("validate", job(replace={"b = { bounds = [-1.5, 1.5] }": 'b = { bounds = "guess" }'}))
    assert bad.exit_code == Exit.INVALID and 'must be [lo, hi] or "private"' in bad.output
    both = job(replace={"b = { bounds = [-1.5, 1.5] }": 'b = { bounds = "private" }',
                  "[ledger]": "[select]\ntop_k = 1\n\n[ledger]"})
    assert invoke("validate", both).exit_code == 0
    ran = invoke("run", both, "--run-id", "pb-2")
    assert ran.exit_code == 0, ran.output
    record = SQLLedger(ledger).history("d")[-1]
    assert record.mechanism == "bounds-hist+NoisyTopK+micr-lap" and "top 1 by MICr" in record.description
    assert len(pd.read_parquet(tmp_path / "out" / "run-pb-2--nightly.parquet")) == 1


def test_a_unit_job_writes_to_a_table_a_row_level_job_made(setup, tmp_path):
    """A per-unit job's rows carry privacy_unit and max_rows_per_unit, which the
    table check and probe left out: writing to a table a row-level job had made
    failed after the charge (exit 7) at every retry."""
    from sqlalchemy import create_engine

    _, ledger, job = setup
    gen = np.random.default_rng(2)  # test data only
    folder = tmp_path / "units"
    folder.mkdir()
    pd.DataFrame({"who": gen.integers(0, 500, 3000), "a": gen.random(3000),
                  "b": gen.random(3000)}).to_parquet(folder / "data.parquet")
    sql = f"sqlite:///{tmp_path / 'out.db'}"
    common = {f"{tmp_path / 'in'}/*.parquet": f"{folder}/*.parquet",
              "c = { bounds = [0, 1] }\n": "",
              f'path = "{tmp_path / "out"}"': f'sql_url = "{sql}"\nsql_table = "rel"'}
    assert invoke("run", job(replace=common), "--run-id", "r1").exit_code == 0
    SQLLedger(ledger).init("u", Budget(2.5, 0.0, "who"))
    units = job(replace={**common, 'dataset = "d"': 'dataset = "u"',
                         "eps = 1.0": 'eps = 1.0\nunit = "who"\nmax_rows_per_unit = 4'})
    result = invoke("run", units, "--run-id", "u1")
    assert result.exit_code == 0, result.output
    table = pd.read_sql_table("rel", create_engine(sql))
    assert sorted(table["run_id"]) == ["r1", "u1"]
    assert table.loc[table.run_id == "u1", "max_rows_per_unit"].tolist() == [4]
    assert len(SQLLedger(ledger).history("d")) == len(SQLLedger(ledger).history("u")) == 1


def test_the_probe_row_holds_the_longest_texts_rows_can_hold(setup, tmp_path):
    """The probe wrote "" for x_bounds (a row holds "private: about constant" and
    more), "mic" for statistic (rows hold "micr") and "epsilon" for cost_unit (zCDP
    rows hold "rho (zCDP)"): a narrow text column failed after the charge."""
    from dpmic_dask.batch.outputrows import expected_columns, probe_row
    from dpmic_dask.release.boundsresult import LONGEST_NOTE

    _, _, job = setup
    loaded = load_job(job(replace={"c = { bounds = [0, 1] }": 'c = { bounds = "private" }',
                                   "eps = 1.0": 'eps = 1.0\nunit = "a_unit"\n'
                                                "max_rows_per_unit = 4"}))
    probe = probe_row(loaded)
    assert set(probe) == set(expected_columns(loaded))
    assert probe["x_bounds"] == probe["y_bounds"] == LONGEST_NOTE
    assert "about constant" in LONGEST_NOTE and "unresolved" in LONGEST_NOTE
    assert len(probe["statistic"]) >= len("micr") and probe["cost_unit"] == "rho (zCDP)"
    assert probe["privacy_unit"] == "a_unit"


def test_csv_integer_categories_with_an_empty_cell_in_the_first_block_are_read_exactly(
        setup, tmp_path):
    """Integer codes with a blank in the first block read as float64: "column 'code'
    (dtype float64) cannot be categorical", where the same rows with the blanks last
    ran. A column the job lists integer categories for is read as Int64."""
    from dpmic_dask.batch.jobio import load_input

    _, ledger, job = setup
    gen = np.random.default_rng(4)  # test data only
    folder = tmp_path / "codes"
    folder.mkdir()
    code = pd.array(gen.integers(1, 4, 3000), dtype="Int64")
    code[::10] = pd.NA  # the first row among them
    pd.DataFrame({"code": code, "a": gen.random(3000), "b": gen.random(3000)}).to_csv(
        folder / "data.csv", index=False)
    path = job(replace={f"{tmp_path / 'in'}/*.parquet": f"{folder}/data.csv",
                        "c = { bounds = [0, 1] }": "code = { categories = [1, 2, 3] }",
                        "eps = 1.0": 'eps = 1.0\nnulls = "category"'})
    frame = load_input(load_job(path)).compute()
    assert str(frame["code"].dtype) == "Int64" and frame["code"].isna().sum() == 300
    result = invoke("run", path, "--run-id", "r1")
    assert result.exit_code == 0, result.output
