"""The life of a nightly job after its charge: the release journal, run ids per
job, read-only ledgers and outputs, and budget forecasts."""

import errno
import html
import json
import os
import re
import shutil
import subprocess
from contextlib import contextmanager

import pandas as pd
import pytest
from sqlalchemy import create_engine

from dpmic_dask.batch.cli import Exit
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.integration.test_jobs import write_input
from tests.jobfiles import write_job


def job_env(tmp_path, budget: float):
    """Parquet input, a SQLite ledger with ``budget`` for dataset d, and a writer
    of job files (``job(name, eps, replace={old: new}, **sections)``: see
    :func:`tests.jobfiles.write_job`)."""
    write_input(tmp_path / "in")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("d", Budget(budget))

    def job(name="job.toml", eps=1.0, replace=(), **sections):
        # input, output and ledger in tmp_path, also for a job file in a subfolder
        sections = {"input": {"paths": [f"{tmp_path / 'in'}/*.parquet"]},
                    "output": {"path": str(tmp_path / "out")}, "ledger": ledger, **sections}
        return write_job(tmp_path / name, eps=eps, replace=replace, **sections)

    return tmp_path, ledger, job


@pytest.fixture
def env(tmp_path):
    """Parquet input, a SQLite ledger with a budget of 5, and job files."""
    return job_env(tmp_path, 5.0)


def history(ledger):
    result = invoke("budget", "history", "--ledger", ledger, "--dataset", "d", "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def every_file(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ---------------------------------------------------------------- 1. the journal


def test_a_full_disk_keeps_the_release_and_a_retry_writes_it(env, monkeypatch):
    tmp_path, ledger, job = env
    real = pd.DataFrame.to_parquet

    def disk_full(self, path, *args, **kwargs):
        with open(path, "wb") as handle:  # a partial file, then no space left
            handle.write(b"PAR1")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", disk_full)
    failed = invoke("run", job(), "--run-id", "2026-11-22")
    assert failed.exit_code == Exit.OUTPUT, failed.output
    lines = failed.output.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0]
    assert f"output folder {str(tmp_path / 'out')!r}" in lines[0]
    assert every_file(tmp_path / "out") == []  # no temporary file left behind
    (row,) = history(ledger)
    assert row["release"] == "undelivered" and row["run_id"] == "2026-11-22"

    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)  # space is available again
    again = invoke("run", job(), "--run-id", "2026-11-22")
    assert again.exit_code == 0, again.output
    assert "delivered its journaled values" in again.output
    (row,) = history(ledger)
    assert row["release"] == "delivered"
    written = pd.read_parquet(tmp_path / "out")
    assert len(written) == 3 and (written.charge_id == row["charge_id"]).all()
    # delivered on demand: the same values again, never recomputed, never charged
    (tmp_path / "out" / "run-2026-11-22--nightly.parquet").unlink()
    delivered = invoke("deliver", job(), "--run-id", "2026-11-22")
    assert delivered.exit_code == 0, delivered.output
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out"), written)
    assert len(history(ledger)) == 1
    done = invoke("run", job(), "--run-id", "2026-11-22")
    assert done.exit_code == 0 and "already released and delivered" in done.output
    assert len(history(ledger)) == 1


def test_a_full_disk_without_a_run_id_names_the_run_id_its_retry_needs(env, monkeypatch):
    """Without --run-id a run has a fresh id: its advice "run the same 'dpmic run'
    again (nothing more is charged)" charged a second release when followed. The
    advice names the run id; following it delivers without a charge."""
    tmp_path, ledger, job = env
    real = pd.DataFrame.to_parquet

    def disk_full(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", disk_full)
    failed = invoke("run", job())
    assert failed.exit_code == Exit.OUTPUT, failed.output
    (row,) = history(ledger)
    said = re.search(r"run 'dpmic run (\S+) --run-id ([^' ]+)'", failed.output)
    assert said is not None and said.group(2) == row["run_id"], failed.output
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)
    again = invoke("run", said.group(1), "--run-id", said.group(2))
    assert again.exit_code == 0, again.output
    assert [r["release"] for r in history(ledger)] == ["delivered"]


