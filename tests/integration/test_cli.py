
import pandas as pd
import pytest

from dpmic_dask.batch.cli import main
from dpmic_dask.batch.clibase import Exit
from dpmic_dask.batch.demo import DEMO_BOUNDS, demo_partition
from tests.cli import invoke


def test_demo_command_writes_results(tmp_path):
    out = tmp_path / "demo"
    result = invoke("demo", "--rows", "20000", "--partitions", "3", "--workers", "1",
                    "--eps", "20", "--out", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert len(table) == len(DEMO_BOUNDS) * (len(DEMO_BOUNDS) - 1) // 2
    assert table.mic.between(0, 1).all() and (table.n == 20000).all()
    # at eps = 20 the noise scale per pair is about 0.003, far below these margins:
    # the strongest relationship of the generator comes out on top
    top = table.sort_values("mic", ascending=False).iloc[0]
    assert {top.x, top.y} == {"x", "step"}
    independent = table[(table.x == "uniform") | (table.y == "uniform")]
    assert independent.mic.max() < 0.1
    report = (out / "report.txt").read_text()
    assert "36 pairs of 9 columns" in report and "differentially private" in report
    assert (out / "heatmap.png").stat().st_size > 10_000
    assert "Releasing private MIC for 9 columns (36 pairs)" in result.output
    assert f"Wrote results.csv, heatmap.png, report.txt, report.html to {out}/" in result.output
    assert f"Open the report: {out / 'report.html'}" in result.output
    page = (out / "report.html").read_text()
    assert page.count('<g class="cell') == 2 * len(table) and "e^20" in page
    rebuilt = invoke(["report", str(out)])  # from results.csv and report.txt
    assert rebuilt.exit_code == 0 and f"wrote {out / 'report.html'}" in rebuilt.output


def test_demo_rejects_bad_options():
    result = invoke(["demo", "--eps", "-1", "--rows", "100", "--workers", "1"])
    assert result.exit_code == 2 and "--eps" in result.output
    result = invoke(["demo", "--rows", "2"])
    assert result.exit_code == 2 and "--rows" in result.output


def test_demo_refuses_too_many_workers_before_announcing_a_cluster(tmp_path):
    result = invoke(["demo", "--workers", "500", "--out", str(tmp_path / "out")])
    assert result.exit_code == Exit.INVALID and "--workers must be an integer" in result.output
    assert "Starting" not in result.output and not (tmp_path / "out").exists()


def test_every_command_has_help_with_examples():
    def commands(group, path=()):
        for name, command in group.commands.items():
            yield (*path, name)
            if hasattr(command, "commands"):
                yield from commands(command, (*path, name))

    names = list(commands(main))
    assert {("run",), ("deliver",), ("budget", "forecast")} <= set(names)
    for args in [(), *names]:
        result = invoke([*args, "--help"])
        assert result.exit_code == 0 and "Example" in result.output, args


def test_demo_generator_respects_its_public_bounds():
    part = demo_partition(0, 50_000)
    assert list(part.columns) == list(DEMO_BOUNDS)
    inside = [part[c].between(*DEMO_BOUNDS[c]).mean() for c in DEMO_BOUNDS if c != "normal"]
    assert min(inside) > 0.99  # bounds are wide enough for the generated data
    assert demo_partition(3, 10).equals(demo_partition(3, 10))


def test_module_entry_point_runs_as_a_process(tmp_path):
    proc = invoke("demo", "--rows", "5000", "--partitions", "2", "--workers", "1",
                  "--out", tmp_path / "o", subprocess=True)
    assert proc.exit_code == 0, proc.stderr[-2000:]
    assert (tmp_path / "o" / "results.csv").exists()


def test_validate_says_a_large_eps_as_run_does(tmp_path):
    """``dpmic validate`` accepted eps = 1e9 without a word; run says it before its
    charge (a LargeEpsilonWarning); validate says it too."""
    from tests.jobfiles import write_job

    path = write_job(tmp_path / "big.toml", name="big", eps=1e9,
                     columns={"a": [0, 1], "b": [0, 1]})
    import dpmic_dask as dm

    with pytest.warns(dm.LargeEpsilonWarning, match="above 10"):
        out = invoke(["validate", str(path)])
    assert out.exit_code == 0, out.output
    assert "1 pair," in out.output
