"""The release pipeline: validate -> count -> charge -> noise -> optimise -> result.

Every private release goes through :func:`release_counts` (MICr mechanisms) or
:func:`release_statistics` (MICe-Lap): one budget charge, recorded before any
noise is drawn, then noise drawn once. Nothing returned can redraw noise.
"""

from __future__ import annotations

import numpy as np

from . import accounting
from .accounting import InMemoryLedger, NoisePlan
from .characteristic import micr_from_counts
from .counts import pair_counts
from .defaults import default_parameters
from .errors import InvalidDataError
from .grids import master_grid_family
from .mechanisms import noisy_counts, noisy_values
from .mice import mice_statistic
from .noise import active_sampler
from .results import Release
from .validation import check_bounds, check_clump_factor, check_max_cells, check_pair

_SESSION_LEDGER = InMemoryLedger()
DEFAULT_DATASET = "default"


def session_ledger() -> InMemoryLedger:
    """The in-process ledger used when no ledger is given (no cap; records every charge)."""
    return _SESSION_LEDGER


def charge_budget(plan: NoisePlan, ledger, dataset: str, description: str):
    """The one budget charge of a release; raises before any noise if over budget."""
    ledger = _SESSION_LEDGER if ledger is None else ledger
    return ledger.charge(dataset or DEFAULT_DATASET, plan.cost, description=description)


def release_counts(counts: list[np.ndarray], family, plan: NoisePlan, *, ledger, dataset,
                   description: str):
    """Release one private MICr per pair from exact master counts.

    Returns ``(values, charge)``.
    """
    charge = charge_budget(plan, ledger, dataset, description)
    if plan.mechanism == "micr-geom":
        values = np.array([micr_from_counts(noisy_counts(c, plan), family) for c in counts])
    else:
        exact = np.array([micr_from_counts(c, family) for c in counts])
        values = noisy_values(exact, plan)
    return values, charge


def release_statistics(exact: np.ndarray, plan: NoisePlan, *, ledger, dataset, description: str):
    """Release noisy versions of already-computed exact statistics (MICe-Lap)."""
    charge = charge_budget(plan, ledger, dataset, description)
    return noisy_values(exact, plan), charge


def _resolve_grid(mechanism: str, n: int, eps_per_pair: float, B, c):
    default_B, default_c = default_parameters(mechanism, n, eps_per_pair)
    if mechanism == "mice-lap":
        B = default_B if B is None else float(check_max_cells(B))
    else:
        B = default_B if B is None else check_max_cells(B)
    c = default_c if c is None else check_clump_factor(c)
    return B, c


def private_mic(x, y, *, eps, x_bounds, y_bounds, mechanism="auto", delta=0.0, B=None, c=None,
                ledger=None, dataset=None) -> Release:
    """Differentially private MIC of one pair of in-memory columns.

    Parameters
    ----------
    x, y : array-like of real numbers, same length n (public), no NaN
    eps : float > 0
        Total privacy budget of this release.
    x_bounds, y_bounds : (lo, hi)
        Public bounds, chosen without looking at the data; values outside are clamped.
    mechanism : {"auto", "micr-lap", "micr-gauss", "mice-lap", "micr-geom"}
        ``auto`` is ``micr-lap`` for ``delta == 0``, otherwise the one of ``micr-lap``
        and ``micr-gauss`` with less noise.
    delta : float in [0, 1)
    B, c : int, optional
        Grid parameters; defaults come from ``(n, eps)`` only (``dpmic_dask.defaults``).
    ledger : ledger, optional
        Where the charge is recorded (default: the in-process session ledger).
    dataset : str, optional
        Dataset id the charge is recorded under.

    Returns
    -------
    Release
        The value is computed, charged and noised exactly once.
    """
    # Every data-independent check first.
    eps = accounting.check_epsilon(eps)
    delta = accounting.check_delta(delta)
    resolved = accounting.resolve_mechanism(mechanism, eps, delta, 1)
    xb = check_bounds(x_bounds, "x_bounds")
    yb = check_bounds(y_bounds, "y_bounds")
    if B is not None:
        check_max_cells(B)
    if c is not None:
        check_clump_factor(c)
    xa, ya = check_pair(x, y)
    n = xa.shape[0]
    if resolved == "mice-lap" and n < 6:
        raise InvalidDataError("mechanism 'mice-lap' needs at least 6 rows")
    B, c = _resolve_grid(resolved, n, eps, B, c)
    plan = accounting.plan_release(mechanism=resolved, n=n, eps=eps, delta=delta, pairs=1, B=B, c=c)
    description = f"private_mic {resolved}"
    if resolved == "mice-lap":
        exact = np.array([mice_statistic(xa, ya, B, c)])
        values, charge = release_statistics(exact, plan, ledger=ledger, dataset=dataset,
                                            description=description)
    else:
        family = master_grid_family(B, c)
        counts = pair_counts(xa, ya, xb, yb, family)
        values, charge = release_counts([counts], family, plan, ledger=ledger, dataset=dataset,
                                        description=description)
    return Release(
        value=float(values[0]),
        mechanism=resolved,
        epsilon=plan.cost.epsilon,
        delta=plan.cost.delta,
        noise_scale=plan.noise_scale,
        ci95=plan.ci95,
        B=B,
        c=c,
        n=n,
        sensitivity=plan.sensitivity,
        rho=plan.cost.rho,
        charge_id=charge.charge_id,
        seeded=not active_sampler().secure,
        statement=accounting.privacy_statement(plan.cost, 1),
    )
