"""Private causal discovery: the PC algorithm with private independence tests.

:func:`causal_graph` runs, in order:

1. every check of the arguments (columns, public bounds or categories, bins,
   ``eps``, ``delta``, ``alpha``, shares) and the budget precheck -- no data read;
2. the first pass (level 0: every pair's table), which also gives the public
   row count and refuses missing values;
3. the row-count check and the noise calibration of every part
   (:class:`~dpmic_dask.causal.decide.CausalBudget`);
4. **the one charge** of the whole budget, fixed in advance, made by the
   executor (:func:`~dpmic_dask.release.executor.run_charged`: the release is
   staged, steps 1-3 before its bill, steps 5-6 after);
5. per level: private decisions and separating-set choices (noise), then the
   next level's pass;
6. the CPDAG and the edges' statistics (post-processing).

Nothing after the charge can refuse; a failure no check could foresee (the data
changed or became unreadable between passes) is reported as a charged but
incomplete release.

The request and every check of its arguments (step 1, before the budget
precheck) are :mod:`dpmic_dask.causal.request`.
"""

from __future__ import annotations

import math
import warnings
from functools import partial

from dpmic_dask.backends import backend_for
from dpmic_dask.causal.citests import g_threshold, statistic_range, tau_threshold
from dpmic_dask.causal.copula import (
    CorrelationTests,
    copula_correlation,
    pearson_matrix,
    tau_matrix,
)
from dpmic_dask.causal.copularun import (
    copula_codings,
    copula_graph,
    correlation_grids,
    margins_pass,
)
from dpmic_dask.causal.copulaunit import (
    check_unit_arguments,
    unit_copula_graph,
    unit_table_graph,
)
from dpmic_dask.causal.correlationsearch import (
    check_rows,
    correlation_result,
    refuse_missing_values,
)
from dpmic_dask.causal.decide import (
    CausalBudget,
    check_shares,
    sensitivity,
    smallest_visible_decision,
)
from dpmic_dask.causal.levelcount import counter, first_level
from dpmic_dask.causal.orient import cpdag
from dpmic_dask.causal.request import (
    DEFAULT_BINS,
    MAX_BINS,  # noqa: F401  (re-exported)
    MAX_CATEGORIES,  # noqa: F401  (re-exported)
    CausalRequest,
    check_request,  # noqa: F401  (re-exported)
    seconds_request,
)
from dpmic_dask.causal.result import CausalGraph, CausalReport
from dpmic_dask.causal.skeleton import Margins, exact_decision, pc_skeleton
from dpmic_dask.causal.tablerelease import released_tables_graph
from dpmic_dask.config import engine
from dpmic_dask.errors import InvalidParameterError, UnusedParameterWarning, user_stacklevel
from dpmic_dask.privacy.conversion import check_delta, check_epsilon
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.charge import (
    Bill,
    check_ledger,
    precheck_budget,
    warn_if_delta_large,
)
from dpmic_dask.release.executor import Staged, run_charged
from dpmic_dask.release.report import warn_noise_swamps_tests


def _run(frame, request, n, backend, split_every, progress, decide, first, passes,
         causallearn=False):
    """PC on ``frame`` with ``first`` (level 0's layout and counts) already counted."""
    count = counter(frame, request, backend, split_every, progress, passes)
    pending = [first]

    def count_level(keys):
        if pending:
            return pending.pop()
        layout, summed = count(keys)
        refuse_missing_values(summed, request)
        return layout, summed.counts

    margins = partial(Margins, n=n, test=request.test, alpha=request.alpha,
                      causallearn=causallearn)

    def read(layout, counts):
        return margins(layout, counts)

    return pc_skeleton(len(request.codings), count_level=count_level, decide=decide,
                       max_level=request.max_condition_size, margins=read)


