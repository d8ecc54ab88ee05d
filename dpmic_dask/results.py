"""Result objects of private releases. They hold numbers only; nothing here can
draw noise again."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """One differentially private MIC value and how it was produced.

    Attributes
    ----------
    value : float
        The released MIC estimate, clamped to ``[0, 1]``.
    mechanism : str
        ``micr-lap``, ``micr-gauss``, ``mice-lap`` or ``micr-geom``.
    epsilon, delta : float
        Total privacy cost of the release (``delta = 0`` for pure DP).
    noise_scale : float
        Laplace scale ``b`` or Gaussian ``sigma`` on the MIC scale; for
        ``micr-geom`` the per-cell geometric scale on counts.
    ci95 : float
        Half-width of the central 95% interval of the noise alone (``b ln 20`` or
        ``1.96 sigma``); NaN for ``micr-geom``. It says how far noise alone moves the
        value, not how far MICr is from the population's MIC.
    B, c, n : grid parameters and the (public) number of rows.
    sensitivity : float
        Replace-one sensitivity the noise was calibrated to (per pair).
    rho : float or None
        zCDP cost for Gaussian releases.
    charge_id : str
        Identifier of the ledger charge paid before the noise was drawn.
    seeded : bool
        True only inside the test helper ``seeded_noise``: such a value is NOT private.
    statement : str
        The privacy guarantee in words.
    """

    value: float
    mechanism: str
    epsilon: float
    delta: float
    noise_scale: float
    ci95: float
    B: float
    c: int
    n: int
    sensitivity: float
    rho: float | None
    charge_id: str
    seeded: bool
    statement: str

    def report(self) -> str:
        """Plain-text account of what was released and what it guarantees."""
        lines = [
            f"MIC estimate: {self.value:.4f} ({self.mechanism}, n={self.n}, B={self.B:g}, c={self.c})",
        ]
        if self.ci95 == self.ci95:  # not NaN
            lines.append(
                f"Noise: scale {self.noise_scale:.4g}; 95% of the noise alone lies within "
                f"+/-{self.ci95:.4g} (before clamping to [0, 1])"
            )
        else:
            lines.append(
                f"Noise: two-sided geometric noise of scale {self.noise_scale:.4g} on every "
                "master-grid count"
            )
        lines.append(self.statement)
        if self.seeded:
            lines.insert(0, "NOT PRIVATE: this value used seeded test noise.")
        return "\n".join(lines)
