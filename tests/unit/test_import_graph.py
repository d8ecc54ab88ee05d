"""The package's imports form no cycle, counting imports inside functions
(imports point one way), and imports inside functions are kept for optional
dependencies only."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dpmic_dask"


def module_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports at module level."""
    paths = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        paths[name] = path
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                modules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in paths]
                deps.update(modules)
                if len(modules) < len(node.names) and target in paths:
                    deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in paths)
        graph[name] = deps - {name}
    return graph


def runtime_imports(tree: ast.Module) -> list:
    """Every import statement made when the module runs: at module level and
    inside functions, but not under ``if TYPE_CHECKING:`` (annotations only)."""
    found = []

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child)

    walk(tree)
    return found


def in_function_imports() -> list[tuple[str, str]]:
    """``(module, imported)`` for every import made inside a function."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in runtime_imports(function):
                name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                out.append((str(path.relative_to(PACKAGE.parent)), name or ""))
    return out


#: What may be imported inside a function: optional dependencies only.
OPTIONAL = ("matplotlib", "psycopg", "causallearn")


def test_imports_inside_functions_are_few_and_of_optional_dependencies_only():
    found = in_function_imports()
    assert len(set(found)) <= 15, found
    assert all(name.split(".")[0] in OPTIONAL for _, name in found), [
        f for f in found if f[1].split(".")[0] not in OPTIONAL]


def test_the_import_count_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    """The test above can fail: a package import in a function is found, one under
    TYPE_CHECKING is not."""
    package = tmp_path / "dpmic_dask"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dpmic_dask import two\n"
        "def f():\n    from dpmic_dask import two\n    return two\n")
    (package / "two.py").write_text("from dpmic_dask import one\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert in_function_imports() == [("dpmic_dask/one.py", "dpmic_dask")]
    assert find_cycles(module_imports()) == ["dpmic_dask.one -> dpmic_dask.two -> dpmic_dask.one"]


def find_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every cycle a depth-first walk meets, as ``a -> b -> a``."""
    state: dict[str, int] = {}
    cycles = []

    def visit(module, path):
        state[module] = 1
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join(path[path.index(dep):] + [module, dep]
                                          if dep in path else [module, dep]))
            elif dep not in state:
                visit(dep, path + [module])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    return cycles


def test_imports_have_no_cycle_counting_those_in_functions():
    graph = module_imports()
    assert "dpmic_dask.release.plan" in graph and "dpmic_dask.release.accessor" in graph["dpmic_dask"]
    assert find_cycles(graph) == []


def test_the_cycle_check_sees_a_cycle(tmp_path, monkeypatch):
    """The test above can fail: two modules importing each other are found."""
    package = tmp_path / "dpmic_dask"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("from .two import x\n")
    (package / "two.py").write_text("from . import one\nx = 1\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert find_cycles(module_imports()) == ["dpmic_dask.one -> dpmic_dask.two -> dpmic_dask.one"]


def stated_wings() -> list[set[str]]:
    """The wings in the order ``docs/architecture.md`` states (its ``wings``
    block, leaf first): each line names the top-level modules or packages of
    one wing before a colon."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    block = text.split("```wings\n", 1)[1].split("```", 1)[0]
    return [set(line.split(":", 1)[0].split()) for line in block.splitlines() if line.strip()]


def every_import(path: Path, name: str, paths: set[str]) -> set[str]:
    """Package modules ``path`` imports anywhere (module level or in a function)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in paths)
            if target in paths:
                found.add(target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in paths)
    return found


def wing_violations() -> list[str]:
    """Every import that points up the stated order of wings (or leaves them)."""
    wings = stated_wings()

    def rank(module: str) -> int:
        parts = module.split(".")
        if len(parts) == 1:
            return len(wings)  # the package itself sits on top of every wing
        for i, wing in enumerate(wings):
            if parts[1] in wing:
                return i
        return len(wings)  # top-level modules outside the wings (testing, __main__)

    paths = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    bad = []
    for name, path in sorted(paths.items()):
        for dep in sorted(every_import(path, name, set(paths))):
            if dep != "dpmic_dask" and rank(dep) > rank(name):
                bad.append(f"{name} -> {dep}")
    return bad


def test_imports_point_down_the_wings_architecture_md_states():
    wings = stated_wings()
    assert {"stats", "privacy", "backends", "release", "batch"} <= set().union(*wings)
    for wing in set().union(*wings):
        assert (PACKAGE / wing).is_dir() or (PACKAGE / f"{wing}.py").is_file(), wing
    assert wing_violations() == []


def test_the_wing_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The test above can fail: a statistic importing the privacy wing is found."""
    package = tmp_path / "dpmic_dask"
    (package / "stats").mkdir(parents=True)
    (package / "privacy").mkdir()
    for init in ("__init__.py", "stats/__init__.py", "privacy/__init__.py"):
        (package / init).write_text("")
    (package / "privacy" / "noise.py").write_text("x = 1\n")
    (package / "stats" / "grids.py").write_text("def f():\n    from ..privacy import noise\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "architecture.md").write_text("```wings\nstats: exact\nprivacy: noise\n```\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert wing_violations() == ["dpmic_dask.stats.grids -> dpmic_dask.privacy",
                                "dpmic_dask.stats.grids -> dpmic_dask.privacy.noise"]
