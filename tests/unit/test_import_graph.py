"""The package's module-level imports form no cycle (imports point one way)."""

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
        for node in ast.parse(path.read_text()).body:
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


def test_module_level_imports_have_no_cycle():
    graph = module_imports()
    assert "dpmic_dask.release" in graph and "dpmic_dask.accessor" in graph["dpmic_dask"]
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
