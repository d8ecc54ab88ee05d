"""Sensitivities of the statistics under replace-one neighbours (SPEC section 4).

Pure functions of public quantities (``n``, ``B``). The proofs are in
``docs/privacy.md``.
"""

from __future__ import annotations

import math


def f_gain(x: float) -> float:
    """``f(x) = (x + 1) log2(x + 1) - x log2 x`` (``f(0) = 0``): the change of
    ``g(x) = x log2 x`` when a count grows from ``x`` to ``x + 1``."""
    if x <= 0:
        return 0.0
    return (x + 1) * math.log2(x + 1) - x * math.log2(x)


def micr_sensitivity(n: int) -> float:
    """Tight replace-one sensitivity of MICr: ``2 f((n - 1) / 2) / n``.

    Holds for every ``B``, ``c`` and range; about ``(2 log2 n + 0.885) / n``.
    The published bound ``(4 log2 n + 6) / n`` is about twice as large.
    """
    if n < 4:
        raise ValueError("MICr sensitivity needs n >= 4")
    return 2.0 * f_gain((n - 1) / 2.0) / n


def micr_sensitivity_published(n: int) -> float:
    """The paper's Theorem 4.3 bound ``(4 log2 n + 6) / n`` (for comparison only)."""
    return (4.0 * math.log2(n) + 6.0) / n


def mice_sensitivity(n: int, B: float) -> float:
    """The paper's Theorem 3.1 bound for MICe: ``B (2 log2 n + 4.8) / n`` (``n >= 6``)."""
    if n < 6:
        raise ValueError("MICe sensitivity needs n >= 6")
    return B * (2.0 * math.log2(n) + 4.8) / n


def round_up(value: float, ulps: int = 4) -> float:
    """``value`` moved up by a few units in the last place, so that floating-point
    error in evaluating a bound can only make the noise larger."""
    for _ in range(ulps):
        value = math.nextafter(value, math.inf)
    return value