def causal_graph(frame, eps, *, delta=0.0, columns=None, alpha=0.05, max_condition_size=2,
                 bounds=None, categories=None, bins=DEFAULT_BINS, test="auto",
                 select_share=0.25, level_shares=None, ledger=None, dataset=None,
                 label=None, split_every=None, progress=None, privacy_unit=None,
                 max_rows_per_unit=None, count_share=None) -> CausalGraph:
    """Release a differentially private CPDAG of ``frame``'s columns, once.

    The PC algorithm (PC-stable skeleton, v-structures, Meek's rules R1-R3) with
    every independence decision made privately. The whole ``(eps, delta)`` is
    charged once, before any noise is drawn, and does not depend on what the data
    make PC do. The copula test releases one rank-correlation matrix; the released
    tables (``"chisq"``) give each level ``0 .. max_condition_size`` its share for one
    noisy vector of the joint tables it reads; the per-test decisions (``"tau"``,
    ``"g"``) give each level its share and pay for a decision on every one of the
    ``P = p (p - 1) / 2`` pairs (its worst case). Every test is post-processing of
    what was released; see ``docs/causal.md``.

    Parameters
    ----------
    frame : pandas or Dask DataFrame
    eps : float > 0
        Total privacy budget of the release.
    delta : float in [0, 1)
        ``0``: pure ``eps``-DP. ``> 0``: zCDP accounting (Gumbel-noise decisions,
        Gaussian statistics), which is several times more accurate for many columns.
    columns : list, optional
        Columns to use (default: every column with bounds or categories).
    alpha : float
        Level of each independence test (its threshold without noise).
    max_condition_size : int
        Largest conditioning set (PC's depth); sets the number of levels paid for.
    bounds : dict {column: (lo, hi)}
        Public bounds of numeric columns (decimals included), binned into
        ``bins`` equal-width bins (values outside are clamped).
    categories : dict {column: [values...]}
        Public category lists (booleans, codes, strings); any other value falls in
        one extra "other" bin.
    bins : int
        Bins per bounded column (default 5) for the table tests (``"chisq"``,
        ``"g"``, ``"tau"``).
    test : {"auto", "copula", "chisq", "g", "tau"}
        ``"auto"`` (default) chooses from the column kinds (``docs/causal.md``):
        ``"copula"`` when every column has bounds, ``"tau"`` for bounded columns
        beside categorical ones that are all binary, else ``"chisq"``.
        ``"copula"``: the Gaussian-copula test -- one release of the Kendall tau
        matrix on bins at released quantiles, or, with too few rows for those
        (public: ``n``, ``p``, the budget), of the sums of signs at released
        medians (``dpmic_dask.causal.quadrant``); PC as post-processing
        (``dpmic_dask.causal.copula``).
        ``"chisq"``: per level one release of the joint tables the tests read,
        Pearson's chi-square on them as post-processing
        (``dpmic_dask.causal.tablerelease``). ``"g"``: noisy per-test decisions on
        the G-test. ``"tau"``: conditional Kendall's tau z-score on binned tables.
    select_share : float in (0, 1)
        ``"g"`` and ``"tau"``: share of each level from 1 on spent choosing the
        separating sets of removed edges (they orient the v-structures); the rest
        decides. Not used by ``"copula"`` and ``"chisq"`` (no noisy choice).
    level_shares : list of floats, optional
        Relative weights of the levels (default equal).
    ledger, dataset, label
        Where the one charge is recorded, and under which name.
    split_every, progress
        Overrides of :mod:`dpmic_dask.config` for this call; not given, they are
        read from it once, before anything is read. The copula and Fisher z
        tests sum their pass's partial grids (up to 2^25 counts each) two at a
        time whatever ``split_every`` says, so that few wait in memory at once.
    privacy_unit, max_rows_per_unit, count_share
        Privacy per unit (the copula test and the released tables): neighbouring
        tables differ by all rows of one unit, of which at most
        ``max_rows_per_unit`` are kept; for the copula test a private row count
        (``count_share`` of the budget, default 5%) is the tests' row count and
        the release is the sums of signs at released medians
        (:mod:`dpmic_dask.causal.copulaunit`). ``test="auto"`` on a mixed table
        takes the released tables per unit.

    Returns
    -------
    CausalGraph
        ``.edges`` (with each kept edge's statistic), ``.separating_sets`` and
        ``.separation_statistic`` (the value of the test that removed each pair),
        ``.adjacency()``, ``.report()``, ``.plot()``, ``.to_dot()``.
    """
    knobs = engine(split_every=split_every, progress=progress)
    split_every, progress = knobs.split_every, knobs.progress
    units = (privacy_unit, max_rows_per_unit, count_share)
    return run_charged(_causal(frame, eps, delta, columns, alpha, max_condition_size, bounds,
                               categories, bins, test, select_share, level_shares, ledger,
                               dataset, label, split_every, progress, units),
                       ledger=ledger, dataset=dataset)


def _warn_unused(test: str, per_unit: bool, level_shares, count_share) -> None:
    """Say which given arguments the chosen test does not use (before the charge)."""
    unused = []
    if level_shares is not None and test == "copula":
        unused.append("level_shares (the copula test releases every level's statistics "
                      "at once)")
    if count_share is not None and per_unit and test == "chisq":
        unused.append("count_share (the released tables per unit hold their row count; "
                      "none is released apart)")
    if unused:
        warnings.warn(f"test {test!r} does not use {' or '.join(unused)}",
                      UnusedParameterWarning, stacklevel=user_stacklevel())


