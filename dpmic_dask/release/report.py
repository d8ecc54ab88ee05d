"""What a release says of itself: its :class:`PrivacyReport` (the mechanism, the
cost, the noise, the charge, the guarantee in words), the result of one pair
(:class:`Release`), and the notices of large noise, before the charge from
public quantities and after it from the released values. Numbers only; nothing
here can draw noise again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpmic_dask.errors import (  # noqa: F401  (NOISY_CI95 re-exported)
    NOISY_CI95,
    NoiseWarning,
    shown,
    user_stacklevel,
)
from dpmic_dask.privacy.costs import PrivacyCost

#: Said wherever a release is per unit: rows whose unit id is missing are left out
#: (they belong to no unit; how many is not released).
NO_UNIT_ROWS = ("rows with no unit id (a null) belong to no unit and are left out (how "
                "many is not released)")


def _notice(message: str, category) -> None:
    """Warn as the filters say (an ignored notice stays ignored), except that a
    warnings-as-errors filter only shows it: it must never refuse a release."""
    shown(message, category, stacklevel=user_stacklevel())


#: A selection whose noise on each score (MIC in [0, 1]) has a larger scale than
#: this chooses mostly by noise: said before the charge and in the report.
NOISY_SELECTION = 0.1


def selection_noise_said(scale: float) -> str:
    """The selection's noise in words for the report ("" when small)."""
    if not scale > NOISY_SELECTION:
        return ""
    return (f"; its noise has scale {scale:.3g} on each score (MIC lies in [0, 1]): at this "
            "budget the pairs are chosen mostly by noise")


def warn_selection_noise_before(scale: float) -> None:
    """Before the charge: a selection whose noise swamps the scores (public)."""
    if scale > NOISY_SELECTION:
        _notice(f"this selection's noise is large: scale {scale:.3g} on each pair's score "
                f"(above {NOISY_SELECTION}; MIC lies in [0, 1]), so the pairs it picks are "
                "chosen mostly by noise. More rows, a larger eps or select_share narrow it",
                NoiseWarning)


def warn_noise_before(ci95: float) -> None:
    """Before the charge: the noise of a planned release (public: ``N``, the grid,
    the budget), when its ``ci95`` exceeds :data:`NOISY_CI95`."""
    if ci95 == ci95 and ci95 > NOISY_CI95:

        # never raised: the same plan check also runs inside a prepaid part, after
        # the charge, where nothing may refuse
        _notice(f"this release's noise is large: 95% of it lies within +/-{ci95:.3g} "
                f"per value (above {NOISY_CI95}); values inside it are flagged "
                "within_noise. More rows, a larger eps or fewer pairs narrow it",
                NoiseWarning)


def count_noise_swamps(scale: float, n: float, B: float) -> bool:
    """Count noise (``micr-geom``) whose 95% half-width (``scale ln 20``) exceeds a
    quarter of an average cell of the finest master grid (``n / B`` rows): the
    noisy counts' MIC then mostly measures the noise (public quantities only)."""
    return bool(scale == scale and n > 0 and B > 0 and
                scale * math.log(20.0) > NOISY_CI95 * n / B)


def warn_count_noise_before(scale: float, n: float, B: float) -> None:
    """Before the charge: count noise that swamps the grid's cells (never raised)."""
    if count_noise_swamps(scale, n, B):
        _notice("this release's count noise is large: " + count_noise_words(scale, n, B),
                NoiseWarning)


def count_noise_words(scale: float, n: float, B: float) -> str:
    """What :func:`count_noise_swamps` means, for the report and the warning."""
    return (f"95% of it lies within +/-{scale * math.log(20.0):.4g} per count, above "
            f"{NOISY_CI95} of the about {n / B:.4g} rows of an average cell of the finest "
            "grid: the released values mostly measure the noise, and independent columns "
            "can read high; micr-lap (noise on the value), more rows or a larger eps "
            "narrow it")


def warn_noise_swamps_tests(ci95: float, span: float, what: str, *, pure: bool = False,
                            noisy: str = "one test's statistic",
                            scale: str = "the statistic's range") -> None:
    """Before the charge (per unit, after it, from a released row count):
    statistical tests whose noise's 95% half-width ``ci95`` (the noise of
    ``noisy``) exceeds :data:`NOISY_CI95` of ``span`` (what ``scale`` names: by
    default their statistic's range, the rule of a pairwise release, whose values
    range over ``[0, 1]``). ``pure``: the release is pure DP, and the notice says
    when ``delta > 0`` can narrow the noise too (with many statistics; with few,
    zCDP's noise can be the wider). Never raised."""
    if ci95 == ci95 and ci95 > NOISY_CI95 * span:
        remedy = ("More rows, a larger eps, fewer columns or a smaller max_condition_size "
                  "narrow it")
        if pure:
            remedy += ("; with many columns so can delta > 0: under pure DP (delta = 0) the "
                       "noise grows with the number of statistics released, under zCDP with "
                       "its square root")
        _notice(f"{what}: 95% of the noise of {noisy} lies within +/-{ci95:.3g}, above "
                f"{NOISY_CI95:g} of {scale} ({span:.3g}); the tests' decisions are mostly "
                f"noise. {remedy}", NoiseWarning)


def warn_noise_after(values, ci95: float) -> None:
    """After the release: how many released values lie inside their own ``ci95`` of 0
    (post-processing of released values), when ``ci95`` exceeds :data:`NOISY_CI95`."""
    if ci95 == ci95 and ci95 > NOISY_CI95:

        inside = int(np.sum(np.abs(np.asarray(values, dtype=float)) <= ci95))
        # after the charge nothing may refuse: never raised
        _notice(f"{inside} of {len(values)} released values are within their noise "
                f"(|value| <= ci95 = {ci95:.3g}): read them as indistinguishable from 0",
                NoiseWarning)


