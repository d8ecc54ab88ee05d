"""The ``dpmic`` command line. Thin: it parses options and calls the library."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .errors import BudgetExceededError, DPMICError, LedgerError

#: Exit codes a scheduler can act on.
EXIT_OK, EXIT_UNEXPECTED, EXIT_INVALID, EXIT_BUDGET, EXIT_LEDGER = 0, 1, 2, 3, 4


def _fail(exc: Exception) -> None:
    code = EXIT_INVALID
    if isinstance(exc, BudgetExceededError):
        code = EXIT_BUDGET
    elif isinstance(exc, LedgerError):
        code = EXIT_LEDGER
    click.echo(f"error: {exc}", err=True)
    sys.exit(code)


ledger_option = click.option(
    "--ledger", "ledger_url", envvar="DPMIC_LEDGER", default="sqlite:///dpmic-ledger.db",
    show_default=True, help="Ledger URL: sqlite:///path.db or postgresql://... "
    "(env DPMIC_LEDGER).")
dataset_option = click.option("--dataset", required=True, help="Dataset id the budget belongs to.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dpmic_dask")
def main():
    """Differentially private Maximal Information Coefficients on Dask.

    Exit codes: 0 success, 1 unexpected failure, 2 invalid input, 3 budget
    exceeded (nothing released), 4 ledger missing, unreachable or corrupt.

    \b
    Example:
      dpmic demo --rows 1000000 --eps 1
    """


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
def demo(rows, partitions, eps, workers, out_dir):
    """Generate a table and release the private MIC of every column pair.

    Starts a local Dask cluster, generates ROWS rows with nonlinear, linear,
    discrete and independent columns on the workers, runs
    ddf.dpmic.pairwise(eps) once, and writes results.csv, heatmap.png and
    report.txt into OUT.

    \b
    Example:
      dpmic demo --rows 200000 --eps 0.5 --out /tmp/demo
    """
    from distributed import Client, LocalCluster

    from .demo import DEMO_BOUNDS, demo_frame

    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    click.echo(f"Starting a local Dask cluster with {workers} worker process(es)...")
    try:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            ddf = demo_frame(rows, partitions)
            click.echo(f"Releasing private MIC for {len(DEMO_BOUNDS)} columns "
                       f"({len(DEMO_BOUNDS) * (len(DEMO_BOUNDS) - 1) // 2} pairs) of "
                       f"{rows:,} generated rows at eps = {eps:g}...")
            result = ddf.dpmic.pairwise(eps, bounds=DEMO_BOUNDS, dataset="demo")
    except DPMICError as exc:
        _fail(exc)
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
def validate(job_file):
    """Check JOB_FILE without reading data or touching the budget.

    \b
    Example:
      dpmic validate jobs/daily.toml
    """
    from .jobs import load_job

    try:
        job = load_job(job_file)
    except DPMICError as exc:
        _fail(exc)
    pairs = len(job.bounds) * (len(job.bounds) - 1) // 2
    click.echo(f"{job_file}: ok ({len(job.bounds)} columns, {pairs} pairs, eps={job.eps:g}, "
               f"dataset {job.dataset!r}, ledger {job.ledger_url})")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run-id", default=None,
              help="Idempotency key (e.g. the schedule's logical date): a run id that "
                   "already wrote its rows is not released again.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: only on a terminal).")
@click.option("--debug", is_flag=True,
              help="Show the full traceback of an unexpected failure (it may quote data).")
def run(job_file, run_id, progress, debug):
    """Run JOB_FILE: one private release, charged to the job's ledger.

    Order: check the job, the ledger and the output (nothing charged on
    failure); read and count the input on the cluster; charge once; add noise;
    append the rows atomically to the output.

    \b
    Example:
      dpmic run jobs/daily.toml --run-id 2026-11-22
    """
    import uuid

    from .jobio import check_output_writable, load_input, output_has_run, result_rows, write_output
    from .jobs import load_job
    from .ledger import SQLLedger

    try:
        job = load_job(job_file)
        ledger = SQLLedger(job.ledger_url)
        if ledger.budget_for(job.dataset) is None:
            raise LedgerError(f"dataset {job.dataset!r} has no budget in {job.ledger_url}; "
                              "run 'dpmic budget init' first")
        run_id = run_id or uuid.uuid4().hex
        check_output_writable(job)
        if output_has_run(job, run_id):
            click.echo(f"run {run_id} already released; nothing to do")
            return
        with _cluster(job):
            frame = load_input(job)
            result = frame.dpmic.pairwise(
                job.eps, bounds=job.bounds, delta=job.delta, mechanism=job.mechanism,
                B=job.B, c=job.c, nulls=job.nulls, fill=job.fill, ledger=ledger,
                dataset=job.dataset, progress=progress, label=job.name)
        where = write_output(job, result_rows(result, run_id=run_id, job=job), run_id)
    except DPMICError as exc:
        _fail(exc)
    except Exception as exc:  # third-party messages may quote data: name the type only
        if debug:
            raise
        click.echo(f"error: unexpected {type(exc).__name__}; rerun with --debug for details "
                   "(they may show data values)", err=True)
        sys.exit(EXIT_UNEXPECTED)
    click.echo(f"run {run_id}: released {len(result.pairs)} pairs "
               f"({result.mechanism}, eps={result.epsilon:g}) to {where}")
    click.echo(f"remaining budget of {job.dataset!r}: {ledger.remaining(job.dataset)}")


def _cluster(job):
    """A Dask client for the job: its scheduler address, or a local cluster."""
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    from .jobio import JobIOError

    stack = ExitStack()
    try:
        if job.scheduler:
            stack.enter_context(Client(job.scheduler, timeout="30s"))
        else:
            cluster = stack.enter_context(LocalCluster(
                n_workers=job.workers, threads_per_worker=1, processes=True,
                dashboard_address=None))
            stack.enter_context(Client(cluster))
    except OSError as exc:
        stack.close()
        raise JobIOError(f"cannot reach the Dask scheduler: {exc.__class__.__name__}") from None
    return stack


@main.group()
def budget():
    """Create and inspect a dataset's privacy budget in a persistent ledger.

    \b
    Example:
      dpmic budget init --ledger sqlite:///ledger.db --dataset sales --epsilon 10
      dpmic budget show --ledger sqlite:///ledger.db --dataset sales
    """


@budget.command("init")
@ledger_option
@dataset_option
@click.option("--epsilon", required=True, type=float, help="Total epsilon the dataset may spend.")
@click.option("--delta", default=0.0, show_default=True, type=float,
              help="> 0 tracks the budget as zCDP (for Gaussian releases).")
def budget_init(ledger_url, dataset, epsilon, delta):
    """Create the ledger if needed and set DATASET's cap (once; never changed).

    \b
    Example:
      dpmic budget init --ledger sqlite:///ledger.db --dataset sales --epsilon 10
    """
    from .accounting import Budget
    from .ledger import SQLLedger

    try:
        cap = Budget(epsilon, delta)
        SQLLedger(ledger_url).init(dataset, cap)
    except DPMICError as exc:
        _fail(exc)
    unit = "epsilon" if cap.is_pure else "rho (zCDP)"
    click.echo(f"dataset {dataset!r}: budget {cap.cap} {unit} "
               f"(epsilon={epsilon:g}, delta={delta:g})")


@budget.command("show")
@ledger_option
@dataset_option
def budget_show(ledger_url, dataset):
    """Print DATASET's cap, spent and remaining budget.

    \b
    Example:
      dpmic budget show --ledger sqlite:///ledger.db --dataset sales
    """
    from .ledger import SQLLedger

    try:
        ledger = SQLLedger(ledger_url)
        cap = ledger.budget_for(dataset)
        if cap is None:
            raise LedgerError(f"dataset {dataset!r} has no budget in this ledger")
        spent, left = ledger.spent(dataset), ledger.remaining(dataset)
        releases = len(ledger.history(dataset))
    except DPMICError as exc:
        _fail(exc)
    unit = "epsilon" if cap.is_pure else "rho"
    click.echo(f"dataset:   {dataset}")
    click.echo(f"cap:       {cap.cap} {unit} (epsilon={cap.epsilon:g}, delta={cap.delta:g})")
    click.echo(f"spent:     {spent} {unit} in {releases} release(s)")
    click.echo(f"remaining: {left} {unit}")


@budget.command("history")
@ledger_option
@dataset_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def budget_history(ledger_url, dataset, as_json):
    """List DATASET's releases, oldest first.

    \b
    Example:
      dpmic budget history --ledger sqlite:///ledger.db --dataset sales --json
    """
    import json

    from .ledger import SQLLedger, describe

    try:
        rows = [describe(r) for r in SQLLedger(ledger_url).history(dataset)]
    except DPMICError as exc:
        _fail(exc)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    if not rows:
        click.echo("no releases yet")
    for row in rows:
        click.echo(f"{row['time']}  {row['amount']:>12}  eps={row['epsilon']:g} "
                   f"delta={row['delta']:g}  {row['mechanism'] or '-'}  {row['job']}  "
                   f"columns={','.join(row['columns'])}  [{row['charge_id']}]")


if __name__ == "__main__":  # pragma: no cover
    main()
