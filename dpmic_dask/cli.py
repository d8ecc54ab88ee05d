"""The ``dpmic`` command line. Thin: it parses options and calls the library.

Every command runs under :func:`handles_errors`, the one place where library
errors become exit codes and one-line messages. Messages of unexpected
(third-party) errors may quote data, so only their type is printed unless the
command was given ``--debug``.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import sys
import time
from enum import IntEnum
from pathlib import Path

import click

from .errors import (
    BudgetExceededError,
    DPMICError,
    LedgerError,
    ReleaseIncompleteError,
    RunClaimedError,
    UnavailableError,
)


class Exit(IntEnum):
    """Exit codes a scheduler can act on."""

    OK = 0
    UNEXPECTED = 1  #: a bug or an unforeseen failure (type printed; --debug for details)
    INVALID = 2  #: the job, its input or output, or an argument is invalid
    BUDGET = 3  #: the budget cannot pay for the release; nothing was released
    LEDGER = 4  #: the ledger is missing, unreachable, uninitialised or corrupt
    UNAVAILABLE = 5  #: the Dask scheduler or a SQL server did not answer in time
    RUN_CLAIMED = 6  #: the run already charged without kept values, or is charging now
    OUTPUT = 7  #: released and journaled, but the output could not be written


def exit_code(exc: BaseException) -> Exit:
    """The exit code for a library error."""
    from .joboutput import DeliveryError

    for kind, code in ((DeliveryError, Exit.OUTPUT),
                       (BudgetExceededError, Exit.BUDGET), (LedgerError, Exit.LEDGER),
                       (UnavailableError, Exit.UNAVAILABLE), (RunClaimedError, Exit.RUN_CLAIMED),
                       (ReleaseIncompleteError, Exit.RUN_CLAIMED),
                       (DPMICError, Exit.INVALID)):
        if isinstance(exc, kind):
            return code
    return Exit.UNEXPECTED


def stdout_echo(message=None, err: bool = False, **kwargs) -> None:
    """``click.echo`` that treats a closed standard output (a reader such as
    ``| head -1`` that went away) as done: the line and later ones are dropped
    quietly; the command's outcome and exit code do not change."""
    try:
        click.echo(message, err=err, **kwargs)
    except BrokenPipeError:
        if err:
            raise
        _drop_stdout()


def _drop_stdout() -> None:
    """Point standard output at /dev/null (no error when Python flushes it at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests): nothing to do
        pass


def handles_errors(command):
    """Map library errors to one line on stderr and an :class:`Exit` code.

    SIGINT and SIGTERM end the command the same way (after the cluster is
    closed): one line saying whether the budget may have been charged, and exit
    code 130 or 143 (``128 + signal``); see :mod:`dpmic_dask.interrupts`.
    """
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from .interrupts import Interrupted, message, signals_as_exceptions

        try:
            with signals_as_exceptions():
                return command(*args, **kwargs)
        except Interrupted as exc:
            failure, code = message(exc), exc.exit_code
        except KeyboardInterrupt:  # a SIGINT outside the main thread's handler
            failure, code = message(Interrupted(signal.SIGINT)), 128 + signal.SIGINT
        except DPMICError as exc:
            failure = f"error: {exc}"
            code = exit_code(exc)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # third-party messages may quote data: name the type only
            if kwargs.get("debug"):
                raise
            failure = (f"error: unexpected {type(exc).__name__}; rerun with --debug for details "
                       "(they may show data values)")
            code = Exit.UNEXPECTED
        click.echo(failure, err=True)
        sys.exit(int(code))
    return wrapper


#: Run ids name output files and ledger claims: letters, digits and ``._:+-``,
#: starting with a letter or digit, at most 128 characters.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$")


def check_run_id(ctx, param, value):
    """Click callback: a valid run id, or ``None`` when none was given."""
    if value is None:
        return None
    if not RUN_ID.match(value) or ".." in value:
        raise click.BadParameter(
            "use 1-128 letters, digits and . _ : + - (starting with a letter or digit, "
            "no '..'), e.g. 2026-11-22", ctx=ctx, param=param)
    return value


debug_option = click.option(
    "--debug", is_flag=True,
    help="Show the full traceback of an unexpected failure (it may quote data).")
ledger_option = click.option(
    "--ledger", "ledger_url", envvar="DPMIC_LEDGER", default="sqlite:///dpmic-ledger.db",
    show_default=True, help="Ledger URL: sqlite:///path.db or postgresql://... "
    "(env DPMIC_LEDGER).")
dataset_option = click.option("--dataset", required=True, help="Dataset id the budget belongs to.")


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
    if verbose:
        import logging

        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
        logger = logging.getLogger("dpmic_dask")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


@main.command()
@click.option("--rows", default=1_000_000, show_default=True, type=click.IntRange(min=4),
              help="Rows of generated data.")
@click.option("--partitions", default=8, show_default=True, type=click.IntRange(min=1))
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
    ddf.dpmic.pairwise(eps) once, and writes results.csv, heatmap.png and
    report.txt into OUT.

    \b
    Example:
      dpmic demo --rows 200000 --eps 0.5 --out /tmp/demo
    """
    from .cluster import open_cluster
    from .demo import DEMO_BOUNDS, demo_frame
    from .jobio import prepare_folder

    prepare_folder(out_dir, "--out")
    start = time.perf_counter()
    click.echo(f"Starting a local Dask cluster with {workers} worker process(es)...")
    with open_cluster(scheduler=None, workers=workers):
        ddf = demo_frame(rows, partitions)
        click.echo(f"Releasing private MIC for {len(DEMO_BOUNDS)} columns "
                   f"({len(DEMO_BOUNDS) * (len(DEMO_BOUNDS) - 1) // 2} pairs) of "
                   f"{rows:,} generated rows at eps = {eps:g}...")
        result = ddf.dpmic.pairwise(eps, bounds=DEMO_BOUNDS, dataset="demo")
    table = result.to_pandas().sort_values("mic", ascending=False)
    table.to_csv(out_dir / "results.csv", index=False)
    (out_dir / "report.txt").write_text(result.report() + "\n")
    click.echo("")
    click.echo(table[["x", "y", "mic", "ci95"]].to_string(index=False, float_format="%.3f"))
    click.echo("")
    click.echo(result.report())
    try:
        result.plot(path=out_dir / "heatmap.png")
        wrote = "results.csv, heatmap.png, report.txt"
    except ImportError:
        wrote = "results.csv, report.txt (install 'dpmic_dask[plot]' for heatmap.png)"
    click.echo(f"\nWrote {wrote} to {out_dir}/ in {time.perf_counter() - start:.1f} s.")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@debug_option