def test_no_copy_of_the_values_stays_behind_an_interrupted_or_killed_write(env, monkeypatch):
    """SIGINT while the output is written removes the half-written temporary copy
    (before, only an OSError did); a copy left by a writer that was killed
    (SIGKILL: no chance to clean up) is removed when a later delivery succeeds."""
    import signal
    import time

    from dpmic_dask.batch.interrupts import Interrupted

    tmp_path, ledger, job = env
    real = pd.DataFrame.to_parquet

    def interrupted(self, path, *args, **kwargs):
        with open(path, "wb") as handle:
            handle.write(b"PAR1")
        raise Interrupted(signal.SIGINT)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", interrupted)
    stopped = invoke("run", job(), "--run-id", "r")
    assert stopped.exit_code == Exit.INTERRUPTED, stopped.output
    assert every_file(tmp_path / "out") == []
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)
    # a killed writer's copy (untouched for longer than any delivery takes) and a
    # copy being written now (left alone)
    out = tmp_path / "out"
    stale = out / ".run-r--nightly.parquet.0123456789ab.tmp"
    fresh = out / ".run-r--nightly.parquet.ba9876543210.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"PAR1")
    old = time.time() - 16 * 60
    os.utime(stale, (old, old))
    again = invoke("run", job(), "--run-id", "r")
    assert again.exit_code == 0, again.output
    left = {p.name for p in out.iterdir()}
    assert "run-r--nightly.parquet" in left and stale.name not in left and fresh.name in left


