"""Sensitivities of the statistics under replace-one neighbours (SPEC section 4).

Pure functions of public quantities (``n``, ``B``). The proofs are in
``docs/privacy.md``. Every bound is evaluated in a form without cancellation
and then moved in the safe direction by a relative margin (:func:`safe_up`,
:func:`safe_down`) that is far larger than the floating-point error of the
evaluation; ``tests/unit/test_bounds_precision.py`` checks each against
50-digit decimal arithmetic.
"""

from __future__ import annotations

import math

#: Relative margin by which computed bounds are moved in the safe direction. The
#: evaluations below have relative error of a few units in the last place
#: (about 1e-15); 1e-12 covers that with three orders of magnitude to spare and
#: costs nothing measurable in accuracy.
SAFETY_MARGIN = 1e-12


def safe_up(value: float) -> float:
    """``value`` enlarged by the relative :data:`SAFETY_MARGIN` (for bounds that must
    not be underestimated: sensitivities, noise scales)."""
    return math.nextafter(value * (1.0 + SAFETY_MARGIN), math.inf)


def safe_down(value: float) -> float:
    """``value`` reduced by the relative :data:`SAFETY_MARGIN` (for bounds that must
    not be overestimated: a zCDP ``rho`` that is spent or that sets the noise)."""
    return math.nextafter(value * (1.0 - SAFETY_MARGIN), -math.inf)


def f_gain(x: float) -> float:
    """``f(x) = (x + 1) log2(x + 1) - x log2 x`` (``f(0) = 0``): the change of
    ``g(x) = x log2 x`` when a count grows from ``x`` to ``x + 1``.

    Evaluated as ``log2(x + 1) + x log1p(1 / x) / ln 2``, which has no
    cancellation (the textbook form loses about ``log10(x)`` digits).
    """
    if x <= 0:
        return 0.0
    return math.log2(x + 1.0) + x * math.log1p(1.0 / x) / math.log(2.0)


def micr_sensitivity(n: int) -> float:
    """Tight replace-one sensitivity of MICr: ``2 f((n - 1) / 2) / n``, rounded up.

    Holds for every ``B``, ``c`` and range; about ``(2 log2 n + 0.885) / n``.
    The published bound ``(4 log2 n + 6) / n`` is about twice as large.
    """
    if n < 4:
        raise ValueError("MICr sensitivity needs n >= 4")
    return safe_up(2.0 * f_gain((n - 1) / 2.0) / n)


def micr_sensitivity_published(n: int) -> float:
    """The paper's Theorem 4.3 bound ``(4 log2 n + 6) / n`` (for comparison only)."""
    return (4.0 * math.log2(n) + 6.0) / n


def mice_sensitivity(n: int, B: float) -> float:
    """The paper's Theorem 3.1 bound for MICe on distinct values:
    ``B (2 log2 n + 4.8) / n`` (``n >= 6``), rounded up.

    It holds for data without ties only; :mod:`dpmic_dask.stats.mice` breaks ties with
    secret random per-row keys before computing the private statistic.
    """
    if n < 6:
        raise ValueError("MICe sensitivity needs n >= 6")
    return safe_up(B * (2.0 * math.log2(n) + 4.8) / n)

