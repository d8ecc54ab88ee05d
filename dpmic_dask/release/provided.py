"""Methods of ``frame.dpmic`` whose work lives in a wing above the release wing.

The accessor (:mod:`dpmic_dask.release.accessor`) declares such a method
(signature and docstring) and looks its work up here; the wing that does the
work fills its entry when it is imported (:mod:`dpmic_dask.causal.accessor`
fills ``causal_graph``), and ``import dpmic_dask`` imports every wing before any
frame can be used. The release wing never imports the wings above it.
"""

from __future__ import annotations

from collections.abc import Callable

#: The methods the accessor declares without doing their work itself.
DECLARED = ("causal_graph",)

_PROVIDED: dict[str, Callable] = {}


def provide_method(name: str, function: Callable) -> None:
    """Let ``frame.dpmic.<name>(...)`` call ``function(frame, ...)``."""
    if name not in DECLARED:
        raise ValueError(f"the accessor declares no provided method {name!r}")
    _PROVIDED[name] = function


def provided(name: str) -> Callable | None:
    """The function that does ``frame.dpmic.<name>``'s work, or ``None`` when its
    wing was not imported."""
    return _PROVIDED.get(name)
