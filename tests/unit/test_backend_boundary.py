"""Only the backends build Dask graphs: no module outside ``dpmic_dask/backends/``
imports Dask or calls a Dask collection's graph methods (``batch/`` may import
Dask and ``distributed`` to start clusters and read files, and builds no graph
either). Modules ask ``backend_for(frame)`` instead (docs/architecture.md)."""

import ast
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpmic_dask.backends import backend_for
from dpmic_dask.errors import DataReadError

PACKAGE = Path(__file__).resolve().parents[2] / "dpmic_dask"

#: Where Dask may be imported: the backends (graphs), batch (clusters and files).
ALLOWED_IMPORTS = ("backends", "batch")
#: Where graph methods may be called: the backends only.
ALLOWED_CALLS = ("backends",)
FORBIDDEN_MODULES = ("dask", "distributed")
#: Single modules outside those wings that may import exactly these Dask modules:
#: ``config.py`` keeps the engine's knobs in Dask's own configuration (``dask.config``
#: holds settings, it builds and runs no graph), so ``dask.config.set`` and
#: ``DASK_DPMIC__*`` environment variables work for them as for Dask's.
NARROW_IMPORTS = {"config.py": frozenset({"dask.config"})}
#: Methods of Dask collections that build or run graphs by hand.
GRAPH_METHODS = frozenset({"map_partitions", "to_delayed", "from_delayed", "shuffle",
                           "persist", "compute", "delayed", "reduction"})


def imported_roots(tree: ast.Module) -> set[str]:
    """The top-level package of every module ``tree`` imports (anywhere in it)."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def imported_modules(tree: ast.Module) -> set[str]:
    """The full name of every module ``tree`` imports (anywhere in it)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def _is_backend(node: ast.expr) -> bool:
    """``backend`` (a name holding ``backend_for(frame)``) or ``backend_for(frame)``."""
    if isinstance(node, ast.Name):
        return node.id == "backend"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == "backend_for"


def graph_calls(tree: ast.Module) -> set[str]:
    """The graph methods ``tree`` calls on a frame (``frame.map_partitions(...)``; the
    backend's methods of those names, ``backend.map_partitions(frame, ...)``, are
    how a module asks for them), and ``._meta`` (a Dask collection's private empty
    frame) wherever it is read."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in GRAPH_METHODS and not _is_backend(node.func.value):
            found.add(node.func.attr)
        elif isinstance(node, ast.Attribute) and node.attr == "_meta":
            found.add("_meta")
    return found


def boundary_violations(package: Path = PACKAGE) -> list[str]:
    """``module: what`` for every Dask import or graph call outside where it belongs."""
    out = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        name = path.relative_to(package).as_posix()
        where = name.split("/")[0]
        if name in NARROW_IMPORTS:
            out += [f"{name}: imports {m}" for m in sorted(imported_modules(tree))
                    if m.split(".")[0] in FORBIDDEN_MODULES and m not in NARROW_IMPORTS[name]]
        elif where not in ALLOWED_IMPORTS:
            out += [f"{name}: imports {r}" for r in sorted(imported_roots(tree) & set(
                FORBIDDEN_MODULES))]
        if where not in ALLOWED_CALLS:
            out += [f"{name}: calls .{m}" for m in sorted(graph_calls(tree))]
    return out


def test_no_module_outside_the_backends_builds_dask_graphs():
    assert boundary_violations() == []


def test_the_check_sees_imports_and_graph_calls(tmp_path):
    # the check itself can fail: a module that does what only a backend may
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "bad.py").write_text(
        "import dask.dataframe as dd\nfrom distributed import Client\n"
        "def f(frame, fn):\n    return frame.map_partitions(fn, meta=frame._meta)\n"
        "def ok(frame, fn):\n    backend = backend_for(frame)\n"
        "    return backend_for(frame).persist(backend.map_partitions(frame, fn, meta=None))\n")
    (tmp_path / "config.py").write_text(
        "import dask.config\nfrom dask.utils import parse_bytes\nimport distributed\n")
    (tmp_path / "batch").mkdir()
    (tmp_path / "batch" / "io.py").write_text(
        "import dask.dataframe as dd\ndef g(frame):\n    return frame.to_delayed()\n")
    (tmp_path / "backends").mkdir()
    (tmp_path / "backends" / "dask.py").write_text(
        "import dask\ndef h(frame):\n    return frame.shuffle(on=['a']).persist()\n")
    assert boundary_violations(tmp_path) == [
        "batch/io.py: calls .to_delayed",
        "config.py: imports dask.utils", "config.py: imports distributed",
        "release/bad.py: imports dask", "release/bad.py: imports distributed",
        "release/bad.py: calls ._meta", "release/bad.py: calls .map_partitions"]


# What the modules ask the backends for gives the same on a pandas frame (applied
# now) as on the same rows in Dask partitions (a graph, computed here).

def _frames():
    frame = pd.DataFrame({"u": np.arange(40) % 7, "x": np.arange(40.0)})
    return frame, dd.from_pandas(frame, npartitions=4)


def _sorted(frame):
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def test_map_partitions_and_shuffle_by_agree_across_backends():
    frame, lazy = _frames()

    def last_per_unit(part, k):
        return part.sort_values("x").groupby("u").tail(k)

    meta = frame.iloc[:0]
    want = last_per_unit(frame, 2)
    backend = backend_for(lazy)
    got = backend.map_partitions(backend.shuffle_by(lazy, ["u"]), last_per_unit, 2, meta=meta)
    pd.testing.assert_frame_equal(_sorted(got.compute()), _sorted(want))
    assert _sorted(backend_for(frame).map_partitions(frame, last_per_unit, 2, meta=meta)).equals(
        _sorted(want))
    doubled = backend.map_partitions(lazy["x"], lambda s: 2 * s, meta=meta["x"])
    np.testing.assert_array_equal(doubled.compute().to_numpy(), 2 * frame["x"].to_numpy())


@pytest.mark.parametrize("split_every", [2, 3])
def test_tree_sum_adds_every_partition_once(split_every):
    frame, lazy = _frames()
    counts = [backend_for(f).tree_sum(f, lambda p: np.bincount(p["u"], minlength=7), np.add,
                                      split_every=split_every) for f in (frame, lazy)]
    for got in counts:
        np.testing.assert_array_equal(got, np.bincount(frame["u"], minlength=7))


def test_tree_sum_withholds_third_party_messages():
    _, lazy = _frames()

    def fails(part):
        raise ValueError("secret-4111")

    with pytest.raises(DataReadError) as info:
        backend_for(lazy).tree_sum(lazy, fails, np.add, split_every=2, columns=["u"])
    assert "secret" not in str(info.value)
    # a conversion failure says what it likely is (text among numbers), never the value
    assert "does not convert to the column's kind" in str(info.value)


def test_tasks_over_partitions_agree_across_backends():
    frame, lazy = _frames()
    for f in (frame, lazy):
        backend = backend_for(f)
        parts = backend.partitions(f)
        assert len(parts) == backend.npartitions(f)
        split = [backend.task(lambda p: (p[p.u < 3], p[p.u >= 3]), part, nout=2)
                 for part in parts]
        low = backend.task(pd.concat, [s[0] for s in split])
        out = backend.from_partitions([low, *[s[1] for s in split]], backend.empty(f))
        out = out if isinstance(out, pd.DataFrame) else out.compute()
        assert _sorted(out).equals(_sorted(frame))
        kept = backend.persist(f)
        kept = kept if isinstance(kept, pd.DataFrame) else kept.compute()
        pd.testing.assert_frame_equal(kept, frame)
