"""The ``dpmic`` command line. Thin: it parses options and calls the library.

Every command runs under :func:`~dpmic_dask.batch.clibase.handles_errors`, the one
place where library errors become exit codes and one-line messages; the
``budget`` commands are in :mod:`dpmic_dask.batch.clibudget`.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
import warnings
from pathlib import Path

import click

from dpmic_dask.backends import backend_for
from dpmic_dask.batch import cluster, jobio  # modules: their functions looked up when called
from dpmic_dask.batch.clibase import (  # noqa: F401  (Exit and exit_code: the codes of this command line)
    Exit,
    debug_option,
    exit_code,
    handles_errors,
    stdout_echo,
)
from dpmic_dask.batch.clibudget import budget
from dpmic_dask.batch.demo import DEMO_BOUNDS, demo_frame
from dpmic_dask.batch.jobcausal import causal_plan_lines
from dpmic_dask.batch.jobfile import JobError
from dpmic_dask.batch.jobio import JobIOError, prepare_folder
from dpmic_dask.batch.jobplan import job_cost, job_release_plan
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.batch.outputnames import retarget
from dpmic_dask.batch.pageledger import redacted
from dpmic_dask.batch.runner import deliver_job, run_job
from dpmic_dask.batch.runpage import rebuild
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, UnusedParameterWarning
from dpmic_dask.release.charge import warn_large_epsilon
from dpmic_dask.release.public_plan import explain_lines

#: Run ids name output files and ledger claims: letters, digits and ``._:+-``,
#: starting with a letter or digit, at most 128 characters.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$")


_python_format = warnings.formatwarning


def _one_line(message, category, filename, lineno, line=None) -> str:
    """The package's own warnings on the command line: one line, ``warning: ...``
    (Python's format adds the source file and line of the library); others as
    Python formats them."""
    if category.__module__.startswith("dpmic_dask"):
        return f"warning: {message}\n"
    return _python_format(message, category, filename, lineno, line)


def check_run_id(ctx, param, value):
    """Click callback: a valid run id, or ``None`` when none was given."""
    if value is None:
        return None
    if not RUN_ID.match(value) or ".." in value:
        raise click.BadParameter(
            "use 1-128 letters, digits and . _ : + - (starting with a letter or digit, "
            "no '..'), e.g. 2026-11-22", ctx=ctx, param=param)
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dpmic_dask")
@click.option("-v", "--verbose", is_flag=True,
              help="Log the stages of each release (validated, counted, charged, released) "
                   "to stderr; log lines never carry data values.")
def main(verbose):
    """Differentially private Maximal Information Coefficients on Dask.

    Exit codes: 0 success, 1 unexpected failure, 2 invalid job, input or
    argument, 3 budget exceeded (nothing released), 4 ledger missing,
    unreachable or corrupt, 5 Dask scheduler or SQL server did not answer in
    time (nothing charged), 6 run id already charged without kept values, or
    charging now, 7 released and journaled but the output could not be written
    (retry, or 'dpmic deliver'), 130 interrupted by SIGINT (Ctrl-C), 143 ended by
    SIGTERM (each with one line saying whether anything was charged).

    \b
    Example:
      dpmic demo --rows 1000000 --eps 1
    """
    warnings.formatwarning = _one_line
    if verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
        logger = logging.getLogger("dpmic_dask")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


@main.command()
@click.option("--rows", default=1_000_000, show_default=True, type=click.IntRange(min=4),
              help="Rows of generated data.")
@click.option("--partitions", default=8, show_default=True, type=click.IntRange(min=1),
              help="Dask partitions of the generated table.")
@click.option("--eps", default=1.0, show_default=True,
              type=click.FloatRange(min=0, min_open=True, max=1e6),
              help="Total privacy budget of the release (> 0).")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(min=1),
              help="Worker processes of the local Dask cluster.")
@click.option("--out", "out_dir", default="dpmic-demo-output", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Where the table, heatmap and report are written.")
@debug_option
@handles_errors
def demo(rows, partitions, eps, workers, out_dir, debug):
    """Generate a table and release the private MIC of every column pair.

    Starts a local Dask cluster, generates ROWS rows with nonlinear, linear,
    discrete and independent columns on the workers, runs
    ddf.dpmic.pairwise(eps) once, and writes results.csv, heatmap.png,
    report.txt and report.html (one self-contained page) into OUT.

    \b
    Example:
      dpmic demo --rows 200000 --eps 0.5 --out /tmp/demo
    """
    cluster.check_local_workers(workers, "--workers")  # refused before anything starts
    prepare_folder(out_dir, "--out")
    start = time.perf_counter()
    click.echo(f"Starting a local Dask cluster with {workers} worker process(es)...")
    with cluster.open_cluster(scheduler=None, workers=workers):
        ddf = demo_frame(rows, partitions)
        click.echo(f"Releasing private MIC for {len(DEMO_BOUNDS)} columns "
                   f"({len(DEMO_BOUNDS) * (len(DEMO_BOUNDS) - 1) // 2} pairs) of "
                   f"{rows:,} generated rows at eps = {eps:g}...")
        result = ddf.dpmic.pairwise(eps, bounds=DEMO_BOUNDS, dataset="demo")
    table = result.to_pandas().sort_values("mic", ascending=False)
    table.to_csv(out_dir / "results.csv", index=False)
    (out_dir / "report.txt").write_text(result.report() + "\n", encoding="utf-8")
    page = result.to_html(out_dir / "report.html")
    click.echo("")
    click.echo(table[["x", "y", "mic", "ci95"]].to_string(index=False, float_format="%.3f"))
    click.echo("")
    click.echo(result.report())
    try:
        result.plot(path=out_dir / "heatmap.png")
        wrote = "results.csv, heatmap.png, report.txt, report.html"
    except ImportError:
        wrote = ("results.csv, report.txt, report.html (install 'dpmic_dask[plot]' for "
                 "heatmap.png)")
    click.echo(f"\nWrote {wrote} to {out_dir}/ in {time.perf_counter() - start:.1f} s.")
    click.echo(f"Open the report: {page}")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--schema", "read_schema", is_flag=True,
              help="Also open the input's schema (column names and types: Parquet metadata, "
                   "a CSV sample, the SQL catalogue) and check every column against it as "
                   "'run' does: its kind, casts, bounds and fill values. Nothing is "
                   "computed or charged.")
@debug_option
@handles_errors
def validate(job_file, read_schema, debug):
    """Check JOB_FILE without reading data, connecting or touching the budget.

    It runs the checks of the job file 'dpmic run' makes before reading data:
    keys and types, bounds and fill values (in each column's kind: numbers,
    dates and times, durations, booleans), the mechanism and its budget kind,
    grid-size limits, addresses and URLs, on the schema the job declares; the
    ledger, the budget and the output (a probe file or row) are checked by
    'dpmic run', before its charge. With --schema it opens
    the input's schema and checks the columns' real types too: every column
    'run' would refuse from the schema is refused here, one line naming it and
    its type, and the release plan is printed as plan.explain() prints it: the
    steps, each one's part of the budget, each column's kind and where its
    bounds and categories come from, and the noise each value will get.

    \b
    Example:
      dpmic validate jobs/daily.toml
      dpmic validate --schema jobs/daily.toml
    """
    job = load_job(job_file)
    warn_large_epsilon(job_cost(job))  # said, as 'run' says it before its charge
    planned = _check_input_schema(job) if read_schema else None
    pairs = len(job.bounds) * (len(job.bounds) - 1) // 2
    what = f"{pairs} pair{'s' if pairs != 1 else ''}" if job.causal is None else "a causal graph"
    click.echo(f"{job_file}: ok ({len(job.bounds)} columns, {what}, eps={job.eps:g}, "
               f"dataset {job.dataset!r}, ledger {redacted(job.ledger_url)})")
    if planned is not None:  # the release plan, as plan.explain() says it
        click.echo("\n".join(_plan_lines(planned, job)))


def _plan_lines(planned, job) -> list[str]:
    """A job's plan in words: a release's as plan.explain() says it, a causal
    graph's test, charge, release and columns."""
    if job.causal is None:
        return explain_lines(planned, None)
    return causal_plan_lines(planned, job)


def _check_input_schema(job):
    """Plan the job's release on its input's schema, as 'run' does (nothing read
    but the schema, nothing charged), and return the plan; a refusal is one line
    naming the job file."""
    frame = jobio.load_input(job)
    try:
        return job_release_plan(job, backend_for(frame).schema(frame))
    except (InvalidDataError, InvalidParameterError, JobIOError) as exc:
        raise JobError(f"{job.source}: {exc}") from None


run_id_help = ("Idempotency key (e.g. the schedule's logical date), per dataset and job: "
               "a run id that already charged is never charged again; its journaled "
               "values are delivered if they were not, or if the output lost them. "
               "Without it every call is a new release under a fresh id, charged again: "
               "a scheduler should pass one. 1-128 letters, digits and ._:+-")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run-id", default=None, callback=check_run_id, help=run_id_help)
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: only on a terminal).")
@click.option("--dry-run", is_flag=True,
              help="Plan the release on the input's schema and print the plan (its steps, "
                   "their parts of the budget, each column's kind and where its bounds and "
                   "categories come from, the noise each value will get); nothing is read "
                   "but the schema, nothing is charged, no cluster is started.")
