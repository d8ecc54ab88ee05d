"""The ``dpmic`` command line. Thin: it parses options and calls the library."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .errors import DPMICError


def _fail(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dpmic_dask")
def main():
    """Differentially private Maximal Information Coefficients on Dask.

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


if __name__ == "__main__":  # pragma: no cover
    main()