@handles_errors
def validate(job_file, debug):
    """Check JOB_FILE without reading data, connecting or touching the budget.

    It runs every check 'dpmic run' makes before reading data: keys and types,
    bounds and fill values, the mechanism and its budget kind, grid-size limits,
    addresses and URLs. Whether the input has the columns is checked by 'run'.

    \b
    Example:
      dpmic validate jobs/daily.toml
    """
    from .jobs import load_job

    job = load_job(job_file)
    pairs = len(job.bounds) * (len(job.bounds) - 1) // 2
    click.echo(f"{job_file}: ok ({len(job.bounds)} columns, {pairs} pairs, eps={job.eps:g}, "
               f"dataset {job.dataset!r}, ledger {job.ledger_url})")


run_id_help = ("Idempotency key (e.g. the schedule's logical date), per dataset and job: "
               "a run id that already charged is never charged again; its journaled "
               "values are delivered if they were not. 1-128 letters, digits and ._:+-")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run-id", default=None, callback=check_run_id, help=run_id_help)
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: only on a terminal).")
@click.option("--debug", is_flag=True,
              help="Show the full traceback of an unexpected failure (it may quote data).")
@handles_errors
def run(job_file, run_id, progress, debug):
    """Run JOB_FILE: one private release, charged to the job's ledger.

    Order: check the job, the run id and that the ledger can be written; if this
    job already charged this run id, deliver its journaled values (if not yet
    delivered) and stop; check the output and the budget -- nothing is charged
    and no cluster is started if any of these fails; start or reach the
    cluster; read and count the input; charge once, committed together with the
    released values (the ledger's journal); write them to the output.

    \b
    Example:
      dpmic run jobs/daily.toml --run-id 2026-11-22
    """
    import uuid

    from .batch import run_job
    from .jobs import load_job

    job = load_job(job_file)
    run_job(job, run_id or uuid.uuid4().hex, progress=progress, echo=stdout_echo)


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run-id", required=True, callback=check_run_id,
              help="The run whose journaled values to write.")
@debug_option
@handles_errors
def deliver(job_file, run_id, debug):
    """Write the journaled values of a charged run of JOB_FILE to its output.

    Use it after 'dpmic run' exited 7 (the output could not be written), or to
    write a release again (a file is rewritten with the same rows; a SQL table
    that holds the run's rows is left as it is). Nothing is computed and nothing
    is charged: the values are those released and kept with the charge.

    \b
    Example:
      dpmic deliver jobs/daily.toml --run-id 2026-11-22
    """
    from .batch import deliver_job
    from .jobs import load_job

    deliver_job(load_job(job_file), run_id, echo=stdout_echo)


@main.group()
def budget():
    """Create and inspect a dataset's privacy budget in a persistent ledger.

    \b
    Example:
      dpmic budget init --ledger sqlite:///ledger.db --dataset sales --eps 10
      dpmic budget show --ledger sqlite:///ledger.db --dataset sales
    """


@budget.command("init")
@ledger_option
@dataset_option
@click.option("--eps", "epsilon", type=float, help="Total epsilon the dataset may spend.")
@click.option("--epsilon", "old_epsilon", type=float, hidden=True,
              help="Deprecated spelling of --eps.")
@click.option("--delta", default=0.0, show_default=True, type=float,
              help="> 0 tracks the budget as zCDP (for Gaussian releases).")