@click.option("--debug", is_flag=True,
              help="Show the full traceback of an unexpected failure (it may quote data).")
@handles_errors
def run(job_file, run_id, progress, dry_run, debug):
    """Run JOB_FILE: one private release, charged to the job's ledger.

    Order: check the job, the run id and that the ledger can be written; if this
    job already charged this run id, deliver its journaled values (if not yet
    delivered, or if the delivered file or table rows are missing now; exit 7
    naming 'dpmic deliver' if they cannot be written again) and stop -- nothing
    is charged again; check the output and the budget -- nothing is charged
    and no cluster is started if any of these fails; start or reach the
    cluster; read and count the input; charge once, committed together with the
    released values (the ledger's journal); write them to the output.

    \b
    Example:
      dpmic run jobs/daily.toml --run-id 2026-11-22
      dpmic run jobs/daily.toml --dry-run
    """
    job = load_job(job_file)
    if dry_run:  # the plan, as 'dpmic validate --schema' prints it; nothing charged
        planned = _check_input_schema(job)
        click.echo("\n".join(_plan_lines(planned, job)))
        click.echo(f"{job_file}: nothing was read but the input's schema, nothing charged")
        return
    with warnings.catch_warnings():
        # said once, by load_job's check of the job's parameters: the run plans
        # the same release again (its budget, then the release itself)
        warnings.simplefilter("ignore", UnusedParameterWarning)
        run_job(job, run_id or uuid.uuid4().hex, progress=progress, echo=stdout_echo)


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run-id", required=True, callback=check_run_id,
              help="The run whose journaled values to write.")
