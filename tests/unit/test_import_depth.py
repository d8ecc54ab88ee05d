"""The longest chain of module-level imports stays within what
``docs/architecture.md`` states (its ``import-depth`` block), measured by
``tools/import_depth.py``."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("import_depth", ROOT / "tools" / "import_depth.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stated_depth(text: str) -> int:
    """The number in the ``import-depth`` block (``longest chain: N modules``)."""
    block = text.split("```import-depth\n", 1)[1].split("```", 1)[0]
    line = next(line for line in block.splitlines() if line.startswith("longest chain:"))
    return int(line.split(":", 1)[1].split()[0])


def test_the_longest_import_chain_is_within_the_documented_depth():
    tool = _tool()
    graph = tool.module_imports()
    assert "dpmic_dask.release.plan" in graph and "dpmic_dask.errors" in graph
    chain = tool.longest_chain(graph)
    layers = tool.layers(graph)
    assert len(chain) == max(layers.values())  # one measure, two ways
    for upper, lower in zip(chain, chain[1:]):
        assert lower in graph[upper]
    stated = stated_depth((ROOT / "docs" / "architecture.md").read_text())
    assert len(chain) <= stated, " -> ".join(chain)


def test_the_depth_check_sees_a_longer_chain(tmp_path):
    """The test above can fail: a chain of four modules exceeds a stated three,
    and an import inside a function or under ``TYPE_CHECKING`` does not count."""
    tool = _tool()
    package = tmp_path / "dpmic_dask"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from dpmic_dask import b\n")
    (package / "b.py").write_text("from dpmic_dask.c import x\n")
    (package / "c.py").write_text("from dpmic_dask import d\nx = 1\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dpmic_dask import a\n"
        "def f():\n    from dpmic_dask import a\n")
    chain = tool.longest_chain(tool.module_imports(package))
    assert chain == ["dpmic_dask.a", "dpmic_dask.b", "dpmic_dask.c", "dpmic_dask.d"]
    assert len(chain) > stated_depth("```import-depth\nlongest chain: 3 modules\n```\n")
