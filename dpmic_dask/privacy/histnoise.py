"""Noise on exact histograms: discrete Laplace on every count, at the scale
``sensitivity / eps_column`` (2 per row replaced, ``k`` per unit added or
removed), for the bounds' histograms and the check of public bounds."""

from __future__ import annotations

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PureCost
from dpmic_dask.privacy.mechanisms.base import check_noise_units
from dpmic_dask.privacy.noise import with_count_noise
from dpmic_dask.stats.sensitivity import safe_up


def noisy_histograms(counts, eps_column: float, sensitivity: float = 2.0):
    """Every column's histogram with exact discrete Laplace noise of scale
    ``sensitivity / eps_column`` on each count. Row level, replacing one row moves
    one count down and one up: L1 sensitivity 2 per column (the default); per unit
    (``privacy_unit`` with ``max_rows_per_unit = k``, add/remove of one unit on the
    bounded frame) at most ``k`` counts move by one: sensitivity ``k``
    (``docs/privacy.md`` section 12). Call only after the charge.

    The sums are exact int64: counts lie in ``[0, n]``, and a draw is held within
    the public :data:`~dpmic_dask.privacy.noise.COUNT_NOISE_LIMIT` (a draw that
    large has probability below ``exp(-2**10)`` at the largest scale allowed,
    :data:`~dpmic_dask.privacy.mechanisms.base.MAX_NOISE_UNITS`)."""
    scale = histogram_scale(eps_column, sensitivity)
    law = PureCost.law  # each column's histogram is a pure eps_column-DP release
    sizes = [int(np.size(row)) for row in counts]
    # every count's draw is independent at one scale: one vector for all columns
    # (drawn on every core), cut back into the columns' histograms
    draws = np.split(law.draw(scale, sum(sizes)), np.cumsum(sizes)[:-1])
    noisy = [with_count_noise(row, z.reshape(np.shape(row))) for row, z in zip(counts, draws)]
    return noisy, scale


def histogram_scale(eps_column: float, sensitivity: float = 2.0) -> float:
    """The noise scale ``sensitivity / eps_column`` (counts; 2 at row level, ``k``
    per unit), refused when it cannot be sampled faithfully -- checked when the
    request is planned, before anything is read."""
    if not eps_column > 0:
        raise InvalidParameterError("eps is too small to split over these columns")
    scale = safe_up(float(sensitivity) / eps_column)
    check_noise_units(scale, "histogram")
    return scale


__all__ = ["histogram_scale", "noisy_histograms"]
