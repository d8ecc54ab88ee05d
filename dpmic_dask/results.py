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


@dataclass(frozen=True)
class PairwiseResult:
    """Private MIC of every pair of columns, released together once.

    All pairs share one noise plan: the same mechanism, noise scale and interval.
    ``epsilon`` and ``delta`` are the total cost of the whole release.
    """

    columns: tuple
    pairs: tuple
    values: tuple
    mechanism: str
    epsilon: float
    delta: float
    noise_scale: float
    ci95: float
    n: int
    B: int
    c: int
    sensitivity: float
    rho: float | None
    charge_id: str
    seeded: bool
    statement: str

    def to_pandas(self):
        """Tidy table: one row per pair.

        Columns: ``x, y, mic, ci95, noise_scale, mechanism``; ``release_epsilon``
        and ``release_delta``, the total cost of the whole release (every row repeats
        it); ``value_cost`` and ``cost_unit``, what each released value cost
        (``epsilon / P`` for pure releases, ``rho / P`` zCDP for Gaussian ones);
        ``n, B, c``.
        """
        import pandas as pd

        from .accounting import PrivacyCost, value_cost

        cost, unit = value_cost(PrivacyCost(self.epsilon, self.delta, self.rho), len(self.pairs))
        return pd.DataFrame({
            "x": [a for a, _ in self.pairs],
            "y": [b for _, b in self.pairs],
            "mic": list(self.values),
            "ci95": self.ci95,
            "noise_scale": self.noise_scale,
            "mechanism": self.mechanism,
            "release_epsilon": self.epsilon,
            "release_delta": self.delta,
            "value_cost": cost,
            "cost_unit": unit,
            "n": self.n,
            "B": self.B,
            "c": self.c,
        })

    def matrix(self):
        """Symmetric DataFrame of released values (NaN on the diagonal: not released)."""
        import numpy as np
        import pandas as pd

        m = pd.DataFrame(np.nan, index=list(self.columns), columns=list(self.columns))
        for (a, b), v in zip(self.pairs, self.values):
            m.loc[a, b] = v
            m.loc[b, a] = v
        return m

    def to_parquet(self, path) -> None:
        """Write the tidy table to a Parquet file."""
        self.to_pandas().to_parquet(path, index=False)

    def plot(self, ax=None, *, path=None):
        """Heatmap of the released matrix (needs matplotlib: ``pip install dpmic_dask[plot]``).

        The noise is shown, not hidden: the title gives the 95% interval of the noise
        alone, and cells whose value lies within it (indistinguishable from no
        relationship at this budget) are hatched and their text greyed. Returns the
        matplotlib Axes; with ``path``, also saves the figure there.
        """
        try:
            from matplotlib.figure import Figure
            from matplotlib.patches import Rectangle
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "plotting needs matplotlib: pip install 'dpmic_dask[plot]'"
            ) from exc
        m = self.matrix()
        if ax is None:
            size = max(4.0, 0.6 * len(self.columns) + 2)
            if path is None:  # interactive: a pyplot figure the notebook displays
                import matplotlib.pyplot as plt

                _, ax = plt.subplots(figsize=(size + 1, size))
            else:  # off-screen: no pyplot, no change to the session's backend
                ax = Figure(figsize=(size + 1, size)).subplots()
        image = ax.imshow(m.to_numpy(dtype=float), vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_xticks(range(len(m.columns)), list(m.columns), rotation=45, ha="right")
        ax.set_yticks(range(len(m.index)), list(m.index))
        noise = self.ci95 if self.ci95 == self.ci95 else None  # NaN for micr-geom
        for i in range(len(m.index)):
            for j in range(len(m.columns)):
                v = m.iat[i, j]
                if v != v:
                    continue
                within_noise = noise is not None and v <= noise
                if within_noise:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                           edgecolor="0.6", linewidth=0))
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color="0.6" if within_noise else ("white" if v < 0.6 else "black"),
                        style="italic" if within_noise else "normal")
        ax.figure.colorbar(image, ax=ax, label="private MIC")
        title = f"{self.mechanism}, eps={self.epsilon:g}, n={self.n}"
        if noise is not None:
            title += f"\nnoise alone: +/-{noise:.2g} (95%); hatched cells lie within it"
        else:
            title += "\nnoise on every grid count (no interval for the value)"
        ax.set_title(title, fontsize=9)
        ax.figure.tight_layout()
        if path is not None:
            ax.figure.savefig(path, dpi=120)
        return ax

    def _budget_line(self, pairs: int) -> str:
        if self.rho is None:
            return (f"Budget: epsilon = {self.epsilon:g} in total, "
                    f"{self.epsilon / pairs:.4g} per pair.")
        return (f"Budget: epsilon = {self.epsilon:g}, delta = {self.delta:g} in total, "
                f"accounted as rho = {self.rho:.4g} zCDP ({self.rho / pairs:.4g} per pair).")

    def report(self) -> str:
        """Plain text: what was released and what it guarantees."""
        pairs = len(self.pairs)
        lines = []
        if self.seeded:
            lines.append("NOT PRIVATE: these values used seeded test noise.")
        lines += [
            f"Released: private MIC for {pairs} pair{'s' if pairs != 1 else ''} of "
            f"{len(self.columns)} columns ({', '.join(map(str, self.columns))}), n = {self.n} rows.",
            f"Mechanism: {self.mechanism} (B = {self.B}, c = {self.c}).",
            self._budget_line(pairs),
        ]
        if self.ci95 == self.ci95:
            lines.append(
                f"Noise: scale {self.noise_scale:.4g} per value; 95% of the noise alone lies "
                f"within +/-{self.ci95:.4g}. This interval does not include the statistic's "
                "own estimation error."
            )
        else:
            lines.append(
                f"Noise: two-sided geometric noise of scale {self.noise_scale:.4g} on every "
                "master-grid count."
            )
        lines.append(self.statement)
        lines.append(f"Ledger charge: {self.charge_id}.")
        return "\n".join(lines)
