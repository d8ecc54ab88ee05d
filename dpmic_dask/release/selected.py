"""Releases that choose pairs privately first (``top_pairs``, ``pairs_above``): the request.

:func:`selection_request` checks the request and splits the budget
(:func:`~dpmic_dask.privacy.selection.plan_selection`);
:func:`~dpmic_dask.release.pipeline.release_selected` runs it (scores every pair
where the counts are, charges the total once, then draws the selection's noise
and the release's).
"""

from __future__ import annotations

from dpmic_dask.checks import check_max_cells
from dpmic_dask.config import resolve
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.privacy.mechanisms.registry import check_statistics
from dpmic_dask.privacy.selection import (
    EveryPairRanked,
    SelectionPlan,
    check_share,
    plan_selection,
    selection_rule,
)
from dpmic_dask.release.request import API_NAMES, ArgumentNames, pairwise_request


def selection_request(schema, rule: str, *, eps, delta=0.0, share=0.5, bounds, columns=None,
                      B=None, c=None, nulls="raise", fill=None,
                      split_every=None, label=None,
                      task_memory=None, screen_B="auto", statistics=("mic",),
                      names: ArgumentNames = API_NAMES, **options):
    """Check a select-then-release request against ``schema`` (nothing read, nothing
    charged): the checked columns and grid, the rule's ``options`` (``k`` for
    ``"top-k"``; ``threshold`` and ``max_pairs`` for ``"above"``: see
    :func:`~dpmic_dask.privacy.selection.selection_rule`), and the budget split
    (:func:`~dpmic_dask.privacy.selection.plan_selection`). Messages name the arguments as
    ``names`` spells them. ``split_every`` and ``task_memory`` not given are read
    from :mod:`dpmic_dask.config`, once."""
    chosen = selection_rule(rule)
    split_every = resolve("split_every", split_every)
    task_memory = resolve("task_memory", task_memory)
    request = pairwise_request(schema, eps=eps, bounds=bounds, columns=columns, delta=delta,
                               mechanism=f"micr-{measure_for(delta).noise}", B=B, c=c,
                               nulls=nulls, fill=fill, split_every=split_every, label=label,
                               task_memory=task_memory, names=names)
    unknown = sorted(k for k, v in options.items() if k not in chosen.options and v is not None)
    if unknown:
        raise InvalidParameterError(f"selection rule {rule!r} takes no {', '.join(unknown)}")
    checked = chosen.check(options, names)
    # checked whether or not a selection runs: a bad argument is refused either way
    share = check_share(share, names.share)
    if screen_B is not None and screen_B != "auto":
        screen_B = check_max_cells(screen_B, names.screen_B)
    asked = chosen.free(checked, request.n_pairs)
    if asked is not None:
        # every pair is published: choosing costs nothing, the values get it all
        request = pairwise_request(
            schema, eps=eps, bounds=bounds, columns=columns, delta=delta,
            mechanism=request.mechanism.label, B=B, c=c, nulls=nulls, fill=fill,
            split_every=split_every, label=label, task_memory=task_memory,
            statistics=statistics, names=names)
        return request, SelectionPlan(request.cost, EveryPairRanked(asked, request.n_pairs),
                                      request.mechanism, None, request.companions)
    if checked.get("max_pairs") is not None:
        # at most every pair can pass: a larger cap only spread the sparse vector's
        # query noise over answers that cannot happen (at 10 pairs, max_pairs=1000
        # drew noise 90 times wider than max_pairs=10)
        checked = {**checked, "max_pairs": min(checked["max_pairs"], request.n_pairs)}
    plan = plan_selection(rule, eps=request.eps, delta=request.delta,
                          share=share, statistic=request.statistic,
                          screen_B=screen_B, statistics=check_statistics(statistics), **checked)
    return request, plan


