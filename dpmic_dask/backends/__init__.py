"""Backends: how a frame of a given type is counted, registered by frame type.

Each backend provides the schema, the (public) row count and the exact counts
of a frame, as an aggregate that maps any pair statistic over its counts where
they are. The pipeline asks :func:`backend_for` and never tests frame types
itself. A new frame type is one module with a :class:`Backend` subclass and a
``@register(FrameType)`` line; the backend's :meth:`Backend.install_accessor`
gives its frames the ``.dpmic`` accessor (:func:`install_accessor`), whether it
is registered before or after the package is imported.
"""

from __future__ import annotations

from dpmic_dask.backends.base import Aggregate, Backend, LocalAggregate, guarded

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
    _load_builtin()
    if name in _ACCESSORS:
        return
    _ACCESSORS[name] = accessor
    for frame_type, backend in _BACKENDS.items():
        backend.install_accessor(frame_type, name, accessor)


def backend_for(frame) -> Backend:
    """The backend registered for ``type(frame)`` or its nearest base class."""
    from dpmic_dask.errors import InvalidDataError

    _load_builtin()
    for kind in type(frame).__mro__:
        backend = _BACKENDS.get(kind)
        if backend is not None:
            return backend
    raise InvalidDataError("expected a pandas or Dask DataFrame")


def _load_builtin() -> None:
    from dpmic_dask.backends import dask, pandas  # noqa: F401  (register on import)


def count_frame(frame, spec, *, split_every: int = 8, progress: bool | None = None):
    """Exact counts of a whole frame, brought to the driver (tests, references)."""
    from dpmic_dask.stats.countspec import PartialCounts

    agg = backend_for(frame).count(frame, spec, split_every=split_every, progress=progress)
    return PartialCounts(agg.counts(), agg.rows, agg.missing)


__all__ = ["Aggregate", "Backend", "LocalAggregate", "backend_for", "count_frame", "guarded",
           "install_accessor", "register"]
