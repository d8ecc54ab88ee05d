"""One pair of in-memory columns: :func:`private_mic`.

The same stages as every release (request, precheck, grid, one charge, noise),
on two arrays in memory instead of a frame, run by the executor
(:func:`~dpmic_dask.release.executor.run_charged`); per privacy unit it hands over to
:func:`dpmic_dask.release.units.private_mic_per_unit`.
"""

from __future__ import annotations

import numpy as np

from dpmic_dask.checks import check_pair
from dpmic_dask.errors import InvalidDataError
from dpmic_dask.privacy.noise import active_sampler
from dpmic_dask.privacy.selection import AllPairs
from dpmic_dask.release.charge import Bill, precheck_budget, warn_if_delta_large
from dpmic_dask.release.executor import Staged, run_charged
from dpmic_dask.release.report import Release
from dpmic_dask.release.request import pair_request
from dpmic_dask.release.stages import grid_parameters, value_report
from dpmic_dask.release.units import private_mic_per_unit
from dpmic_dask.stats.counting import pair_counts


def private_mic(x, y, *, eps, x_bounds, y_bounds, mechanism="auto", delta=0.0, B=None, c=None,
                ledger=None, dataset=None, units=None, privacy_unit="unit",
                max_rows_per_unit=None) -> Release:
    """Differentially private MIC of one pair of in-memory columns.

    Parameters
    ----------
    x, y : array-like of real numbers, same length n (public), no NaN
    eps : float > 0
        Total privacy budget of this release.
    x_bounds, y_bounds : (lo, hi)
        Public bounds, chosen without looking at the data; values outside are clamped.
    mechanism : {"auto", "micr-lap", "micr-gauss", "mice-lap", "micr-geom"}
        ``auto`` is ``micr-lap`` for ``delta == 0`` and ``micr-gauss`` (zCDP, less
        noise at the same zCDP charge) for ``delta > 0``.
    delta : float in [0, 1)
    B, c : int, optional
        Grid parameters; defaults come from ``(n, eps)`` only (``dpmic_dask.stats.defaults``).
    ledger : ledger, optional
        Where the charge is recorded (default: the in-process session ledger).
    dataset : str, optional
        Dataset id the charge is recorded under.
    units, privacy_unit, max_rows_per_unit : optional
        Privacy per unit: ``units[i]`` identifies the unit (named ``privacy_unit``,
        e.g. ``"patient"``) that owns row ``i``; at most ``max_rows_per_unit`` rows
        per unit are used and neighbours differ by all rows of one unit
        (docs/privacy.md, section 12). Default: one row.

    Returns
    -------
    Release
        The value is computed, charged and noised exactly once.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 2000)
    >>> release = private_mic(x, x ** 2, eps=1.0, x_bounds=(0, 1), y_bounds=(0, 1))
    >>> release.mechanism, release.n, release.B
    ('micr-lap', 2000, 98)
    >>> release.value > 0.9  # a noiseless relationship, noise of scale ~0.01
    True
    """
    if units is not None or max_rows_per_unit is not None:  # per unit (docs/privacy.md, 12)

        return private_mic_per_unit(x, y, units, eps=eps, x_bounds=x_bounds,
                                    y_bounds=y_bounds, privacy_unit=privacy_unit,
                                    max_rows_per_unit=max_rows_per_unit, mechanism=mechanism,
                                    delta=delta, B=B, c=c, ledger=ledger, dataset=dataset)
    request = pair_request(eps=eps, x_bounds=x_bounds, y_bounds=y_bounds, mechanism=mechanism,
                           delta=delta, B=B, c=c)
    return run_charged(_one_pair(x, y, request, ledger, dataset), ledger=ledger,
                       dataset=dataset)


def _one_pair(x, y, request, ledger, dataset) -> Staged[Release]:
    """:func:`private_mic` of one row-level pair, staged: the precheck, the checks
    and the exact value (or counts), the bill, then the noise."""
    mech, statistic = request.mechanism, request.statistic
    precheck_budget(ledger, dataset, mech.cost)
    xa, ya = check_pair(x, y)
    n = xa.shape[0]
    if not statistic.mergeable and n < 6:
        raise InvalidDataError(f"mechanism {mech.label!r} needs at least 6 rows")
    warn_if_delta_large(request.delta, n)
    B, c = grid_parameters(request, n, noise=(mech, 1))
    plan = mech.calibrate(n=n, pairs=1, B=B, c=c)
    bill = Bill(mech.cost, f"private_mic {mech.label}", mech.label, ("x", "y"))
    if statistic.mergeable:
        layout = statistic.layout(B, c)
        counts = pair_counts(xa, ya, request.bounds[0], request.bounds[1], layout)
        if mech.acts_on == "counts":
            charge = yield bill
            value = statistic.value(mech.randomise(counts, plan), layout)
        else:
            exact = np.array([statistic.value(counts, layout)])
            charge = yield bill
            value = mech.randomise(exact, plan)[0]
    else:
        # Ties broken by secret per-row keys, one per row and axis: the published
        # MICe sensitivity holds only for distinct values (docs/privacy.md, "MICe-Lap").
        keys = active_sampler().random_keys(2 * n).reshape(2, n)
        exact = np.array([statistic.value_of_rows(xa, ya, B, c, keys)])
        charge = yield bill
        value = mech.randomise(exact, plan)[0]
    return Release(value=float(value),
                   privacy=value_report(request, plan, charge, AllPairs(), 1, 1))
