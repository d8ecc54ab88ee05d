"""The one way tests write job files: :func:`write_job`.

Every section is a keyword argument (a dict, written as that TOML or YAML
section; ``None`` leaves the section out, and a key whose value is ``None`` is
left out too). The defaults make a valid job over the Parquet files in the job
file's folder ``in/``: three columns ``a``, ``b``, ``c``, ``eps = 1.0``, a folder
output ``out/``, one local worker and a SQLite ledger ``ledger.db`` beside the
job file. A column given as a list or tuple is its public bounds
(``a=[0, 1]`` is ``a = { bounds = [0, 1] }``).

``replace`` edits the written text (each old text must occur, so an edit that no
longer matches fails the test instead of testing the defaults); ``raw`` writes
the given text as it is, for files that are deliberately malformed; ``encoding``
is the file's (``"utf-8-sig"`` writes a byte-order mark, ``"latin-1"`` a file that
is not UTF-8).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

#: The sections in the order they are written, then any other section given.
ORDER = ("job", "input", "columns", "privacy", "output", "cluster", "ledger", "bounds",
         "select", "causal")

#: The default columns: bounds that hold ``tests.integration.test_jobs.write_input``'s data.
COLUMNS = {"a": [0, 1], "b": [-1.5, 1.5], "c": [0, 1]}

_DEFAULT = object()


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (str, Path)):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, Mapping):
        items = [f"{key} = {_scalar(item)}" for key, item in value.items() if item is not None]
        return "{ " + ", ".join(items) + " }" if items else "{ }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_text(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """The sections as TOML: one ``[section]`` each, values inline."""
    blocks = []
    for name, body in sections.items():
        lines = [f"[{name}]"]
        lines += [f"{key} = {_scalar(value)}" for key, value in body.items()
                  if value is not None]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _plain(value: Any) -> Any:
    """The value as YAML's safe dumper takes it (paths as text, tuples as lists)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _column(spec: Any) -> Any:
    return {"bounds": list(spec)} if isinstance(spec, (list, tuple)) else spec


def write_job(path: str | Path, *, raw: str | bytes | None = None,
              replace: Mapping[str, str] | Iterable[tuple[str, str]] = (),
              encoding: str = "utf-8",
              name: str | None = "nightly", dataset: str | None = "d",
              job: Mapping[str, Any] | None | object = _DEFAULT,
              input: Mapping[str, Any] | None | object = _DEFAULT,
              columns: Mapping[str, Any] | None | object = _DEFAULT,
              eps: float | None = 1.0,
              privacy: Mapping[str, Any] | None | object = _DEFAULT,
              output: Mapping[str, Any] | None | object = _DEFAULT,
              cluster: Mapping[str, Any] | None | object = _DEFAULT,
              ledger: str | Mapping[str, Any] | None | object = _DEFAULT,
              **sections: Mapping[str, Any] | None) -> Path:
    """Write a job file at ``path`` (TOML, or YAML for ``.yaml``/``.yml``) and
    return its path; see the module's docstring for the defaults.

    ``name``, ``dataset`` and ``eps`` fill the default ``[job]`` and ``[privacy]``
    sections (``privacy`` given: ``eps`` is its default ``eps``); ``ledger`` may be
    a URL; any other keyword is one more section (``bounds={"check": 0.05}``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        if isinstance(raw, bytes):
            path.write_bytes(raw)
        else:
            path.write_text(raw, encoding=encoding)
        return path
    folder = path.parent
    if isinstance(ledger, str):
        ledger = {"url": ledger}
    if privacy is not _DEFAULT and privacy is not None:
        privacy = {"eps": eps, **privacy}  # type: ignore[dict-item]
    given = {
        "job": {"name": name, "dataset": dataset} if job is _DEFAULT else job,
        "input": {"paths": [f"{folder / 'in'}/*.parquet"]} if input is _DEFAULT else input,
        "columns": COLUMNS if columns is _DEFAULT else columns,
        "privacy": {"eps": eps} if privacy is _DEFAULT else privacy,
        "output": {"path": str(folder / "out")} if output is _DEFAULT else output,
        "cluster": {"workers": 1} if cluster is _DEFAULT else cluster,
        "ledger": ({"url": f"sqlite:///{folder / 'ledger.db'}"} if ledger is _DEFAULT
                   else ledger),
        **sections,
    }
    order = [*ORDER, *(key for key in given if key not in ORDER)]
    body: dict[str, Any] = {key: given[key] for key in order if given.get(key) is not None}
    if body.get("columns"):
        body["columns"] = {key: _column(spec) for key, spec in body["columns"].items()}
    if path.suffix in (".yaml", ".yml"):
        text = yaml.safe_dump(_plain(body), sort_keys=False)
    else:
        text = toml_text(body)
    pairs = replace.items() if isinstance(replace, Mapping) else replace
    for old, new in pairs:
        assert old in text, f"{old!r} is not in the job file:\n{text}"
        text = text.replace(old, new)
    path.write_text(text, encoding=encoding)
    return path
