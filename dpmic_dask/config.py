"""The engine's knobs, set once instead of on every call.

``task_memory``, ``split_every`` and ``progress`` size and show the work of a
release, never what it releases. They live in Dask's own configuration under
the ``dpmic`` namespace, so every way Dask is configured works for them:

* ``with dpmic_dask.config.set(task_memory="512 MiB"): ...`` (or called without
  ``with``, to set them for the rest of the process);
* ``dask.config.set({"dpmic.task-memory": "512 MiB"})``;
* a Dask YAML file (``~/.config/dask/dpmic.yaml``) with a ``dpmic:`` section;
* environment variables read when Dask's configuration is collected:
  ``DASK_DPMIC__TASK_MEMORY="512 MiB"``, ``DASK_DPMIC__SPLIT_EVERY=4``,
  ``DASK_DPMIC__PROGRESS=false``.

Defaults (``dpmic.yaml`` beside this module) are registered on import and equal
:data:`dpmic_dask.stats.limits.DEFAULT_TASK_MEMORY` and ``DEFAULT_SPLIT_EVERY``.
Values are checked when set through :func:`set` and whenever they are read
(:func:`get`, :func:`engine`): a bad value set through ``dask.config`` is refused
by the first release that reads it, before anything is read or charged, with an
:class:`~dpmic_dask.errors.InvalidParameterError`. A release reads the knobs once,
on the driver, when it is planned (``progress`` when it runs); a per-call argument
(``pairwise(..., task_memory=...)``) overrides the configuration for that call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.config
import yaml

from dpmic_dask.errors import InvalidParameterError

__all__ = ["Engine", "engine", "get", "resolve", "set"]

#: Dask's namespace for this package's keys (``dpmic.task-memory``).
NAMESPACE = "dpmic"
#: The knobs, by their Python names (Dask spells them with hyphens).
NAMES = ("task_memory", "split_every", "progress")
#: Smallest and largest ``task_memory`` (1 MiB to 1 TiB).
TASK_MEMORY_RANGE = (2**20, 2**40)

_DEFAULTS_FILE = Path(__file__).with_name("dpmic.yaml")
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_UNITS.update({unit[0]: size for unit, size in list(_UNITS.items()) if unit and "i" not in unit})
_UNITS.update({unit[:-1]: size for unit, size in list(_UNITS.items()) if "i" in unit})
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$")
#: What a missing per-call argument is (``None`` means the configuration).
_UNSET: Any = object()


def _key(name: str) -> str:
    return f"{NAMESPACE}.{name.replace('_', '-')}"


def _bytes(value) -> int:
    """A size as an integer number of bytes: an integer, or a string with a unit
    (``"256 MiB"``, ``"1GB"``, ``"268435456"``), read as ``dask.utils.parse_bytes``
    reads it."""
    if isinstance(value, str):
        match = _SIZE.match(value.lower())
        if match is None or match.group(2) not in _UNITS:
            raise InvalidParameterError(
                f"task_memory must be a size such as \"256 MiB\" or a number of bytes, "
                f"not {value!r}")
        value = int(float(match.group(1)) * _UNITS[match.group(2)])
    return value


def check_task_memory(value) -> int:
    """``task_memory`` as bytes, from 1 MiB to 1 TiB (an integer or ``"256 MiB"``)."""
    value = _bytes(value)
    low, high = TASK_MEMORY_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidParameterError("task_memory must be a number of bytes from 2**20 to 2**40 "
                                    "(or a size such as \"256 MiB\")")
    return value


def check_split_every(value) -> int:
    """``split_every``: an integer >= 2."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InvalidParameterError("split_every must be an integer >= 2")
    return value


def check_progress(value) -> bool | None:
    """``progress``: ``True``, ``False``, or ``None`` / ``"auto"`` (on when stderr is
    a terminal)."""
    if value is None or (isinstance(value, str) and value.lower() == "auto"):
        return None
    if not isinstance(value, bool):
        raise InvalidParameterError("progress must be True, False or None (auto: on when "
                                    "stderr is a terminal)")
    return value


_CHECKS = {"task_memory": check_task_memory, "split_every": check_split_every,
           "progress": check_progress}


def _name(name: str) -> str:
    name = name.removeprefix(f"{NAMESPACE}.").replace("-", "_")
    if name not in _CHECKS:
        raise InvalidParameterError(f"unknown dpmic_dask setting {name!r}; the settings are "
                                    f"{', '.join(NAMES)}")
    return name


def get(name: str):
    """The checked value of one knob (``"task_memory"`` in bytes, ``"split_every"``,
    ``"progress"``) as the configuration holds it now."""
    name = _name(name)
    return _CHECKS[name](dask.config.get(_key(name)))


def set(**values) -> dask.config.set:  # noqa: A001  (as dask.config.set)
    """Set knobs by their Python names, checked now: ``config.set(task_memory="512
    MiB", split_every=4, progress=False)``. Takes effect at once; used as a context
    manager (``with config.set(...):``) the previous values come back on exit."""
    checked = {_key(_name(name)): _CHECKS[_name(name)](value) for name, value in values.items()}
    return dask.config.set(checked)


def resolve(name: str, value):
    """``value`` checked when given (a per-call override), else the configuration's."""
    name = _name(name)
    return get(name) if value is None else _CHECKS[name](value)


@dataclass(frozen=True)
class Engine:
    """The knobs one release runs with, read once on the driver."""

    task_memory: int
    split_every: int
    progress: bool | None


def engine(*, task_memory=None, split_every=None, progress=_UNSET) -> Engine:
    """The knobs a release uses: each argument given (not ``None``) overrides the
    configuration, which is read once here and checked. ``progress`` left out or
    ``None`` reads the configuration too."""
    return Engine(resolve("task_memory", task_memory), resolve("split_every", split_every),
                  resolve("progress", None if progress is _UNSET else progress))


def _register_defaults() -> None:
    """Add the packaged defaults to Dask's (kept across ``dask.config.refresh()``)."""
    defaults = yaml.safe_load(_DEFAULTS_FILE.read_text())
    dask.config.update_defaults(defaults)


_register_defaults()
