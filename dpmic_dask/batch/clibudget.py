"""``dpmic budget``: a dataset's budget in a persistent ledger (init, show,
history, forecast)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from dpmic_dask.batch.clibase import dataset_option, debug_option, handles_errors, ledger_option
from dpmic_dask.batch.forecast import forecast, remaining_words
from dpmic_dask.batch.jobplan import job_cost
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.batch.journal import release_status
from dpmic_dask.errors import LedgerError
from dpmic_dask.privacy.accounting import Budget, ledger_from_url
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.privacy.ledger import SQLLedger, describe


@click.group()
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
@click.option("--eps", "epsilon", type=float,
              help="Total epsilon the dataset may spend (required).")
@click.option("--epsilon", "old_epsilon", type=float, hidden=True,
              help="Deprecated spelling of --eps.")
@click.option("--delta", default=0.0, show_default=True, type=float,
              help="> 0 tracks the budget as zCDP (for Gaussian releases).")
@click.option("--unit", "privacy_unit", default=None,
              help="The privacy unit the budget protects (a column such as customer_id; "
                   "several as a+b). Default: one row. Releases of another unit are refused.")
@debug_option
@handles_errors
def budget_init(ledger_url, dataset, epsilon, old_epsilon, delta, privacy_unit, debug):
    """Create the ledger if needed and set DATASET's cap (once; never changed).

    \b
    Example:
      dpmic budget init --ledger sqlite:///ledger.db --dataset sales --eps 10
    """
    if old_epsilon is not None:
        click.echo("warning: --epsilon is deprecated; use --eps", err=True)
        if epsilon is not None:
            raise click.UsageError("give --eps only once (--epsilon is its old spelling)")
        epsilon = old_epsilon
    if epsilon is None:
        raise click.UsageError("Missing option '--eps'.")
    cap = Budget(epsilon, delta, privacy_unit)
    ledger_from_url(ledger_url).init(dataset, cap)
    amount = cap.measure.short_words(cap.cap)
    per = "" if privacy_unit is None else f" per {privacy_unit}"
    click.echo(f"dataset {dataset!r}: budget {amount} "
               f"(epsilon={epsilon:g}, delta={delta:g}){per}")


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
    ledger = ledger_from_url(ledger_url)
    cap = ledger.budget_for(dataset)
    if cap is None:
        raise LedgerError(f"dataset {dataset!r} has no budget in this ledger")
    spent = ledger.spent(dataset)
    releases = len(ledger.history(dataset))
    tracks = getattr(ledger, "tracks_approx_parts", False) and cap.measure.holds_approx_parts
    parts = ledger.approx_spent(dataset) if tracks else 0  # type: ignore[attr-defined]
    words = cap.measure.words
    click.echo(f"dataset:   {dataset}")
    click.echo(f"unit:      {cap.privacy_unit or 'one row'} (the privacy unit the budget "
               "protects; releases of another unit are refused)")
    click.echo(f"cap:       {cap.measure.cap_words(cap.cap, cap.epsilon, cap.delta)}")
    click.echo(f"spent:     {words(spent, cap.delta, f' in {releases} release(s)')}")
    if parts:
        click.echo(f"bad-event delta: {parts} (categories chosen from the values that occur; "
                   "it lowers the cap)")
    click.echo(f"remaining: {remaining_words(ledger, dataset)}")




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
    ledger = ledger_from_url(ledger_url)
    records = ledger.history(dataset)
    status = release_status(ledger, dataset) if isinstance(ledger, SQLLedger) else {}
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
    if (eps is None) == (job_file is None):
        raise click.UsageError("give exactly one of --eps, --job")
    if job_file is not None:
        job = load_job(job_file)
        ledger_url, dataset = job.ledger_url, dataset or job.dataset
        cost, what = job_cost(job), f"one run of job {job.name!r}"
    else:
        if dataset is None:
            raise click.UsageError("--eps needs --dataset")
        cost = measure_for(delta).total(eps, delta)
        what = f"eps={eps:g}" + (f", delta={delta:g}" if delta else "")
    plan = forecast(ledger_from_url(ledger_url), dataset, cost)
    click.echo(f"dataset:   {dataset}")
    click.echo(f"remaining: {plan.remaining} {plan.unit}")
    click.echo(f"per run:   {plan.per_run} {plan.unit} ({what})")
    click.echo(f"runs left: {plan.runs}")