def _causal(frame, eps, delta, columns, alpha, max_condition_size, bounds, categories, bins,
            test, select_share, level_shares, ledger, dataset, label, split_every,
            progress, units=(None, None, None)) -> Staged[CausalGraph]:
    """:func:`causal_graph`, staged: every check, the precheck and the first pass,
    the bill of the whole budget, then the private search."""
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    check_ledger(ledger)
    backend = backend_for(frame)
    frame, request = seconds_request(frame, backend, columns=columns, alpha=alpha,
                                     max_condition_size=max_condition_size, bounds=bounds,
                                     categories=categories, bins=bins, test=test,
                                     per_unit=units[0] is not None)
    shares = check_shares(level_shares, request.levels, select_share)
    if request.test == "fisherz":
        raise InvalidParameterError(
            'test="fisherz" is the exact reference (causal_graph_exact) only; the private '
            'test of continuous columns is "copula"')
    per_unit = check_unit_arguments(backend.schema(frame), request, *units)
    _warn_unused(request.test, per_unit is not None, level_shares, units[2])
    precheck_budget(ledger, dataset, measure_for(delta).total(eps, delta),
                    privacy_unit=per_unit[0] if per_unit else None)
    if per_unit is not None and request.test == "chisq":
        return (yield from unit_table_graph(frame, request, eps, delta, per_unit, shares[0],
                                            backend, split_every, progress, label))
    if per_unit is not None:
        return (yield from unit_copula_graph(frame, request, eps, delta, per_unit, backend,
                                             split_every, progress, label))
    if request.test == "chisq":
        return (yield from released_tables_graph(frame, request, eps, delta, shares[0],
                                                 backend, split_every, progress, label))
    if request.test == "copula":
        return (yield from copula_graph(frame, request, eps, delta, backend,
                                        progress, label))
    passes: list[int] = []
    n, first = first_level(frame, request, backend, split_every, progress, passes)
    warn_if_delta_large(delta, n)
    budget = CausalBudget.plan(eps, delta, shares=shares, pairs=request.pairs,
                               test=request.test, n=n, high=_margin_range(request, n))
    budget.check()
    _warn_if_noisy(request, n, budget)  # public quantities only, before the charge
    yield Bill(budget.total, label or f"causal graph of {len(request.codings)} columns",
               f"causal-pc-{request.test}", request.names)
    skeleton = _run(frame, request, n, backend, split_every, progress, budget.decide, first,
                    passes)
    report = _private_report(request, n, budget, skeleton, len(passes))
    return _result(request, n, skeleton, dict(skeleton.last_statistic), report)


def _warn_if_noisy(request: CausalRequest, n: int, budget: CausalBudget) -> None:
    """:class:`~dpmic_dask.errors.NoiseWarning` before the charge when the noisiest
    level's decision noise (95% half-width) exceeds a quarter of the test
    statistic's range, as a pairwise release warns when its ``ci95`` exceeds a
    quarter of MIC's range ``[0, 1]`` (public: ``n``, ``p``, the shares)."""
    largest = max(c.size for c in request.codings)
    span = statistic_range(request.test, n, (1, largest, largest))
    factor = budget.total.law.ci95
    ci95 = max(budget.decision_scale(level) * factor
               for level in range(len(budget.decision_parts)))
    statistic = "|Z| of Kendall's tau" if request.test == "tau" else "G"
    warn_noise_swamps_tests(ci95, span, f"this causal graph's tests ({statistic}) are noisy",
                            pure=budget.total.is_pure)


def _margin_range(request: CausalRequest, n: int) -> float:
    """A public bound on ``|statistic - threshold|`` of every test the request can
    make (margins are clipped to it)."""
    largest = max(c.size for c in request.codings)
    if request.test == "tau":
        threshold = tau_threshold(request.alpha)
    else:
        df = (largest - 1) ** 2 * largest ** request.max_condition_size
        threshold = g_threshold(request.alpha, df)
    return statistic_range(request.test, n, (1, largest, largest)) + threshold


