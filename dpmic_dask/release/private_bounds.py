"""Private bounds alone: :func:`private_bounds`, one charge.

A staged release run by :func:`~dpmic_dask.release.executor.run_charged`: every
check, the precheck and the first pass, the bill, then the noise and the
refining pass. A release with a private-bounds step in front is planned by
:func:`~dpmic_dask.release.boundsplan.plan_private_bounds`. The mechanism is in
:mod:`dpmic_dask.privacy.bounds`; the proof in ``docs/privacy.md``.
"""

from __future__ import annotations

from functools import partial

from dpmic_dask.backends import backend_for
from dpmic_dask.config import engine
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.conversion import check_epsilon
from dpmic_dask.release.axisframe import axis_frame
from dpmic_dask.release.bounding import (
    bound_refusing_missing,
    refuse_mixed_units,
    unit_arguments,
    unit_label,
)
from dpmic_dask.release.boundsread import bounds_release
from dpmic_dask.release.boundsresult import BoundsRelease
from dpmic_dask.release.boundsspec import column_settings
from dpmic_dask.release.charge import Bill, precheck_budget
from dpmic_dask.release.executor import Staged, run_charged
from dpmic_dask.release.histograms import (
    bounds_counts,
    plan_bounds,
    refine_counts,
)
from dpmic_dask.stats.kinds import axis_arguments


def private_bounds(frame, eps, *, columns, coverage=0.99, domain=None, refine=True,
                   nulls="raise", fill=None, ledger=None, dataset=None,
                   split_every=None, progress=None,
                   label=None, privacy_unit=None, max_rows_per_unit=None,
                   kinds=None) -> BoundsRelease:
    """Estimate public-to-be bounds of ``columns`` with ``eps`` (pure DP), one charge.

    See :mod:`dpmic_dask.privacy.bounds` for the mechanism; ``docs/privacy.md`` for the proof.
    ``coverage``, ``domain`` and ``refine`` are one value for every column or a dict
    by column name: the share of values to contain (default 0.99); a loose public
    ``(lo, hi)`` to grid instead of the whole float range; whether the column's
    budget is split over a first pass and a refining pass (default ``True``:
    ``FIRST_PASS_SHARE`` of it to the first) or spent on the first pass alone.
    ``columns`` may also be a dict ``{column: PrivateBounds(...) or "private"}``:
    a :class:`~dpmic_dask.release.boundsspec.PrivateBounds` field set for a column
    overrides the option of the same name for it (the same setting given both ways
    with different values is refused before anything is read).
    Columns of every kind (:mod:`dpmic_dask.stats.kinds`) are estimated on their axis
    (times: seconds since the epoch, UTC); the report prints them in their kind.
    ``kinds`` names a column's kind where its dtype does not say it, as in
    ``pairwise`` (``{"ts": ("timestamp", "s")}`` for epoch seconds).

    ``privacy_unit`` (a column or columns) with ``max_rows_per_unit = k``: privacy
    per unit -- at most ``k`` rows per unit are kept (a keyed hash, fresh key) and
    each histogram's noise is ``k / eps_pass`` (``docs/privacy.md`` section 12); the
    row count is not released.

    ``split_every`` and ``progress`` override :mod:`dpmic_dask.config` for this call;
    not given, they are read from it once, before anything is read.
    """
    knobs = engine(split_every=split_every, progress=progress)
    split_every, progress = knobs.split_every, knobs.progress
    return run_charged(_bounds_alone(
        frame, eps, columns=columns, coverage=coverage, domain=domain, refine=refine,
        nulls=nulls, fill=fill, ledger=ledger, dataset=dataset, split_every=split_every,
        progress=progress, label=label, privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit, kinds=kinds), ledger=ledger, dataset=dataset)


def _bounds_alone(frame, eps, *, columns, coverage, domain, refine, nulls, fill, ledger,
                  dataset, split_every, progress, label, privacy_unit,
                  max_rows_per_unit, kinds=None) -> Staged[BoundsRelease]:
    """:func:`private_bounds`, staged: the checks, the precheck and the first pass,
    the bill, then the noise and the refining pass."""
    backend = backend_for(frame)
    columns, settings = column_settings(columns, {"coverage": coverage, "domain": domain,
                                                  "refine": refine})
    coverage, domain, refine = settings["coverage"], settings["domain"], settings["refine"]
    names = [columns] if isinstance(columns, str) else list(columns or ())
    unit = unit_arguments(backend.schema(frame), names, privacy_unit, max_rows_per_unit)
    axis = axis_arguments(backend.schema(frame), bounds=dict.fromkeys(names, (0.0, 1.0)),
                          columns=names, fill=fill, kinds=kinds)
    fill = axis.fill
    domain = axis.in_axis(domain)  # per-column domains given in each column's kind
    plan = plan_bounds(axis.schema, columns, coverage, domain, nulls, fill,
                       PrivacyCost(check_epsilon(eps)), refine)
    if unit is not None:
        plan = plan.per_unit(unit_label(unit[0]), unit[1])
    precheck_budget(ledger, dataset, PrivacyCost(plan.eps),
                    **({"privacy_unit": unit[0]} if unit is not None else {}))
    if unit is not None:  # a unit column of objects mixing types: refused from the table
        refuse_mixed_units(frame, unit[0], split_every=split_every, progress=progress)
    # every column in axis numbers once, before bounding (the keyed hash then reads
    # them: a per-row map, so the kept set is still the unit's rows and the key's)
    frame = axis_frame(frame, axis.kinds)
    if unit is not None:  # every check passed: bound, then read only the bounded rows
        # missing values refused from the whole table, not the rows the key keeps
        # (in the bounding's first pass); both later passes read the same bounded rows
        frame = bound_refusing_missing(frame, unit[0], unit[1], plan.columns,
                                       missing=plan.columns if plan.fill is None else None,
                                       split_every=split_every)
        backend = backend_for(frame)
    counts, rows = bounds_counts(frame, backend, plan, plan.columns, plan.fill, split_every,
                                 progress, min_rows=unit is None)
    if unit is not None:
        rows = None  # the bounded row count is not public
    else:
        plan.warn_if_blind(rows)
    charge = yield Bill(PrivacyCost(plan.eps), label or "private bounds", "bounds-hist",
                        plan.columns)
    recount = partial(refine_counts, frame, backend, plan, split_every, progress)
    return bounds_release(counts, rows, plan, charge.charge_id, recount, kinds=axis.kinds)
