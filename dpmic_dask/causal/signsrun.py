"""The copula release's signs at released medians, staged
(:mod:`dpmic_dask.causal.quadrant` holds the statistics and their proofs):
:func:`plan_signs` splits the budget and checks every noise before the charge,
:func:`release_signs` does everything after it (the picks, the signs' pass, the
one noisy vector, the tests), and :func:`sign_graph` is the row-level release.
Per unit (:mod:`dpmic_dask.causal.copulaunit`) the same two steps run on the
bounded rows, behind a private row count."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from dpmic_dask.causal.copula import CorrelationTests, nearest_correlation
from dpmic_dask.causal.copulabins import MARGIN_BINS, MARGIN_SHARE, fine_margin_codings
from dpmic_dask.causal.correlationsearch import (
    correlation_result,
    refuse_missing_values,
    same_rows,
)
from dpmic_dask.causal.quadrant import (
    QuadrantBudget,
    combine_signs,
    concordances,
    median_cuts,
    median_selector,
    one_sided,
    share_spread,
    sign_partition,
    tetrachoric,
)
from dpmic_dask.causal.result import CausalGraph, CausalReport, said_flat
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.mechanisms.base import MAX_NOISE_UNITS
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.charge import Bill, warn_if_delta_large
from dpmic_dask.release.report import warn_noise_swamps_tests

if TYPE_CHECKING:
    from dpmic_dask.privacy.charges import Charge


@dataclass(frozen=True)
class SignsPlan:
    """The picks' part and their scores' sensitivity (1 under replacing a row,
    ``k / 2`` per unit), the noise scale of each pick, and the sums' budget."""

    median_part: PrivacyCost
    pick_sensitivity: float
    pick_scale: float
    budget: QuadrantBudget

    def parts(self, budget: QuadrantBudget) -> tuple:
        p = budget.p
        return ((f"medians ({p} noisy picks of a cut among {MARGIN_BINS + 1})",
                 self.median_part.describe(), self.pick_scale),
                ("sign sums", budget.total.describe(), budget.count_scale))


def plan_signs(part: PrivacyCost, p: int, n: int, k: int = 0) -> SignsPlan:
    """:data:`~dpmic_dask.causal.copulabins.MARGIN_SHARE` of ``part`` to the picks,
    the rest to the sums (``k``: 0 at row level, else a unit's rows); refuses,
    before the charge, noise that cannot be sampled or calibrated."""
    median_part, sign_part = part.measure.split(part, [MARGIN_SHARE, 1.0 - MARGIN_SHARE])
    budget = QuadrantBudget(sign_part, p, n, k)
    if not budget.count_scale <= MAX_NOISE_UNITS:
        raise InvalidParameterError("the sign sums' noise is too large to sample; raise eps")
    sensitivity = k / 2.0 if k else 1.0
    try:  # the picks' noise must be calibrated before the charge
        pick = median_selector(median_part, p).noise_scale(MARGIN_BINS + 1, sensitivity)
    except Exception as exc:  # noqa: BLE001 - OpenDP refuses an infinite scale
        raise InvalidParameterError("the medians' noise cannot be calibrated; raise eps") \
            from exc
    return SignsPlan(median_part, sensitivity, pick, budget)


def warn_noisy_signs(budget: QuadrantBudget) -> None:
    """The warning that the released concordances' noise swamps the tests."""
    warn_noise_swamps_tests(budget.scale * budget.total.law.ci95, 2.0,
                            "this causal graph's released sign concordances are noisy",
                            pure=budget.total.is_pure)


def release_signs(plan: SignsPlan, frame, request, backend, progress, margins, n: int,
                  count_sd: float = 0.0):
    """After the charge: each column's cut from the exact ``margins``, the signs'
    pass over ``frame`` (the rows ``margins`` counted), one noisy vector of the
    sums, and the tests on it with ``n`` rows (a noisy count of standard deviation
    ``count_sd`` per unit). Returns ``(budget, released, cuts, tests, flat)``;
    ``flat``: the columns whose released share on one side of the cut is within
    the noise of 0 or 1 (:func:`~dpmic_dask.causal.quadrant.one_sided`), their
    correlations read as 0."""
    p = len(request.codings)
    rows = int(margins.rows)
    cuts = median_cuts(margins.counts, rows, plan.median_part, plan.pick_sensitivity)
    sums = backend.reduce(frame, request.names,
                          partial(sign_partition, codings=fine_margin_codings(request.codings),
                                  cuts=cuts),
                          combine_signs, split_every=8, progress=progress)
    same_rows(sums, rows)
    refuse_missing_values(sums, request)  # only data changed between the passes
    budget = replace(plan.budget, n=n)
    released = budget.release(sums.vector())
    spread = share_spread(budget.variance, count_sd, n)
    flat = one_sided(released, p, n, spread=spread)
    r, slope, sampling, latent = tetrachoric(released, p, n, spread=spread)
    tests = CorrelationTests(nearest_correlation(r), n, request.alpha, "copula",
                             noise_var=budget.variance, slope=slope, sampling=sampling,
                             beta=concordances(released, p, n), cuts=latent,
                             # a cut that leaves under 1% on one side (a noisy
                             # share of a constant column): out of the figure
                             flat=one_sided(released, p, n, edge=0.01, spread=spread))
    return budget, released, cuts, tests, flat


def sign_result(request, tests, report, released, cuts, flat) -> CausalGraph:
    """PC on the tests, with the released sums and cuts on the result; columns
    with (nearly) every row on one side of the cut are said in the report and a
    warning (after the charge: shown, never raised)."""
    cut_of = {name: int(c) for name, c in zip(request.names, np.asarray(cuts))}
    report = replace(report, flat=said_flat(request.names, flat, "copula"))
    return correlation_result(request, tests, None, report,
                              released={"signs": released, "cuts": cut_of})


def sign_graph(frame, request, total, margins, backend, progress,
               label) -> Generator[Bill, Charge, CausalGraph]:
    """The row-level copula release without bins: after the first pass
    (``margins``, exact, with the public ``n``) and every check, the bill; then
    :func:`release_signs` and PC on its tests."""
    p = len(request.codings)
    n = int(margins.rows)
    plan = plan_signs(total, p, n)
    warn_if_delta_large(total.delta, n)
    warn_noisy_signs(plan.budget)
    yield Bill(total, label or f"causal graph of {p} columns", "causal-pc-copula",
               request.names)
    budget, released, cuts, tests, flat = release_signs(plan, frame, request, backend,
                                                        progress, margins, n)
    detail = (f"noisy picks of each column's median, then one release of the {p} columns' "
              f"and {request.pairs} pairs' sums of signs; the search is post-processing")
    report = CausalReport(
        True, "copula", request.alpha, n, 2, request.max_condition_size,
        epsilon=total.epsilon, delta=total.delta,
        statement=privacy_statement(total, request.pairs, detail), parts=plan.parts(budget),
        passes=2, noise_scale=budget.scale, smallest_visible=tests.smallest_visible(),
        statistic="signs")
    return sign_result(request, tests, report, released, cuts, flat)


__all__ = ["SignsPlan", "plan_signs", "release_signs", "sign_graph", "sign_result",
           "warn_noisy_signs"]
