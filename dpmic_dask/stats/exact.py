"""Non-private, exact statistics on in-memory arrays: MICr and MICe.

These functions release nothing privately. Their output reveals information
about every row; use them on data that is not sensitive, or as references.
The private releases live in :mod:`dpmic_dask.release`.
"""

from __future__ import annotations

from dpmic_dask.checks import check_bounds, check_pair
from dpmic_dask.stats.characteristic import CharacteristicMatrix, characteristic_matrix
from dpmic_dask.stats.counting import pair_counts
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.mice import mice_statistic


def micr_characteristic(x, y, *, x_bounds, y_bounds, B, c) -> CharacteristicMatrix:
    """Non-private MICr characteristic matrix of a pair of columns.

    Parameters
    ----------
    x, y : array-like of real numbers, same length (>= 4), no NaN
    x_bounds, y_bounds : (lo, hi)
        Public bounds; values outside are clamped to them.
    B : int >= 4
        Maximum number of grid cells ``k * l``.
    c : int >= 1
        Master-row factor: each grid's optimised axis has ``c * kmax`` master rows.

    Returns
    -------
    CharacteristicMatrix
        The matrix, its maximum (MICr) and the grid size and orientation that
        attained it.
    """
    family = master_grid_family(B, c)
    xb = check_bounds(x_bounds, "x_bounds")
    yb = check_bounds(y_bounds, "y_bounds")
    xa, ya = check_pair(x, y)
    return characteristic_matrix(pair_counts(xa, ya, xb, yb, family), family)


def micr(x, y, *, x_bounds, y_bounds, B, c) -> float:
    """Non-private MICr of a pair of columns (range-equipartition MIC, in ``[0, 1]``).

    See :func:`micr_characteristic` for the parameters.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 1000)
    >>> round(micr(x, x, x_bounds=(0, 1), y_bounds=(0, 1), B=40, c=5), 6)
    1.0
    """
    return micr_characteristic(x, y, x_bounds=x_bounds, y_bounds=y_bounds, B=B, c=c).mic


def mice(x, y, *, alpha=0.6, c=15) -> float:
    """Non-private MICe of a pair of columns, as minepy's ``MINE(alpha, c, est="mic_e")``.

    Parameters
    ----------
    x, y : array-like of real numbers, same length (>= 4), no NaN
    alpha : float
        ``B = max(n**alpha, 4)`` for ``0 < alpha <= 1``; ``B = min(alpha, n)`` for
        ``alpha >= 4``.
    c : int >= 1
        Clump factor: at most ``c * floor(B / q)`` superclumps when the fixed axis
        has ``q`` parts.
    """
    xa, ya = check_pair(x, y)
    return mice_statistic(xa, ya, alpha, c)
