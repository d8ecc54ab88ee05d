"""The README's code blocks and every example run, and print what the docs show."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def run(args, cwd, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env, **kw)


@pytest.fixture
def workdir(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("data", "__pycache__"))
    return tmp_path


def normalise(text):
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00", "<time>", text)
    text = re.sub(r"[0-9a-f]{32}", "<id>", text)
    text = re.sub(r"-?\d+\.\d+", "<num>", text)
    # column widths follow the printed digits (pandas drops trailing zeros that
    # every value shares), so compare tokens, not alignment
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def test_readme_python_example_prints_what_the_readme_shows(workdir):
    code = next(b for b in blocks("python") if ".dpmic.pairwise(" in b)
    shown = next(b for b in blocks("text") if "Released: private MIC for 3 pairs" in b)
    proc = run([sys.executable, "-c", code], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert normalise(proc.stdout) == normalise(shown)


@pytest.mark.cluster  # runs `dpmic` jobs on local clusters
def test_readme_batch_job_commands_print_what_the_readme_shows(workdir):
    commands = next(b for b in blocks("bash") if "dpmic run examples/batch_job.toml" in b)
    shown = next(b for b in blocks("text") if "run first: released" in b)
    out = []
    for line in commands.strip().splitlines():
        proc = run(line, cwd=workdir, shell=True)
        assert proc.returncode == 0, (line, proc.stderr[-2000:])
        out.append(proc.stdout)
    assert normalise("".join(out)) == normalise(shown)


def test_readme_two_commands_are_the_real_ones():
    first = blocks("bash")[0]
    assert 'python -m pip install -e ".[plot]" && dpmic demo' in first
    assert "bash .ci/run" in first
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python -m pip install -e ".[test]"' in ci and "python -m pytest" in ci


@pytest.mark.parametrize("script,expected", [
    ("quickstart.py", "Released: private MIC for 3 pairs"),
    ("choosing_eps_and_bounds.py", "10x wider"),
    ("scheduled_export.py", "day 5: refused"),
    ("real_dataset.py", "micr-gauss"),
    ("make_data.py", "wrote 4 Parquet files"),
])
def test_examples_run(workdir, script, expected):
    proc = run([sys.executable, f"examples/{script}"], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expected in proc.stdout


def _numbers(text):
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", text.replace(",", ""))]


def test_readme_accuracy_table_matches_the_recorded_benchmark_run():
    recorded = {}
    for line in (ROOT / "benchmarks" / "results-accuracy.txt").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] in ("micr-lap", "micr-geom", "mice-lap") and "|" in line:
            recorded[(parts[0], *_numbers(line)[:2])] = _numbers(line)[2:]
    section = README.split("## Measured accuracy", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if re.match(r"\| (micr|mice)-", r)]
    assert len(rows) >= 8
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        n, eps = _numbers(cells[1])[0], _numbers(cells[2])[0]
        shown = _numbers(" ".join(cells[3:]).replace("*", ""))
        expected = recorded[(cells[0], n, eps)]
        assert shown == pytest.approx(expected, abs=6e-4), row


def test_readme_selection_example_runs_after_the_first(workdir):
    first = next(b for b in blocks("python") if ".dpmic.pairwise(" in b)
    second = next(b for b in blocks("python") if ".dpmic.top_pairs(" in b)
    proc = run([sys.executable, "-c", first + "\n" + second], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("(('age', 'income'), ") and "top 2 by MICr" in last
