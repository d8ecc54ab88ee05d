"""The package's shape stays as its architecture says: no module over 400 lines,
and few decisions on the privacy measure (its kind decides through the typed
cost and the mechanisms, not through scattered branches)."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dpmic_dask"

MAX_LINES = 400
MAX_MEASURE_BRANCHES = 12
#: A test that decides on the measure: pure DP or zCDP.
MEASURE = re.compile(r"delta\s*(==|!=|>|<=)\s*0|rho is (not )?None|is_pure")


def long_modules(package: Path = PACKAGE) -> dict[str, int]:
    out = {}
    for path in package.rglob("*.py"):
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            out[str(path.relative_to(package.parent))] = lines
    return out


def measure_branches(package: Path = PACKAGE) -> list[str]:
    """``module:line`` of every ``if``, ``while`` or conditional expression whose
    test decides on the measure."""
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)) and \
                    MEASURE.search(ast.unparse(node.test)):
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def test_no_module_is_over_400_lines():
    assert long_modules() == {}


def test_few_branches_decide_on_the_measure():
    found = measure_branches()
    assert len(found) <= MAX_MEASURE_BRANCHES, found


def test_the_structure_checks_can_fail(tmp_path):
    package = tmp_path / "dpmic_dask"
    package.mkdir()
    (package / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (package / "small.py").write_text(
        "def f(delta, rho, cost):\n"
        "    if delta == 0:\n        return 1\n"
        "    y = 2 if rho is None else 3\n"
        "    while cost.is_pure:\n        break\n"
        "    return y\n")
    assert long_modules(package) == {"dpmic_dask/big.py": MAX_LINES + 1}
    assert sorted(measure_branches(package)) == [
        "dpmic_dask/small.py:2", "dpmic_dask/small.py:4", "dpmic_dask/small.py:5"]
