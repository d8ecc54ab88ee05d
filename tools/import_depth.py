"""The depth of the package's module-level import graph.

Reads every module of ``dpmic_dask`` (without importing it), keeps the imports
made at module level (imports inside functions, and those under
``if TYPE_CHECKING:``, are not made when a module is imported, so they do not
count), and prints the longest chain of imports between package modules and
the number of layers: a module with no package import sits on layer 1, any
other one layer above the highest module it imports. The number of layers is
the length of the longest chain.

    python tools/import_depth.py            # the longest chain and the layers
    python tools/import_depth.py --layers   # every module by layer

``tests/unit/test_import_depth.py`` fails when the chain grows past the
length ``docs/architecture.md`` states.
"""

from __future__ import annotations

import argparse
import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "dpmic_dask"


def module_paths(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own)."""
    paths = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return paths


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level(body: list[ast.stmt]):
    """The statements run when the module is imported: its body, and the
    bodies of module-level ``if``/``try`` blocks (not ``if TYPE_CHECKING:``)."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody,
                          *(handler.body for handler in node.handlers)):
                yield from _module_level(block)
        else:
            yield node


def module_imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module -> the package modules it imports at module level."""
    paths = module_paths(package)
    graph = {}
    for name, path in paths.items():
        base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in _module_level(ast.parse(path.read_text()).body):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = base.split(".")
                    parts = parts[:len(parts) - node.level + 1]
                    target = ".".join(parts + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                modules = {f"{target}.{a.name}" for a in node.names} & paths.keys()
                deps |= modules
                if len(modules) < len(node.names) and target in paths:
                    deps.add(target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names} & paths.keys()
        graph[name] = deps - {name}
    return graph


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain ``a -> b -> ...`` of imports (the graph has no cycle;
    ties go to the alphabetically first chain)."""

    @cache
    def chain(module: str) -> tuple[str, ...]:
        below = [chain(dep) for dep in sorted(graph[module])]
        return (module, *max(below, key=len, default=()))

    return list(max((chain(m) for m in sorted(graph)), key=len, default=()))


def layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's layer: 1 without package imports, else one above the
    highest module it imports."""

    @cache
    def layer(module: str) -> int:
        return 1 + max((layer(dep) for dep in graph[module]), default=0)

    return {module: layer(module) for module in graph}


def main(argv: list[str] | None = None) -> None:
    """Print the longest chain and the number of layers (with --layers, each layer)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", action="store_true", help="list every module by layer")
    args = parser.parse_args(argv)
    graph = module_imports()
    chain = longest_chain(graph)
    by_layer = layers(graph)
    print(f"{len(graph)} modules on {max(by_layer.values())} layers; the longest chain "
          f"({len(chain)} modules):")
    for module in chain:
        print(f"  {module}")
    if args.layers:
        for number in range(1, max(by_layer.values()) + 1):
            names = sorted(m for m, n in by_layer.items() if n == number)
            print(f"layer {number}: {' '.join(names)}")


if __name__ == "__main__":
    main()
