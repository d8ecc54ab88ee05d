"""What a release guarantees, in words: the privacy statement of a cost, and
what each released value cost (no state, no charging)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpmic_dask.privacy.costs import PrivacyCost


def mutual_information_bound_nats(eps: float) -> float:
    """An ``eps``-DP release leaks at most ``min(eps, eps**2)`` nats of conditional
    mutual information about any one row (Cuff & Yu 2016, Lemma 1)."""
    return min(eps, eps * eps)


def privacy_statement(cost: PrivacyCost, pairs: int, detail: str | None = None) -> str:
    """One paragraph, in words, of what a release with ``cost`` guarantees.

    ``detail`` replaces the per-pair split in parentheses (releases that select
    pairs first spend their budget in parts, not per pair)."""
    return cost.statement(pairs, detail)


def _plural(pairs: int) -> str:
    return "s" if pairs != 1 else ""


def pure_statement(epsilon: float, pairs: int, detail: str | None = None) -> str:
    """The statement of a pure ``epsilon``-DP release (:func:`privacy_statement`)."""
    bound = mutual_information_bound_nats(epsilon)
    split = detail or f"{epsilon / pairs:g} per pair over {pairs} pair{_plural(pairs)}"
    return (
        f"This release is {epsilon:g}-differentially private with respect to "
        f"replacing any one row ({split}). This implies that it reveals at most {bound:.4g} "
        f"nat{'s' if bound != 1 else ''} of mutual information about any one row beyond what "
        "the other rows already reveal."
    )


def zcdp_statement(cost: PrivacyCost, pairs: int, detail: str | None = None) -> str:
    """The statement of a zCDP release (:func:`privacy_statement`)."""
    rho = cost.as_rho()
    split = detail or f"{rho / pairs:.4g} per pair over {pairs} pair{_plural(pairs)}"
    approx = ""
    if cost.approx_delta:
        approx = (f" Part of it is approximate: with probability at most "
                  f"{cost.approx_delta:.3g} a category held by a single row is published; "
                  "that chance is part of delta (docs/privacy.md, 'Approximate parts').")
    return (
        f"This release is ({cost.epsilon:g}, {cost.delta:g})-differentially private "
        f"with respect to replacing any one row. It is accounted as {rho:.6g}-zCDP "
        f"in total ({split}); zCDP costs add up across releases, epsilons of Gaussian "
        f"releases do not.{approx}"
    )


def value_cost(cost: PrivacyCost, pairs: int) -> tuple[float, str]:
    """What each of ``pairs`` released values cost, and the unit it is counted in."""
    return cost.amount() / pairs, cost.value_unit()


__all__ = ["mutual_information_bound_nats", "privacy_statement", "pure_statement",
           "value_cost", "zcdp_statement"]