@click.option("--to", "to_folder", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Write them to this folder instead of the job's output.")
@click.option("--to-sql", default=None, metavar="URL",
              help="Write them to a SQL table at this URL instead (with --table).")
@click.option("--table", default=None, help="The SQL table of --to-sql.")
@debug_option
@handles_errors
def deliver(job_file, run_id, to_folder, to_sql, table, debug):
    """Write the journaled values of a charged run of JOB_FILE to its output.

    Use it after 'dpmic run' exited 7 (the output could not be written), or to
    write a release again (a file is rewritten with the same rows; a SQL table
    that holds the run's rows is left as it is, and one that holds only some of
    them is refused, exit 7: delete those first). Nothing is computed and nothing
    is charged: the values are those released and kept with the charge.

    With --to (a folder) or --to-sql and --table, they go there instead (the old
    output is lost, say): JOB_FILE stays as it was when the run released, since
    it identifies the run; the delivery is recorded in the ledger's journal.

    \b
    Examples:
      dpmic deliver jobs/daily.toml --run-id 2026-11-22
      dpmic deliver jobs/daily.toml --run-id 2026-11-22 --to /mnt/new-disk/releases
    """
    job = load_job(job_file)
    target = retarget(job, folder=to_folder, sql_url=to_sql, sql_table=table)
    deliver_job(job, run_id, echo=stdout_echo, target=target)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--ledger", "ledger_url", default=None,
              help="Ledger URL to read a job's ledger history from (default: the one "
              "its page recorded).")
@debug_option
@handles_errors
def report(run_dir, ledger_url, debug):
    """Rebuild the HTML page (report.html) of a delivered run from its files.

    RUN_DIR is a folder 'dpmic demo' wrote (results.csv and report.txt), a
    causal run's folder (edges.csv, separating_sets.json, graph.dot,
    report.txt), a pairwise run's file (run-*.parquet or run-*.csv: the page is
    written to _pages/ beside it, as _pages/run-<id>--<job>.html), or an output
    folder (a page for each run in it; a symbolic link among the files is
    refused). Only the delivered files are read, and for a job's page (a
    pairwise run's file, a causal run's folder) its dataset's ledger history
    (from --ledger, else the ledger URL the page recorded; the section says so
    when neither can be read): no data, no charge.

    \b
    Example:
      dpmic report dpmic-demo-output
      dpmic report out/run-2026-11-22--nightly.parquet
    """
    for page in rebuild(run_dir, ledger_url):
        click.echo(f"wrote {page}")


main.add_command(budget)


if __name__ == "__main__":  # pragma: no cover
    main()
