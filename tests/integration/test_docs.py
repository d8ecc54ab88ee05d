"""The README's code blocks, every docs page's ``python`` blocks and every example
run, and print what the docs show."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
#: The line right before a block that a docs page shows but that cannot run as written.
NOT_RUN = "<!-- not run -->"


def blocks(language, text=README):
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def page(name):
    return (DOCS / name).read_text()


def runnable_blocks(text):
    """A page's ``python`` blocks, in order, less those marked :data:`NOT_RUN`."""
    return [m.group(2) for m in re.finditer(r"(^[^\n]*\n)?```python\n(.*?)```", text, flags=re.S | re.M)
            if (m.group(1) or "").strip() != NOT_RUN]


def pages_with_python():
    return sorted(p.name for p in DOCS.glob("*.md") if runnable_blocks(p.read_text()))


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
def test_batch_job_commands_print_what_docs_batch_shows(workdir):
    text = page("batch.md")
    commands = next(b for b in blocks("bash", text) if "dpmic run examples/batch_job.toml" in b)
    shown = next(b for b in blocks("text", text) if "run first: released" in b)
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


def test_docs_accuracy_table_matches_the_recorded_benchmark_run():
    recorded = {}
    for line in (ROOT / "benchmarks" / "results-accuracy.txt").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] in ("micr-lap", "micr-geom", "mice-lap") and "|" in line:
            recorded[(parts[0], *_numbers(line)[:2])] = _numbers(line)[2:]
    section = page("accuracy.md").split("# Measured accuracy", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if re.match(r"\| (micr|mice)-", r)]
    assert len(rows) >= 8
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        n, eps = _numbers(cells[1])[0], _numbers(cells[2])[0]
        shown = _numbers(" ".join(cells[3:]).replace("*", ""))
        expected = recorded[(cells[0], n, eps)]
        assert shown == pytest.approx(expected, abs=6e-4), row


def test_readme_per_person_plan_prints_what_the_readme_shows(workdir):
    """A unit, private categories and private bounds in one release: the plan's
    explanation and the values, as the README shows them (numbers aside)."""
    code = next(b for b in blocks("python") if "plan.explain()" in b)
    shown = next(b for b in blocks("text") if b.startswith("Release plan:"))
    proc = run([sys.executable, "-c", code], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert normalise(proc.stdout) == normalise(shown)
    assert "per customer_id, at most 8 rows each" in shown and "private categories" in shown


def test_readme_causal_example_prints_what_the_readme_shows(workdir):
    """The mixed-table causal graph: the report's header, privacy statement and
    level 0 release (public quantities, numbers aside) as the README shows them.
    Which edges survive, and so the tables of levels 1 and 2, depend on the
    noise: of those, only the edge table's header and the lines' shape are compared."""
    code = next(b for b in blocks("python") if ".dpmic.causal_graph(" in b)
    shown = normalise(next(b for b in blocks("text") if "causal graph (private)" in b))
    proc = run([sys.executable, "-c", code], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = normalise(proc.stdout)

    def budget(lines):
        start = next(i for i, line in enumerate(lines) if line.startswith("causal graph (private)"))
        end = next(i for i, line in enumerate(lines) if line.startswith("level 0 tables"))
        return lines[start:end + 1]

    def shape(lines):
        return [re.sub(r"tables?", "table", re.sub(r"\d+", "<int>", line))
                for line in lines if line.startswith("level ")]

    assert printed[0] == shown[0] == "source target directed"
    assert budget(printed) == budget(shown)
    assert "test 'chisq'" in budget(shown)[0]
    assert shape(printed) == shape(shown)


def test_readme_selection_example_runs_after_the_first(workdir):
    first = next(b for b in blocks("python") if ".dpmic.pairwise(" in b)
    second = next(b for b in blocks("python") if ".dpmic.top_pairs(" in b)
    proc = run([sys.executable, "-c", first + "\n" + second], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("(('age', 'income'), ") and "top 2 by MICr" in last


def test_every_docs_page_with_python_is_checked():
    """The pages whose examples the next test runs (a new page with a python
    block joins it by itself; this list only guards against none being found)."""
    assert {"warehouse.md", "per-person.md", "local.md", "causal.md"} <= set(pages_with_python())


@pytest.mark.slow  # each page's examples release on 10^4-10^5 rows
@pytest.mark.parametrize("name", pages_with_python())
def test_docs_page_python_examples_run_as_written(workdir, name):
    """Every ``python`` block of the page, in order, as one script (a block may use
    what an earlier one on the same page made), in a folder of its own."""
    code = "import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(runnable_blocks(page(name)))
    proc = run([sys.executable, "-c", code], cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_readme_first_screen_answers_the_five_needs():
    """About 60 lines: what it does, the install, the one call, what comes back (with
    the HTML report's picture), how to choose eps and bounds; the whole README
    stays short and the picture small."""
    lines = README.splitlines()
    first = "\n".join(lines[:80])
    for needed in ("differential privacy", 'pip install -e ".[plot]"', ".dpmic.pairwise(",
                   "Released: private MIC", "](docs/report.png)", "## Choosing eps and bounds"):
        assert needed in first, needed
    assert len(lines) <= 250
    assert (DOCS / "report.png").stat().st_size < 300_000
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).exists(), link


def test_every_path_the_docs_name_exists():
    """A file or folder named in backticks (`dpmic_dask/privacy/mechanisms/`,
    `release/executor.py`, relative to the package where it is not from the root)
    exists: a page cannot send a reader to a moved module."""
    roots = ("dpmic_dask", "tests", "benchmarks", "tools", "examples", "docs", "deploy")
    missing = []
    for path in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        text = path.read_text()
        named = re.findall(r"`((?:%s)/[\w./-]*)`" % "|".join(roots), text)
        named += [f"dpmic_dask/{p}" for p in re.findall(r"`([a-z_]+/[\w/]*\.py)`", text)
                  if p.split("/")[0] not in roots]
        missing += [(path.name, p) for p in named if "*" not in p
                    and not (ROOT / p.rstrip(".")).exists()]
    assert missing == []
