"""Few decisions branch on the privacy measure: what differs between pure DP and
zCDP is a method of the typed cost (:class:`~dpmic_dask.privacy.costs.PureCost`,
:class:`~dpmic_dask.privacy.costs.ZCDPCost`), not an ``if`` at each call site.

The counter walks every module of the package and counts the branch tests
(``if``, ``elif``, ``while``, conditional expressions, comprehension filters,
``match`` subjects) that look at the measure: the measures and cost classes by
name (``PURE_DP``, ``ZCDP``, ``PureCost``, ``isinstance`` against them ...), the
attributes that say it (``.measure`` -- unless a method of the measure is
called --, ``.is_pure``, ``.zcdp``), ``measure_for``,
a ``rho`` tested against ``None`` or for truth, a ``delta`` compared with zero
(not a range ``0 <= delta < 1``),
and a noise law chosen by its name (``== "laplace"``)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dpmic_dask"

#: Names that say the measure wherever they appear in a test.
MEASURE_NAMES = {"PURE_DP", "ZCDP", "PureDP", "ZeroConcentratedDP", "PureCost", "ZCDPCost",
                 "PrivacyCost", "is_pure", "measure", "zcdp", "measure_for"}
#: Names of noise laws, compared as strings.
LAW_NAMES = {"laplace", "gaussian", "lap", "gauss"}
#: The most branches on the measure the package may hold.
LIMIT = 12


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not isinstance(node.value, (bool, str)) \
        and node.value == 0


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _mentions(node: ast.AST, name: str) -> bool:
    return any((_name(sub) or "").lstrip("_") == name for sub in ast.walk(node))


def _truth_operands(test: ast.AST):
    """The operands a test takes the truth of (itself, inside ``not``/``and``/``or``)."""
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _truth_operands(value)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _truth_operands(test.operand)
    else:
        yield test


def _says_measure(node: ast.AST) -> bool:
    """Whether an operand names the measure (``cost.measure``, ``PURE_DP``,
    ``measure_for(delta)``, a tuple of cost classes ...)."""
    if isinstance(node, ast.Tuple):
        return any(_says_measure(elt) for elt in node.elts)
    if isinstance(node, ast.Call):
        return _says_measure(node.func)
    return (_name(node) or "") in MEASURE_NAMES


def on_measure(test: ast.AST) -> bool:
    """Whether a branch test looks at the privacy measure: an operand it takes the
    truth of, compares or hands to ``isinstance`` names the measure (calling a
    method of the measure, ``cost.measure.fits(...)``, or passing it on is no
    branch on it)."""
    operands = list(_truth_operands(test))
    for sub in ast.walk(test):
        if isinstance(sub, ast.Compare):
            sides = [sub.left, *sub.comparators]
            operands += sides
            if len(sides) == 2:
                if any(_is_none(s) for s in sides) and any(_mentions(s, "rho") for s in sides):
                    return True
                if any(_is_zero(s) for s in sides) and any(_mentions(s, "delta") for s in sides):
                    return True
            if any(isinstance(s, ast.Constant) and s.value in LAW_NAMES for s in sides):
                return True
        elif isinstance(sub, ast.Call) and _name(sub.func) == "isinstance":
            operands += sub.args[1:]
    if any(_says_measure(op) for op in operands):
        return True
    return any((_name(op) or "").lstrip("_") == "rho" for op in _truth_operands(test))


def branch_tests(tree: ast.AST):
    """Every branch test of a module."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs
        elif isinstance(node, ast.Match):
            yield node.subject


def measure_branches(root: Path = PACKAGE) -> list[str]:
    """``path:line`` of every branch on the measure under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for test in branch_tests(tree):
            if on_measure(test):
                found.append(f"{path.relative_to(root.parent)}:{test.lineno}")
    return found


def test_the_counter_sees_each_kind_of_branch_on_the_measure():
    source = """
if cost.measure is PURE_DP: pass
elif isinstance(cost, ZCDPCost): pass
x = a if rho is None else b
y = [c for c in cs if c.is_pure]
while self.zcdp: pass
if not delta > 0: pass
if check_delta(delta) == 0.0: pass
if self._rho is not None: pass
z = rho if rho and rho == rho else None
if plan.law == "laplace": pass
if not part.measure is ZCDP: pass
match measure_for(delta):
    case _: pass
if delta > 1 and rho > 0 and eps == 0: pass
if mechanism == "auto": pass
if not (0.0 <= delta < 1.0): pass
if not part.measure.fits(cost, part): pass
if top_k(k, scale, measure).map(d) <= budget: pass
"""
    tests = sorted(branch_tests(ast.parse(source)), key=lambda t: (t.lineno, t.col_offset))
    assert [on_measure(t) for t in tests] == [True] * 12 + [False] * 5


def test_few_branches_on_the_measure():
    found = measure_branches()
    assert len(found) <= LIMIT, "\n".join(found)


def direct_draws(root: Path = PACKAGE) -> list[str]:
    """``path:line`` of every call of a sampler's own draws outside the noise laws
    (``privacy/noise.py``)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "privacy/noise.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("discrete_laplace",
                                                                 "discrete_gaussian"):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_every_noise_is_drawn_through_a_noise_law():
    assert direct_draws() == []