@pytest.fixture
def small_file_system(tmp_path):
    """A 64 KiB tmpfs (root only) with one free page: room for the output check's
    probe file, none for the release."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a tmpfs needs root (the injected OSError test covers this)")
    try:
        (mount / "out").mkdir()
        with open(mount / "filler", "wb") as handle:
            handle.write(b"\0" * (60 * 1024))
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_real_full_file_system_keeps_the_release(env, small_file_system):
    tmp_path, ledger, job = env
    out = small_file_system / "out"
    path = job(replace={f'path = "{tmp_path / "out"}"': f'path = "{out}"'})
    failed = invoke("run", path, "--run-id", "night")
    assert failed.exit_code == Exit.OUTPUT, failed.output
    assert "No space left on device" in failed.output and every_file(out) == []
    with open(small_file_system / "last-page", "wb") as handle:
        handle.write(b"\0" * 4096)
    full = invoke("run", path, "--run-id", "night")  # not even the probe file fits now
    assert full.exit_code == Exit.OUTPUT and "kept in the ledger's journal" in full.output
    for name in ("filler", "last-page"):
        (small_file_system / name).unlink()
    again = invoke("run", path, "--run-id", "night")
    assert again.exit_code == 0, again.output
    assert every_file(out) == ["_pages", "run-night--nightly.parquet"]
    assert every_file(out / "_pages") == ["run-night--nightly.html", "run-night--nightly.txt"]
    assert [r["release"] for r in history(ledger)] == ["delivered"]


def test_deliver_refuses_a_run_that_never_charged(env):
    _, ledger, job = env
    result = invoke("deliver", job(), "--run-id", "never")
    assert result.exit_code == Exit.INVALID and "never charged" in result.output


def test_an_unwritable_output_folder_is_refused_before_the_charge(env):
    tmp_path, ledger, job = env
    (tmp_path / "out").mkdir()
    with read_only(tmp_path / "out"):
        result = invoke("run", job(), "--run-id", "r")
    assert result.exit_code == Exit.INVALID, result.output
    assert "output folder" in result.output
    assert history(ledger) == []


# ---------------------------------------------------------------- 1b. a delivery that is gone


def no_release(monkeypatch):
    """From here on a release would fail: what a run writes comes from the journal."""
    def no_cluster(**kwargs):
        raise AssertionError("a cluster was started for a run that already charged")

    monkeypatch.setattr("dpmic_dask.batch.cluster.open_cluster", no_cluster)


@pytest.mark.parametrize("loss", ["file", "folder", "truncated", "csv"])
def test_a_rerun_delivers_a_lost_output_again_from_the_journal(env, monkeypatch, loss):
    tmp_path, ledger, job = env
    out = tmp_path / "out"
    csv = {f'path = "{out}"': f'path = "{out}"\nformat = "csv"'} if loss == "csv" else {}
    path = job(replace=csv)
    first = invoke("run", path, "--run-id", "night")
    assert first.exit_code == 0, first.output
    written = out / f"run-night--nightly.{'csv' if csv else 'parquet'}"
    delivered = written.read_bytes()
    read = pd.read_csv if csv else pd.read_parquet
    released = read(written)
    no_release(monkeypatch)
    if loss == "folder":
        shutil.rmtree(out)
    elif loss == "truncated":  # damaged in place: not the released rows any more
        written.write_bytes(delivered[: len(delivered) // 2])
    else:
        written.unlink()

    again = invoke("run", path, "--run-id", "night")
    assert again.exit_code == 0, again.output
    (line,) = again.output.strip().splitlines()
    assert line.startswith("run night already released (charge ")
    assert ("cannot be read" if loss == "truncated" else f"{written} is missing") in line
    assert "delivered its journaled values again" in line and "nothing was charged" in line
    # the first delivery's values (same noise, time and charge), not a new release
    assert written.read_bytes() == delivered
    pd.testing.assert_frame_equal(read(written), released)
    page = out / "_pages" / "run-night--nightly.html"  # the run's page: kept, or rebuilt from the rows
    assert every_file(out) == ["_pages", written.name]
    assert every_file(out / "_pages") == [page.name, page.with_suffix(".txt").name]
    assert "Run night of job nightly" in page.read_text()
    (row,) = history(ledger)
    assert row["release"] == "delivered" and row["charge_id"] == released.charge_id[0]

    done = invoke("run", path, "--run-id", "night")
    assert done.exit_code == 0, done.output
    assert "already released and delivered" in done.output and "nothing to do" in done.output
    assert len(history(ledger)) == 1


def test_a_lost_output_that_cannot_be_written_again_names_dpmic_deliver(env, monkeypatch):
    tmp_path, ledger, job = env
    path = job()
    assert invoke("run", path, "--run-id", "night").exit_code == 0
    written = tmp_path / "out" / "run-night--nightly.parquet"
    released = pd.read_parquet(written)
    written.unlink()
    no_release(monkeypatch)
    with read_only(tmp_path / "out"):
        failed = invoke("run", path, "--run-id", "night")
    assert failed.exit_code == Exit.OUTPUT, failed.output
    (line,) = failed.output.strip().splitlines()
    assert line.startswith("error: run 'night' was released and delivered to output folder")
    assert f"{written} is missing, and it cannot be written again" in line
    assert f"'dpmic deliver {path} --run-id night'" in line
    assert "already released and delivered" not in line and not written.exists()
    assert [r["release"] for r in history(ledger)] == ["delivered"]

    delivered = invoke("deliver", path, "--run-id", "night")  # what the line says to run
    assert delivered.exit_code == 0, delivered.output
    pd.testing.assert_frame_equal(pd.read_parquet(written), released)
    assert len(history(ledger)) == 1


def test_a_rerun_restores_the_rows_of_a_sql_output(env, monkeypatch):
    tmp_path, ledger, job = env
    sql = f"sqlite:///{tmp_path / 'out.db'}"
    path = job(replace={f'path = "{tmp_path / "out"}"': f'sql_url = "{sql}"\nsql_table = "rel"'})
    assert invoke("run", path, "--run-id", "night").exit_code == 0
    engine = create_engine(sql)
    released = pd.read_sql_table("rel", engine)
    assert len(released) == 3
    no_release(monkeypatch)
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM rel")

    again = invoke("run", path, "--run-id", "night")
    assert again.exit_code == 0, again.output
    assert "but the table holds none of its 3 rows: delivered its journaled values again" \
        in again.output
    pd.testing.assert_frame_equal(pd.read_sql_table("rel", engine), released)
    done = invoke("run", path, "--run-id", "night")
    assert done.exit_code == 0 and "nothing to do" in done.output

    # some of the run's rows gone: a delivery leaves rows that are there, so it is
    # not written again; the line says how to restore it
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM rel WHERE rowid = (SELECT MIN(rowid) FROM rel)")
    partial = invoke("run", path, "--run-id", "night")
    assert partial.exit_code == Exit.OUTPUT, partial.output
    (line,) = partial.output.strip().splitlines()
    assert "the table holds 2 rows of it, not the 3 released" in line
    assert f"then run 'dpmic deliver {path} --run-id night'" in line
    refused = invoke("deliver", path, "--run-id", "night")  # never "there already"
    assert refused.exit_code == Exit.OUTPUT, refused.output
    assert "the table holds 2 rows of it, not the 3 released" in refused.output
    assert len(pd.read_sql_table("rel", engine)) == 2
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM rel")
    assert invoke("deliver", path, "--run-id", "night").exit_code == 0
    pd.testing.assert_frame_equal(pd.read_sql_table("rel", engine), released)
    engine.dispose()
    (row,) = history(ledger)
    assert row["release"] == "delivered"


# ---------------------------------------------------------------- 2. run ids per job


def test_two_jobs_with_one_run_id_both_run(env):
    tmp_path, ledger, job = env
    first = job("first.toml", replace={'name = "nightly"': 'name = "first"'})
    second = job("second.toml", replace={'name = "nightly"': 'name = "second"'})
    for path in (first, second):  # one dataset, one output folder, one run id
        result = invoke("run", path, "--run-id", "2026-11-22")
        assert result.exit_code == 0, result.output
        assert "released 3 pairs" in result.output
    assert every_file(tmp_path / "out") == ["_pages", "run-2026-11-22--first.parquet",
                                            "run-2026-11-22--second.parquet"]
    assert every_file(tmp_path / "out" / "_pages") == [
        f"run-2026-11-22--{n}.{e}" for n in ("first", "second") for e in ("html", "txt")]
    rows = history(ledger)
    assert [r["job_name"] for r in rows] == ["first", "second"]
    # each page: the dataset's ledger history up to its own run's charge
    pages = [tmp_path / "out" / "_pages" / f"run-2026-11-22--{n}.html" for n in ("first", "second")]
    first_page, second_page = (html.unescape(p.read_text()) for p in pages)
    assert first_page.count('<g class="charge') == 1 and second_page.count('<g class="charge') == 2
    assert '<g class="charge mine"' in first_page and '<g class="charge mine"' in second_page
    spent = sum(float(r["amount"]) for r in rows)
    assert f"{5.0 - spent:.6g} epsilon" in second_page
    assert all(f"{r['run_id']} / {r['job_name']}" in second_page for r in rows)
    assert f'<meta name="dpmic-ledger" content="{ledger}" />' in second_page
    chart = re.compile(r'<figure id="ledger-chart">.*?</table>', re.S)
    written = chart.search(second_page).group(0)
    assert invoke("report", str(tmp_path / "out")).exit_code == 0  # the ledger the page recorded
    assert chart.search(html.unescape(pages[1].read_text())).group(0) == written
    again = invoke("run", second, "--run-id", "2026-11-22")
    assert again.exit_code == 0 and "already released and delivered" in again.output
    assert len(history(ledger)) == 2


def test_without_a_name_the_job_is_named_after_its_file(env):
    tmp_path, ledger, job = env
    path = job("nightly-export.toml", replace={'name = "nightly"\n': ""})
    result = invoke("run", path, "--run-id", "r")
    assert result.exit_code == 0, result.output
    assert every_file(tmp_path / "out") == ["_pages", "run-r--nightly-export.parquet"]
    assert every_file(tmp_path / "out" / "_pages") == ["run-r--nightly-export.html",
                                                       "run-r--nightly-export.txt"]


# ---------------------------------------------------------------- 5. read-only ledgers


@contextmanager
def read_only(path):
    """Make ``path`` (a file or folder) read-only for this process, even as root."""
    if os.geteuid() == 0:  # root ignores permission bits, not the immutable flag
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if made.returncode != 0:
            pytest.skip("running as root without the immutable flag (chattr +i)")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_ledger_is_refused_as_such_before_the_cluster(env, monkeypatch, what):
    tmp_path, ledger, job = env
    target = tmp_path / "ledger.db" if what == "file" else tmp_path / "ledgers"
    if what == "folder":
        target.mkdir()
        ledger = f"sqlite:///{target / 'ledger.db'}"
        SQLLedger(ledger).init("d", Budget(5.0))

    def no_cluster(**kwargs):
        raise AssertionError("a cluster was started for a refused run")

    def no_data(job):
        raise AssertionError("data were read for a refused run")

    monkeypatch.setattr("dpmic_dask.batch.cluster.open_cluster", no_cluster)
    monkeypatch.setattr("dpmic_dask.batch.jobio.load_input", no_data)
    path = job(ledger=ledger)
    with read_only(target):
        result = invoke("run", path, "--run-id", "r")
        shown = invoke("budget", "show", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == Exit.LEDGER, result.output
    assert "read-only" in result.output and "corrupt" not in result.output
    assert "do not restore" in result.output
    # reading it is fine: a ledger that cannot be written is opened read-only
    assert shown.exit_code == 0 and "remaining: 5.0" in shown.output, shown.output


# ---------------------------------------------------------------- 9. forecasts


def test_forecast_counts_the_runs_the_budget_pays_for(tmp_path, env):
    _, _, job = env
    ledger = f"sqlite:///{tmp_path / 'thirty.db'}"
    SQLLedger(ledger).init("d", Budget(30.0))
    by_eps = invoke("budget", "forecast", "--ledger", ledger, "--dataset", "d", "--eps", "0.5")
    assert by_eps.exit_code == 0, by_eps.output
    assert "runs left: 60" in by_eps.output and "per run:   0.5 epsilon" in by_eps.output
    path = job(eps=0.5, ledger=ledger)
    by_job = invoke("budget", "forecast", "--job", path)
    assert by_job.exit_code == 0 and "runs left: 60" in by_job.output
    ran = invoke("run", path, "--run-id", "night-1")
    assert ran.exit_code == 0, ran.output
    assert "the remaining budget pays for 59 more runs of job 'nightly'" in ran.output
    odd = invoke("budget", "forecast", "--ledger", ledger, "--dataset", "d", "--eps", "0.7")
    assert odd.exit_code == Exit.OK and "runs left: 42" in odd.output  # 29.5 / 0.7 = 42.1
    both = invoke("budget", "forecast", "--ledger", ledger, "--dataset", "d")
    assert both.exit_code == Exit.INVALID and "exactly one of --eps, --job" in both.output


# ---------------------------------------------------------------- the docs a scheduler reads


def test_deploy_readme_and_cron_file_list_every_exit_code():
    from pathlib import Path

    deploy = Path(__file__).resolve().parents[2] / "deploy"
    readme = (deploy / "README.md").read_text()
    paragraph = readme.split("Exit codes for schedulers", 1)[1].split("\n\n", 1)[0]
    cron = "\n".join(line for line in (deploy / "cron" / "dpmic.cron").read_text().splitlines()
                     if line.startswith("#"))
    for code in Exit:
        assert f"{int(code)} " in paragraph, code
        assert f"{int(code)} " in cron.split("Exit codes:", 1)[1], code
    assert "releases once more" not in readme  # a retry never releases twice