@dataclass(frozen=True)
class PrivacyReport:
    """How a release was produced and what it guarantees (shared by every result).

    Attributes
    ----------
    mechanism : str
        Public name of the release (``micr-lap``, ``micr-gauss``, ``mice-lap``,
        ``micr-geom``); ``statistic`` the statistic released (``micr``, ``mice``).
    epsilon, delta : float
        Total privacy cost of the whole release (``delta = 0`` for pure DP);
        ``rho`` the zCDP cost of Gaussian releases, else ``None``.
    noise_scale : float
        Laplace scale ``b`` or Gaussian ``sigma`` per value; for ``micr-geom`` the
        per-cell geometric scale on counts.
    ci95 : float
        Half-width of the central 95% interval of the noise alone (``b ln 20`` or
        ``1.96 sigma``); NaN for ``micr-geom``. It says how far noise alone moves a
        value, not how far the statistic is from the population's.
    sensitivity : float
        Replace-one sensitivity of one value, to which the noise was calibrated.
    n, B, c : the (public) number of rows and the grid parameters.
    charge_id : str
        The ledger charge paid before the noise was drawn.
    seeded : bool
        True only inside the test helper ``seeded_noise``: such values are NOT private.
    statement : str
        The privacy guarantee in words.
    released, candidates : int
        How many values were published, out of how many pairs considered.
    selection : str
        How the published pairs were chosen ("all pairs", "top 10 by MICr, ...").
    parts : str
        For releases that select pairs first: how the total was split between
        the selection and the release of the chosen values ("" otherwise).
    release_cost : PrivacyCost or None
        The release part's cost when pairs were selected first (what the values
        themselves cost); ``None`` when the whole budget went to the values.
    """

    mechanism: str
    statistic: str
    epsilon: float
    delta: float
    rho: float | None
    noise_scale: float
    ci95: float
    sensitivity: float
    n: int
    B: float
    c: int
    charge_id: str
    seeded: bool
    statement: str
    released: int = 1
    candidates: int = 1
    selection: str = "all pairs"
    parts: str = ""
    release_cost: PrivacyCost | None = None
    #: The privacy unit (``None``: one row, the default), at most how many rows of
    #: each unit were used, and (per unit) the released row count and its lower
    #: confidence bound ``n0`` that the noise was calibrated to.
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None
    rows_lower_bound: int | None = None
    rows_noisy: int | None = None

    def unit_line(self) -> str:
        """The privacy unit in words (the row-level default stated as such)."""
        if self.privacy_unit is None:
            return ("Privacy unit: one row (the default; a person with several rows is "
                    "protected only per row).")
        return (f"Privacy unit: per {self.privacy_unit}, at most {self.max_rows_per_unit} "
                f"rows each (noisy row count {self.rows_noisy}, noise calibrated to its "
                f"lower bound n0 = {self.rows_lower_bound}); {NO_UNIT_ROWS}.")

    def budget_line(self) -> str:
        cost = PrivacyCost(self.epsilon, self.delta, self.rho)
        if self.parts:
            return f"Budget: {cost.total_words()} in total; {self.parts}."
        per = "pair" if self.released != 1 else "value"
        return f"Budget: {cost.per_value_words(self.released, per)}."

    def noise_line(self) -> str:
        if self.ci95 == self.ci95:  # not NaN
            large = (f" That is above {NOISY_CI95}: values inside it are flagged "
                     "within_noise (indistinguishable from 0)." if self.ci95 > NOISY_CI95 else "")
            return (f"Noise: scale {self.noise_scale:.4g} per value; 95% of the noise alone "
                    f"lies within +/-{self.ci95:.4g}. This interval does not include the "
                    f"statistic's own estimation error.{large}")
        line = (f"Noise: two-sided geometric noise of scale {self.noise_scale:.4g} on every "
                "master-grid count; no ci95 can be stated for count noise.")
        if count_noise_swamps(self.noise_scale, self.n, self.B):
            line += " " + count_noise_words(self.noise_scale, self.n, self.B)
        return line

    def lines(self) -> list[str]:
        """Budget, noise, guarantee and charge, one line each."""
        return [self.budget_line(), self.noise_line(), self.statement, self.unit_line(),
                f"Ledger charge: {self.charge_id}."]


class ReportFields:
    """Read the privacy report's fields from the result (``result.epsilon``, ...)."""

    privacy: PrivacyReport

    def __getattr__(self, name):
        if name != "privacy" and name in PrivacyReport.__dataclass_fields__:
            return getattr(self.privacy, name)
        raise AttributeError(name)


@dataclass(frozen=True)
class Release(ReportFields):
    """One differentially private value and how it was produced.

    ``value`` is the released estimate, clamped to ``[0, 1]``; everything else
    (``mechanism``, ``epsilon``, ``ci95``, ...) is in ``privacy`` and readable on
    the release itself.
    """

    value: float
    privacy: PrivacyReport

    def report(self) -> str:
        """Plain-text account of what was released and what it guarantees."""
        p = self.privacy
        lines = [f"MIC estimate: {self.value:.4f} ({p.mechanism}, n={p.n}, B={p.B:g}, c={p.c})"]
        lines += p.lines()
        if p.seeded:
            lines.insert(0, "NOT PRIVATE: this value used seeded test noise.")
        return "\n".join(lines)
