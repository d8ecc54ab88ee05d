"""The local model's result: MIC per pair estimated from eps-LDP reports.

Shaped like the central :class:`dpmic_dask.release.results.PairwiseResult`
(``to_pandas()``, ``matrix()``, ``plot()``, ``report()``), but every value has its
own ``ci95`` (the estimate's uncertainty from the reports' noise and sampling,
not the noise of a central mechanism), and no ledger charge exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpmic_dask.ldp.estimate import project_simplex
from dpmic_dask.release.htmlreport import local_view, write_page
from dpmic_dask.release.results import TEXT_LIMIT, spectral_order


@dataclass(frozen=True)
class LocalReport:
    """How the local-model estimates were made and what protects each person."""

    epsilon: float
    protocol: str
    k: int
    bins: int
    g: int
    n: int
    B: int
    c: int
    replicates: int
    seeded: bool
    pairs_per_person: int
    design_pairs: int
    model: str = "local"

    def statement(self) -> str:
        return (f"Guarantee: every person's report is {self.epsilon:g}-LDP for their whole "
                f"row (any two rows give any report with probabilities within a factor "
                f"e^{self.epsilon:g}); each person reported {self.pairs_per_person} of the "
                f"{self.design_pairs} pairs, chosen uniformly at random. The server's "
                "estimates are post-processing: nothing is charged to a central ledger.")

    def protocol_line(self) -> str:
        extra = f", g = {self.g} hash buckets" if self.protocol == "olh" else ""
        corrected = (f"bias-corrected by a parametric bootstrap ({self.replicates} "
                     "replicates, two levels)" if self.replicates else
                     "not bias-corrected, and no ci95 (replicates=0): mic is the raw "
                     "estimate")
        return (f"Protocol: {self.protocol.upper()} on the {self.bins} x {self.bins} grid of "
                f"each pair (k = {self.k} joint cells{extra}); MICr with B = {self.B}, "
                f"c = {self.c} on that grid; {corrected}.")


#: :meth:`LocalPairwiseResult.one_bin`: a column's estimated share in one bin at
#: least this, and that share less two standard deviations at least ``ONE_BIN_SURE``.
ONE_BIN = 0.9
ONE_BIN_SURE = 0.8
#: ... read only off a pair with at least this many reports (public).
ONE_BIN_REPORTS = 100


@dataclass(frozen=True)
class LocalPairwiseResult:
    """MIC of pairs of columns estimated in the local model (see :func:`pairwise`)."""

    columns: tuple
    pairs: tuple
    estimates: tuple
    privacy: LocalReport

    @property
    def values(self) -> tuple:
        return tuple(e.mic for e in self.estimates)

    @property
    def epsilon(self) -> float:
        return self.privacy.epsilon

    @property
    def n(self) -> int:
        return self.privacy.n

    def to_pandas(self):
        """One row per pair: ``x, y, mic, ci95`` (half-width of the estimate's 95%
        interval), ``raw_mic`` (plug-in, before bias correction), ``bias``, ``reports``
        (how many people reported this pair), ``model`` (``"local"``), ``epsilon``
        (per person), ``protocol``, ``n, B, c, bins``."""
        p = self.privacy
        est = self.estimates
        return pd.DataFrame({
            "x": [a for a, _ in self.pairs],
            "y": [b for _, b in self.pairs],
            "mic": [e.mic for e in est],
            "ci95": [e.ci95 for e in est],
            "raw_mic": [e.raw_mic for e in est],
            "bias": [e.bias for e in est],
            "reports": [e.reports for e in est],
            "model": p.model,
            "epsilon": p.epsilon,
            "protocol": p.protocol,
            "n": p.n,
            "B": p.B,
            "c": p.c,
            "bins": p.bins,
        })

    def matrix(self):
        """Symmetric DataFrame of the estimates (NaN on the diagonal)."""
        where = {name: k for k, name in enumerate(self.columns)}
        grid = np.full((len(self.columns), len(self.columns)), np.nan)
        for (a, b), e in zip(self.pairs, self.estimates):
            grid[where[a], where[b]] = grid[where[b], where[a]] = e.mic
        return pd.DataFrame(grid, index=list(self.columns), columns=list(self.columns))

    def frequencies(self, x, y):
        """The unbiased joint frequency estimates of pair ``(x, y)`` (bins x bins,
        rows: x bins), before projection; they may be negative."""
        for (a, b), e in zip(self.pairs, self.estimates):
            if (a, b) == (x, y):
                return e.frequencies.reshape(self.privacy.bins, self.privacy.bins)
            if (a, b) == (y, x):
                return e.frequencies.reshape(self.privacy.bins, self.privacy.bins).T
        raise KeyError(f"no pair ({x!r}, {y!r}) in this design")

    def report(self) -> str:
        """Plain text: what was estimated, from what, and what protects each person."""
        p = self.privacy
        lines = ["NOT PRIVATE: these reports used seeded test randomness."] if p.seeded else []
        pairs = len(self.pairs)
        lines += [
            f"Local model: MIC for {pairs} pair{'s' if pairs != 1 else ''} of "
            f"{len(self.columns)} columns ({', '.join(map(str, self.columns))}) from "
            f"n = {p.n} reports.",
            f"Budget: epsilon = {p.epsilon:g} per person (local DP), spent on the device.",
            p.protocol_line(),
            *(["ci95: half-width of each estimate's 95% interval from a two-level "
               "parametric bootstrap of the reports' noise and of which people reported "
               "the pair (spread of the bias-corrected estimator, plus its bias and the "
               "bias's change)."] if p.replicates else []),
            p.statement(),
        ]
        if self.unreported():
            lines.append(self.unreported_note())
        lines += self.one_bin_notes()
        return "\n".join(lines)

    def one_bin(self) -> dict:
        """Columns whose estimated frequencies put most people in one of the
        ``bins`` bins (post-processing of the published estimates): ``column ->
        (bin, share)``, read off the pair with the most reports, said only where the
        share less two of its standard deviations is at least :data:`ONE_BIN_SURE`
        and the share at least :data:`ONE_BIN`."""
        m = self.privacy.bins
        found: dict = {}
        order = sorted(range(len(self.pairs)), key=lambda j: -self.estimates[j].reports)
        for j in order:
            e = self.estimates[j]
            if e.reports < ONE_BIN_REPORTS or getattr(e, "frequencies", None) is None \
                    or not np.all(np.isfinite(e.frequencies)):
                continue
            # the estimate projected onto the frequencies (unbiased ones may leave [0, 1])
            f = project_simplex(np.asarray(e.frequencies, dtype=float)).reshape(m, m)
            cov = np.asarray(e.covariance, dtype=float).reshape(m, m, m, m)
            for axis, column in enumerate(self.pairs[j]):
                if column in found:
                    continue
                marginal = f.sum(axis=1 - axis)
                top = int(np.argmax(marginal))
                block = cov[top, :, top, :] if axis == 0 else cov[:, top, :, top]
                sd = math.sqrt(max(float(block.sum()), 0.0))
                share = float(marginal[top])
                found[column] = (top, share) if share >= ONE_BIN and \
                    share - 2.0 * sd >= ONE_BIN_SURE else None
        return {c: v for c, v in found.items() if v is not None}

    def one_bin_notes(self) -> list:
        """The report's lines about :meth:`one_bin` columns."""
        m = self.privacy.bins
        out = []
        for column, (top, share) in self.one_bin().items():
            where = (" (its lowest, at its lower bound: values below it are clamped there)"
                     if top == 0 else " (its highest, at its upper bound: values above it "
                     "are clamped there)" if top == m - 1 else "")
            out.append(f"Column {column}: the estimates put about {min(share, 1.0):.0%} of "
                       f"the people in one of its {m} bins, bin {top + 1}{where}: a column "
                       "about constant there, which caps what its pairs' MIC can show.")
        return out

    def unreported(self) -> list:
        """The pairs no report was about (their ``mic`` and ``ci95`` are NaN)."""
        return [pair for pair, e in zip(self.pairs, self.estimates) if e.reports <= 0]

    def unreported_note(self) -> str:
        """The report's sentence about :meth:`unreported` pairs (``""`` if none)."""
        missing = self.unreported()
        if not missing:
            return ""
        return (f"No estimate: {len(missing)} of {len(self.pairs)} pairs got no report "
                f"(each person reports one pair of the design, so {self.privacy.n} reports "
                "cannot cover them all); their mic and ci95 are NaN. Collect more reports, "
                "or design fewer pairs.")

    def to_html(self, path):
        """Write one self-contained HTML page of these estimates to ``path``: the
        heatmap (estimates within their own ci95 of 0 hatched), what protects each
        person, and a sortable, filterable table; returns the path."""
        return write_page(local_view(self), path)

    def plot(self, ax=None, *, path=None):
        """Heatmap of the estimates; cells whose estimate lies within its own ci95 of 0
        are hatched (indistinguishable from no relationship). Needs matplotlib."""
        try:
            from matplotlib.figure import Figure
            from matplotlib.patches import Rectangle
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("plotting needs matplotlib: pip install 'dpmic_dask[plot]'") \
                from exc
        m = self.matrix()
        ci = np.full(m.shape, np.nan)
        where = {name: k for k, name in enumerate(self.columns)}
        for (a, b), e in zip(self.pairs, self.estimates):
            ci[where[a], where[b]] = ci[where[b], where[a]] = e.ci95
        many = len(self.columns) > TEXT_LIMIT
        if many:
            order = spectral_order(m.to_numpy(dtype=float))
            m = m.iloc[order, order]
            ci = ci[np.ix_(order, order)]
        if ax is None:
            size = min(max(4.0, 0.6 * len(self.columns) + 2), 16.0)
            if path is None:
                import matplotlib.pyplot as plt

                _, ax = plt.subplots(figsize=(size + 1, size))
            else:
                ax = Figure(figsize=(size + 1, size)).subplots()
        values = m.to_numpy(dtype=float)
        image = ax.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_xticks(range(len(m.columns)), list(m.columns), rotation=45, ha="right",
                      fontsize=8)
        ax.set_yticks(range(len(m.index)), list(m.index), fontsize=8)
        if not many:
            for i in range(values.shape[0]):
                for j in range(values.shape[1]):
                    v = values[i, j]
                    if v != v:
                        continue
                    within = ci[i, j] == ci[i, j] and v <= ci[i, j]
                    if within:
                        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                               hatch="///", edgecolor="0.6", linewidth=0))
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                            color="0.6" if within else ("black" if v >= 0.6 else "white"))
        ax.figure.colorbar(image, ax=ax, label="MIC (local model)")
        p = self.privacy
        ax.set_title(f"local model, {p.protocol.upper()}, eps={p.epsilon:g} per person, "
                     f"n={p.n}\nhatched: within its own 95% interval of 0", fontsize=9)
        ax.figure.tight_layout()
        if path is not None:
            ax.figure.savefig(path, dpi=120)
        return ax