@debug_option
@handles_errors
def budget_init(ledger_url, dataset, epsilon, old_epsilon, delta, debug):
    """Create the ledger if needed and set DATASET's cap (once; never changed).

    \b
    Example:
      dpmic budget init --ledger sqlite:///ledger.db --dataset sales --eps 10
    """
    from .accounting import Budget
    from .ledger import SQLLedger

    if old_epsilon is not None:
        click.echo("warning: --epsilon is deprecated; use --eps", err=True)
        if epsilon is not None:
            raise click.UsageError("give --eps only once (--epsilon is its old spelling)")
        epsilon = old_epsilon
    if epsilon is None:
        raise click.UsageError("Missing option '--eps'.")
    cap = Budget(epsilon, delta)
    SQLLedger(ledger_url).init(dataset, cap)
    unit = "epsilon" if cap.is_pure else "rho (zCDP)"
    click.echo(f"dataset {dataset!r}: budget {cap.cap} {unit} "
               f"(epsilon={epsilon:g}, delta={delta:g})")


@budget.command("show")
@ledger_option
@dataset_option
@debug_option
@handles_errors
def budget_show(ledger_url, dataset, debug):
    """Print DATASET's cap, spent and remaining budget.

    \b
    Example:
      dpmic budget show --ledger sqlite:///ledger.db --dataset sales
    """
    from .ledger import SQLLedger

    ledger = SQLLedger(ledger_url)
    cap = ledger.budget_for(dataset)
    if cap is None:
        raise LedgerError(f"dataset {dataset!r} has no budget in this ledger")
    spent, left = ledger.spent(dataset), ledger.remaining(dataset)
    releases = len(ledger.history(dataset))
    unit = "epsilon" if cap.is_pure else "rho"
    click.echo(f"dataset:   {dataset}")
    click.echo(f"cap:       {cap.cap} {unit} (epsilon={cap.epsilon:g}, delta={cap.delta:g})")
    click.echo(f"spent:     {spent} {unit} in {releases} release(s)")
    click.echo(f"remaining: {left} {unit}")


@budget.command("history")
@ledger_option
@dataset_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@debug_option
@handles_errors
def budget_history(ledger_url, dataset, as_json, debug):
    """List DATASET's releases, oldest first.

    A batch run's release is "delivered" (written to its output), "undelivered"
    (its values are kept in the ledger's journal: 'dpmic deliver' writes them)
    or "lost" (charged, but its values were not kept).

    \b
    Example:
      dpmic budget history --ledger sqlite:///ledger.db --dataset sales --json
    """
    import json

    from .journal import release_status
    from .ledger import SQLLedger, describe

    ledger = SQLLedger(ledger_url)
    records = ledger.history(dataset)
    status = release_status(ledger, dataset)
    rows = [{**describe(r), "release": status.get(r.charge_id)} for r in records]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    if not rows:
        click.echo("no releases yet")
    for row in rows:
        click.echo(f"{row['time']}  {row['amount']:>12}  eps={row['epsilon']:g} "
                   f"delta={row['delta']:g}  {row['mechanism'] or '-'}  {row['job']}  "
                   f"columns={','.join(row['columns'])}  "
                   + (f"run={row['run_id']} ({row['release']})  " if row["run_id"] else "")
                   + f"[{row['charge_id']}]")


@budget.command("forecast")
@ledger_option
@click.option("--dataset", default=None, help="Dataset id (default: the job's).")
@click.option("--eps", type=click.FloatRange(min=0, min_open=True),
              help="What one run spends (or give --job).")
@click.option("--delta", default=0.0, show_default=True, type=float,
              help="With --eps: the delta of one (Gaussian) run.")
@click.option("--job", "job_file", type=click.Path(dir_okay=False, path_type=Path),
              help="A job file: one run of it (its ledger and dataset unless given).")
@debug_option
@handles_errors
def budget_forecast(ledger_url, dataset, eps, delta, job_file, debug):
    """How many more runs DATASET's remaining budget pays for.

    \b
    Example:
      dpmic budget forecast --job jobs/daily.toml
      dpmic budget forecast --ledger sqlite:///ledger.db --dataset sales --eps 0.5
    """
    from .batch import forecast
    from .costs import measure_for
    from .ledger import SQLLedger

    if (eps is None) == (job_file is None):
        raise click.UsageError("give exactly one of --eps, --job")
    if job_file is not None:
        from .jobplan import job_cost
        from .jobs import load_job

        job = load_job(job_file)
        ledger_url, dataset = job.ledger_url, dataset or job.dataset
        cost, what = job_cost(job), f"one run of job {job.name!r}"
    else:
        if dataset is None:
            raise click.UsageError("--eps needs --dataset")
        cost = measure_for(delta).total(eps, delta)
        what = f"eps={eps:g}" + (f", delta={delta:g}" if delta else "")
    plan = forecast(SQLLedger(ledger_url), dataset, cost)
    click.echo(f"dataset:   {dataset}")
    click.echo(f"remaining: {plan.remaining} {plan.unit}")
    click.echo(f"per run:   {plan.per_run} {plan.unit} ({what})")
    click.echo(f"runs left: {plan.runs}")


if __name__ == "__main__":  # pragma: no cover
    main()