def causal_graph_exact(frame, *, columns=None, alpha=0.05, max_condition_size=2, bounds=None,
                       categories=None, bins=DEFAULT_BINS, test="auto",
                       split_every=None, progress=None) -> CausalGraph:
    """NOT PRIVATE: the same PC search with exact decisions (for references).

    With ``test="g"`` (``"chisq"``) each decision is causal-learn's ``gsq``
    (``chisq``) test (degrees of freedom without empty rows and columns,
    independence when ``p > alpha``), so the skeleton equals causal-learn's
    ``pc(..., indep_test="gsq", stable=True)`` on the binned data. With
    ``test="fisherz"`` each decision is causal-learn's ``fisherz`` test on the
    Pearson correlations of the raw values (the same skeleton as
    ``pc(..., indep_test="fisherz", stable=True)``). With ``test="tau"`` it is
    the private release's decision without noise; with ``"copula"`` the copula
    test on bins at the exact marginal quantiles (what a private release with
    enough rows for its eps places at noisy ones; one with too few rows bins
    equal-width). Charges nothing. ``split_every`` and ``progress``: as for
    :func:`causal_graph`.
    """
    knobs = engine(split_every=split_every, progress=progress)
    split_every, progress = knobs.split_every, knobs.progress
    backend = backend_for(frame)
    frame, request = seconds_request(frame, backend, columns=columns, alpha=alpha,
                                     max_condition_size=max_condition_size, bounds=bounds,
                                     categories=categories, bins=bins, test=test)
    if request.test in ("copula", "fisherz"):
        codings = None
        if request.test == "copula":  # the bins at the exact marginal quantiles
            margins = margins_pass(frame, request, backend, progress)
            codings = copula_codings(request, margins.counts)
        grids, codings = correlation_grids(frame, request, backend, progress, codings)
        n = check_rows(int(grids.rows))
        if request.test == "copula":
            tau = tau_matrix(grids, len(codings), codings[0].size, n)
            tests = CorrelationTests(copula_correlation(tau), n, request.alpha, "copula",
                                     tau=tau)
        else:
            tau = None
            tests = CorrelationTests(pearson_matrix(grids, n), n, request.alpha, "fisherz")
        report = CausalReport(False, request.test, request.alpha, n, codings[0].size,
                              request.max_condition_size,
                              passes=2 if request.test == "copula" else 1, noise_scale=0.0,
                              smallest_visible=tests.smallest_visible())
        return correlation_result(request, tests, tau, report, codings)
    passes: list[int] = []
    n, first = first_level(frame, request, backend, split_every, progress, passes)
    skeleton = _run(frame, request, n, backend, split_every, progress, exact_decision, first,
                    passes, causallearn=request.test in ("g", "chisq"))
    report = CausalReport(False, request.test, request.alpha, n, request.bins,
                          request.max_condition_size, levels=tuple(skeleton.levels),
                          passes=len(passes))
    return _result(request, n, skeleton, dict(skeleton.last_statistic), report,
                   colliders=skeleton.separating_union)


def _private_report(request, n, budget: CausalBudget, skeleton, passes) -> CausalReport:
    parts = []
    ran = len(skeleton.levels)
    for level, part in enumerate(budget.decision_parts):
        law = budget.total.law.scale_words
        # every level is paid before the search starts: one the search ended before
        # still adds to the charge, and says it never ran
        idle = level >= ran
        after = " (not run: the search ended before it; paid with the rest)" * idle
        parts.append((f"level {level} decisions ({request.pairs} noisy margins, {law}){after}",
                      part.describe(), math.nan if idle else budget.decision_scale(level)))
        chooser = budget.select_parts[level]
        if chooser is not None:
            parts.append((f"level {level} separating sets ({request.pairs} noisy "
                          f"max choices){after}", chooser.describe(),
                          math.nan if idle else budget.select_scale(level)))
    detail = (f"{len(budget.decision_parts)} levels of {request.pairs} noisy edge "
              "decisions and separating-set choices")
    statement = privacy_statement(budget.total, request.pairs, detail)
    sizes = sorted(c.size for c in request.codings)
    scale = budget.decision_scale(0)
    most = 1.0 if request.test == "tau" else math.sqrt(sizes[-2] - 1)
    seen = smallest_visible_decision(request.test, n, scale, budget.total.is_pure,
                                     request.alpha, (sizes[-1] - 1) * (sizes[-2] - 1), most)
    return CausalReport(
        True, request.test, request.alpha, n, request.bins, request.max_condition_size,
        epsilon=budget.total.epsilon, delta=budget.total.delta, statement=statement,
        parts=tuple(parts), levels=tuple(skeleton.levels), passes=passes,
        noise_scale=scale, smallest_visible=seen,
        sensitivities=tuple(sensitivity(request.test, n, d) for d in range(request.levels)))


def _result(request, n, skeleton, statistic, report, colliders=None) -> CausalGraph:
    """The CPDAG: a v-structure ``i -> k <- j`` when ``k`` is outside the released
    separating set of ``(i, j)`` (exact: outside every set of the level that
    separated them, as causal-learn decides)."""
    graph = cpdag(skeleton.adjacency, skeleton.separating_sets if colliders is None else colliders)
    return CausalGraph(request.names, graph, dict(skeleton.separating_sets), statistic, report,
                       {"removed": dict(skeleton.removed_statistic)})


# ------------------------------------------------------------------ correlation tests

