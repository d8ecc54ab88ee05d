"""Numba kernels: pure array functions, no validation, no Dask, no randomness.

Callers validate shapes, dtypes and parameters in Python before dispatching
here. Each kernel's docstring gives the shapes and dtypes it expects.
"""
