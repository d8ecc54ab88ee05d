"""The backend registry: frame type -> :class:`Backend`, and the accessors every
registered frame type gets.

The built-in backends (:mod:`.pandas`, :mod:`.dask`) fill it when
:mod:`dpmic_dask.backends` is imported, which Python does before this module,
so the registry never imports the backends that fill it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpmic_dask.errors import InvalidDataError

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from dpmic_dask.backends.base import Backend

_BACKENDS: dict[type, Backend] = {}
#: accessor name -> accessor class, installed on every backend's frame type
_ACCESSORS: dict[str, type] = {}


def register(frame_type: type):
    """Class decorator: use the decorated :class:`Backend` for ``frame_type`` (and
    its subclasses), and give ``frame_type`` every accessor installed so far."""
    def decorate(cls):
        backend = cls()
        _BACKENDS[frame_type] = backend
        for name, accessor in _ACCESSORS.items():
            backend.install_accessor(frame_type, name, accessor)
        return cls
    return decorate


def install_accessor(name: str, accessor: type) -> None:
    """Make ``frame.<name>`` an ``accessor(frame)`` on the frame type of every
    registered backend, and of every backend registered later."""
    if name in _ACCESSORS:
        return
    _ACCESSORS[name] = accessor
    for frame_type, backend in _BACKENDS.items():
        backend.install_accessor(frame_type, name, accessor)


def backend_for(frame) -> Backend:
    """The backend registered for ``type(frame)`` or its nearest base class."""
    for kind in type(frame).__mro__:
        backend = _BACKENDS.get(kind)
        if backend is not None:
            return backend
    raise InvalidDataError("expected a pandas or Dask DataFrame")
