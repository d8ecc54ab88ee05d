"""``frame.dpmic.causal_graph``: the causal wing's method of the accessor.

The accessor lives in the release wing, below this one, so it cannot import
causal discovery; the package (``dpmic_dask/__init__.py``) attaches this method
to it on import, before any of its wings can be used.
"""

from __future__ import annotations

from dpmic_dask.causal.discover import causal_graph


def accessor_causal_graph(self, eps, **arguments):
    """Release a differentially private causal graph (CPDAG) of the frame, once.

    ``frame.dpmic.causal_graph(eps, bounds=..., ...)`` is
    :func:`dpmic_dask.causal.causal_graph` on the frame: the same arguments,
    one charge of the whole budget, a :class:`~dpmic_dask.causal.CausalGraph`.
    """
    return causal_graph(self._frame, eps, **arguments)


accessor_causal_graph.__name__ = "causal_graph"
