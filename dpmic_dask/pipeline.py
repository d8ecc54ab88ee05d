"""The release pipeline: validate -> count -> charge -> noise -> optimise -> result.

:func:`run_pairwise` (behind ``ddf.dpmic.pairwise``) and :func:`private_mic`
both end in :func:`release_micr` / :func:`release_statistics`: one budget
charge, recorded before any noise is drawn, then noise drawn once. Nothing
returned can redraw noise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from . import accounting
from .accounting import InMemoryLedger, NoisePlan
from .counts import pair_counts
from .defaults import default_parameters
from .errors import (
    BudgetExceededError,
    InvalidDataError,
    InvalidParameterError,
    MissingValuesError,
    PrivacyLeakWarning,
)
from .grids import master_grid_family
from .limits import check_grid_lower_bound, check_mice_grid, check_micr_grid
from .mechanisms import noisy_counts, noisy_values
from .mice import mice_on_distinct_ranks
from .noise import active_sampler
from .partition import CountSpec, PartialCounts
from .reduce import DEFAULT_SPLIT_EVERY, Aggregate, aggregate, count_rows, optimise_pairs
from .results import PairwiseResult, Release
from .validation import (
    MIN_ROWS,
    check_bounds,
    check_clump_factor,
    check_frame_request,
    check_max_cells,
    check_pair,
)

_SESSION_LEDGER = InMemoryLedger(uncapped=True)
DEFAULT_DATASET = "default"


def session_ledger() -> InMemoryLedger:
    """The in-process ledger used when no ledger is given.

    It is *uncapped*: it accepts every dataset and records every charge without
    limiting anything. Pass a capped :class:`~dpmic_dask.accounting.InMemoryLedger`
    or a persistent :class:`~dpmic_dask.ledger.SQLLedger` to enforce a budget; those
    refuse datasets they hold no budget for.
    """
    return _SESSION_LEDGER


def _ledger(ledger):
    return _SESSION_LEDGER if ledger is None else ledger


def charge_budget(plan: NoisePlan, ledger, dataset, description: str, columns=()):
    """The one budget charge of a release; raises before any noise if over budget."""
    return _ledger(ledger).charge(dataset or DEFAULT_DATASET, plan.cost, description=description,
                                  mechanism=plan.mechanism, columns=tuple(columns))


def release_micr(agg: Aggregate, plan: NoisePlan, *, ledger, dataset, description: str,
                 use_cluster: bool = False):
    """Release one private MICr per pair from exact counts. Returns ``(values, charge)``.

    Laplace/Gaussian: exact MICr where the counts are, then charge, then noise.
    Geom: charge, then noise on every count, then MICr of the noisy counts.
    """
    columns = agg.spec.columns
    family = agg.spec.family
    if plan.mechanism == "micr-geom":
        counts = agg.counts()
        charge = charge_budget(plan, ledger, dataset, description, columns)
        noisy = np.stack([noisy_counts(c, plan) for c in counts])
        return optimise_pairs(noisy, family, use_cluster=use_cluster), charge
    exact = agg.exact_micr()
    charge = charge_budget(plan, ledger, dataset, description, columns)
    return noisy_values(exact, plan), charge


def release_statistics(exact: np.ndarray, plan: NoisePlan, *, ledger, dataset, description: str,
                       columns=()):
    """Release noisy versions of already-computed exact statistics (MICe-Lap)."""
    charge = charge_budget(plan, ledger, dataset, description, columns)
    return noisy_values(exact, plan), charge


def _grid_parameters(mechanism: str, n: int, eps_per_pair: float, B, c):
    default_B, default_c = default_parameters(mechanism, n, eps_per_pair)
    if mechanism == "mice-lap":
        B = default_B if B is None else float(B)
    elif B is None:
        B = default_B
    return B, (default_c if c is None else c)


def precheck_budget(ledger, dataset, mechanism: str, eps: float, delta: float) -> None:
    """Before any data is read: refuse what the charge would refuse (an unknown
    dataset, a ledger that cannot be reached, a budget of the wrong kind or one too
    small). Not binding: the atomic charge after counting is what counts. The cost
    is computed by the same rule the charge uses (``accounting.release_cost``)."""
    cost = accounting.release_cost(mechanism, eps, delta)
    try:
        _ledger(ledger).check(dataset or DEFAULT_DATASET, cost)
    except BudgetExceededError as exc:
        message = str(exc)
    else:
        return
    raise BudgetExceededError(f"{message}; no data was read")


def warn_if_delta_large(delta: float, n: int) -> None:
    """``delta`` at or above ``1 / N`` allows releasing a random row in the clear."""
    if delta > 0 and delta * n >= 1:
        warnings.warn(
            f"delta = {delta:g} is at least 1/N for N = {n} rows: an (eps, delta) guarantee "
            "this weak allows publishing a random row in the clear; use delta well below 1/N",
            PrivacyLeakWarning, stacklevel=3)


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
    eps = accounting.check_epsilon(eps)
    delta = accounting.check_delta(delta)
    resolved = accounting.resolve_mechanism(mechanism, eps, delta, 1)
    xb = check_bounds(x_bounds, "x_bounds")
    yb = check_bounds(y_bounds, "y_bounds")
    B = None if B is None else check_max_cells(B)
    c = None if c is None else check_clump_factor(c)
    if resolved != "mice-lap":
        check_grid_lower_bound(B, c, 1)
    precheck_budget(ledger, dataset, resolved, eps, delta)
    xa, ya = check_pair(x, y)
    n = xa.shape[0]
    if resolved == "mice-lap" and n < 6:
        raise InvalidDataError("mechanism 'mice-lap' needs at least 6 rows")
    warn_if_delta_large(delta, n)
    B, c = _grid_parameters(resolved, n, eps, B, c)
    if resolved == "mice-lap":
        check_mice_grid(B, c)
    else:
        check_micr_grid(B, c, 1)
    plan = accounting.plan_release(mechanism=resolved, n=n, eps=eps, delta=delta, pairs=1, B=B, c=c)
    description = f"private_mic {resolved}"
    if resolved == "mice-lap":
        # Ties broken by secret per-row keys: the published sensitivity holds only
        # for distinct values (docs/privacy.md, "MICe-Lap").
        keys = active_sampler().random_keys(n)
        exact = np.array([mice_on_distinct_ranks(xa, ya, B, c, keys)])
        values, charge = release_statistics(exact, plan, ledger=ledger, dataset=dataset,
                                            description=description, columns=("x", "y"))
    else:
        family = master_grid_family(B, c)
        counts = pair_counts(xa, ya, xb, yb, family)[np.newaxis]
        spec = CountSpec(("x", "y"), (xb, yb), None, family)
        agg = Aggregate(spec, n, np.zeros(2, bool), _local=PartialCounts(counts, n, np.zeros(2, bool)))
        values, charge = release_micr(agg, plan, ledger=ledger, dataset=dataset,
                                      description=description)
    return Release(
        value=float(values[0]), mechanism=resolved, epsilon=plan.cost.epsilon,
        delta=plan.cost.delta, noise_scale=plan.noise_scale, ci95=plan.ci95, B=B, c=c, n=n,
        sensitivity=plan.sensitivity, rho=plan.cost.rho, charge_id=charge.charge_id,
        seeded=not active_sampler().secure,
        statement=accounting.privacy_statement(plan.cost, 1),
    )


def _check_frame(frame):
    if isinstance(frame, pd.DataFrame):
        return frame.dtypes
    if hasattr(frame, "to_delayed") and hasattr(frame, "dtypes"):
        return frame.dtypes
    raise InvalidDataError("expected a pandas or Dask DataFrame")


def _count(frame, columns, bounds, fills, B, c, split_every, progress) -> Aggregate:
    spec = CountSpec(columns, bounds, fills, master_grid_family(B, c))
    agg = aggregate(frame, spec, split_every=split_every, progress=progress)
    if agg.rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    if fills is None and agg.missing.any():
        names = [c for c, m in zip(columns, agg.missing) if m]
        raise MissingValuesError(
            f"column(s) {names} contain missing values; pass nulls='fill' with public "
            "fill values (nothing was charged)"
        )
    return agg


def run_pairwise(frame, eps, *, bounds, columns=None, delta=0.0, mechanism="auto", B=None,
                 c=None, nulls="raise", fill=None, ledger=None, dataset=None,
                 split_every: int = DEFAULT_SPLIT_EVERY, progress=None,
                 label: str | None = None) -> PairwiseResult:
    """Private MIC of every pair of the selected columns: count, charge once, noise once.

    See :meth:`dpmic_dask.accessor.DPMICAccessor.pairwise` for the parameters.
    """
    eps = accounting.check_epsilon(eps)
    delta = accounting.check_delta(delta)
    accounting.check_mechanism(mechanism)
    if mechanism == "mice-lap":
        raise InvalidParameterError(
            "mechanism 'mice-lap' ranks the whole table in memory and cannot be computed "
            "from mergeable counts; use dpmic_dask.private_mic on in-memory columns"
        )
    B = None if B is None else check_max_cells(B)
    c = None if c is None else check_clump_factor(c)
    if not isinstance(split_every, int) or split_every < 2:
        raise InvalidParameterError("split_every must be an integer >= 2")
    columns, checked, fills = check_frame_request(
        _check_frame(frame), bounds=bounds, columns=columns, nulls=nulls, fill=fill)
    n_pairs = len(columns) * (len(columns) - 1) // 2
    resolved = accounting.resolve_mechanism(mechanism, eps, delta, n_pairs)
    check_grid_lower_bound(B, c, n_pairs, split_every)
    precheck_budget(ledger, dataset, resolved, eps, delta)

    n_rows = count_rows(frame, columns) if (B is None or c is None) else None
    if n_rows is not None and n_rows < MIN_ROWS:
        raise InvalidDataError(f"at least {MIN_ROWS} rows are needed")
    B, c = _grid_parameters(resolved, n_rows or MIN_ROWS, eps / n_pairs, B, c)
    check_micr_grid(B, c, n_pairs, split_every)
    agg = _count(frame, columns, checked, fills, B, c, split_every, progress)
    n = agg.rows
    warn_if_delta_large(delta, n)
    plan = accounting.plan_release(mechanism=resolved, n=n, eps=eps, delta=delta,
                                   pairs=n_pairs, B=B, c=c)
    values, charge = release_micr(
        agg, plan, ledger=ledger, dataset=dataset,
        description=label or "pairwise",
        use_cluster=not isinstance(frame, pd.DataFrame),
    )
    return PairwiseResult(
        columns=columns,
        pairs=tuple((columns[i], columns[j]) for i, j in agg.spec.pairs),
        values=tuple(float(v) for v in values),
        mechanism=resolved, epsilon=plan.cost.epsilon, delta=plan.cost.delta,
        noise_scale=plan.noise_scale, ci95=plan.ci95, n=n, B=B, c=c,
        sensitivity=plan.sensitivity, rho=plan.cost.rho, charge_id=charge.charge_id,
        seeded=not active_sampler().secure,
        statement=accounting.privacy_statement(plan.cost, n_pairs),
    )


def run_pairwise_nonprivate(frame, *, bounds, B, c, columns=None, nulls="raise", fill=None,
                            split_every: int = DEFAULT_SPLIT_EVERY, progress=None) -> pd.DataFrame:
    """Exact (NON-PRIVATE) MICr of every pair: a DataFrame ``x, y, micr, n, B, c``."""
    B = check_max_cells(B)
    c = check_clump_factor(c)
    columns, checked, fills = check_frame_request(
        _check_frame(frame), bounds=bounds, columns=columns, nulls=nulls, fill=fill)
    check_micr_grid(B, c, len(columns) * (len(columns) - 1) // 2, split_every)
    agg = _count(frame, columns, checked, fills, B, c, split_every, progress)
    return pd.DataFrame({
        "x": [columns[i] for i, _ in agg.spec.pairs],
        "y": [columns[j] for _, j in agg.spec.pairs],
        "micr": agg.exact_micr(),
        "n": agg.rows,
        "B": B,
        "c": c,
    })
