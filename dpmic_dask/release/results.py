"""The result of a release of pairs (:class:`PairwiseResult`, with a
:class:`Companion` for each further statistic), its tables and its heatmap. It
holds numbers only; nothing here can draw noise again."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.statement import value_cost
from dpmic_dask.release.boundsresult import WIDE_DOMAIN, BoundsRelease
from dpmic_dask.release.htmlreport import pairwise_view, write_page
from dpmic_dask.release.report import PrivacyReport, ReportFields
from dpmic_dask.release.reportlines import (  # noqa: F401
    UNCHECKED,
    report_lines,
    said_bounds,
    spectral_order,
)
from dpmic_dask.stats.defaults import capped_at
from dpmic_dask.stats.statistics.registry import get_statistic, public_statistics


def output_name(statistic: str) -> str:
    """The column a released statistic is written under: the statistic's label
    (``tau`` -> ``tau_a``: the binned Kendall tau is a tau-a)."""
    return get_statistic(statistic).label


#: Above this many columns the heatmap drops per-cell text and orders the columns
#: so that related ones sit together.
TEXT_LIMIT = 25


def _capped_B(p) -> str:
    """Why ``B`` is what it is when it is the largest default for noise this wide
    (``stats.defaults.capped_at``); empty otherwise."""
    cap = capped_at(p.ci95, p.B) if p.statistic == "micr" and np.isfinite(p.ci95) else None
    if cap is None:
        return ""
    return f"; {cap} is the largest default B where each value's ci95 is {p.ci95:.2g}"


#: Column names a report's first line lists before counting the rest.
NAMED = 30


def named(columns) -> str:
    """``a, b, c`` -- or the first :data:`NAMED` and how many more (the tidy table
    and the page have every pair)."""
    shown = ", ".join(map(str, list(columns)[:NAMED]))
    rest = len(columns) - NAMED
    return shown if rest <= 0 else f"{shown} and {rest} more"


@dataclass(frozen=True)
class Companion:
    """A further statistic released beside MIC for the same pairs (same order), with
    its own share of the budget: ``values``, the mechanism, the noise per value and
    the half-width of the noise's central 95% interval."""

    statistic: str
    mechanism: str
    values: tuple
    noise_scale: float
    ci95: float
    sensitivity: float
    cost: PrivacyCost


@dataclass(frozen=True)
class PairwiseResult(ReportFields):
    """Private values of pairs of columns, released together once.

    All published pairs share one noise plan (``privacy``): the same mechanism,
    noise scale and interval; ``epsilon`` and ``delta`` are the total cost of the
    whole release. Report fields are readable on the result itself.
    """

    columns: tuple
    pairs: tuple
    values: tuple
    privacy: PrivacyReport
    companions: tuple = ()
    private_bounds: BoundsRelease | None = None
    #: Privately chosen categories (column -> the kept candidates, in candidate
    #: order): public from now on, to reuse as the columns' lists.
    private_categories: dict | None = None
    #: The private check of public bounds (``bounds_check=``), a
    #: :class:`~dpmic_dask.release.bounds_check.BoundsCheck`; ``None`` when off.
    bounds_check: object | None = None
    #: Why the public bounds were not checked, when ``bounds_check="auto"`` left
    #: the check off (the report says it instead of the generic line).
    bounds_note: str | None = None
    #: The public bounds (column -> (lo, hi) in the column's kind) and public
    #: category lists (column -> the listed values) the values were computed at;
    #: columns whose bounds or lists were released privately are in
    #: ``private_bounds`` / ``private_categories`` instead.
    public_bounds: dict | None = None

    def companion(self, statistic: str) -> Companion:
        """The released companion statistic called ``statistic`` (e.g. ``"tau_a"``)."""
        statistic = public_statistics().get(statistic, statistic)
        for item in self.companions:
            if item.statistic == statistic:
                return item
        raise KeyError(f"this release has no {statistic!r}; pass statistics=('mic', "
                       f"'{statistic}')")

    @property
    def tau_a(self) -> tuple:
        """Private binned Kendall's tau-a of each pair (with ``statistics=("mic", "tau_a")``)."""
        return self.companion("tau").values

    @property
    def tau(self) -> tuple:
        """The older spelling of :attr:`tau_a` (a ``FutureWarning``; the same values)."""
        warnings.warn("PairwiseResult.tau is the older spelling of tau_a; use result.tau_a",
                      FutureWarning, stacklevel=2)
        return self.tau_a

    def to_pandas(self):
        """Tidy table: one row per pair.

        Columns: ``x, y, mic, ci95, noise_scale, mechanism, statistic``; ``release_epsilon``
        and ``release_delta``, the total cost of the whole release (every row repeats
        it); ``value_cost`` and ``cost_unit``, what each released value cost
        (``epsilon / P`` for pure releases, ``rho / P`` zCDP for Gaussian ones; after
        a private selection, the release part only, over the pairs released; with
        companion statistics, MIC's share); ``n, B, c``; ``within_noise``, whether the
        value lies inside its own ``ci95`` of 0 (``|mic| <= ci95``). With Kendall's tau
        (asked for as ``"tau"``): ``tau_a``, ``tau_a_ci95``, ``tau_a_noise_scale``,
        ``tau_a_within_noise`` and ``nonlinearity = mic - tau_a**2``, computed from the
        released values only (large when the pair is related but not monotonically).
        The binned tau is a tau-a: ties count in its denominator, so on columns with
        many ties (binary ones) it is smaller in size than ``scipy.stats.kendalltau``'s
        tau-b (docs/statistics.md).
        """
        p = self.privacy
        spent = p.release_cost or PrivacyCost(self.epsilon, self.delta, self.rho)
        cost, unit = value_cost(spent, max(1, len(self.pairs)))
        table = pd.DataFrame({
            "x": [a for a, _ in self.pairs],
            "y": [b for _, b in self.pairs],
            "mic": list(self.values),
            "ci95": p.ci95,
            "noise_scale": p.noise_scale,
            "mechanism": p.mechanism,
            "statistic": p.statistic,
            "release_epsilon": p.epsilon,
            "release_delta": p.delta,
            "value_cost": cost,
            "cost_unit": unit,
            "n": p.n,
            "B": p.B,
            "c": p.c,
        })
        if p.privacy_unit is not None:  # per unit: which unit, how many rows each
            table["privacy_unit"] = p.privacy_unit
            table["max_rows_per_unit"] = p.max_rows_per_unit
        # post-processing of released values: inside their own ci95 of 0
        table["within_noise"] = np.abs(table["mic"].to_numpy(dtype=float)) <= p.ci95
        for item in self.companions:
            name = output_name(item.statistic)
            table[name] = list(item.values)
            table[f"{name}_ci95"] = item.ci95
            table[f"{name}_noise_scale"] = item.noise_scale
            table[f"{name}_within_noise"] = (
                np.abs(np.asarray(item.values, dtype=float)) <= item.ci95)
        if any(item.statistic == "tau" for item in self.companions):
            # post-processing of released values: MIC beyond what a monotone trend explains
            table["nonlinearity"] = table["mic"] - table["tau_a"] ** 2
        return table

    def matrix(self, statistic: str = "mic"):
        """Symmetric DataFrame of released values (NaN on the diagonal: not released);
        ``statistic="tau_a"`` for the released Kendall's tau-a."""
        values = self.values if statistic == "mic" else self.companion(statistic).values

        where = {name: k for k, name in enumerate(self.columns)}
        grid = np.full((len(self.columns), len(self.columns)), np.nan)
        if self.pairs:
            i = np.array([where[a] for a, _ in self.pairs])
            j = np.array([where[b] for _, b in self.pairs])
            grid[i, j] = values
            grid[j, i] = values
        return pd.DataFrame(grid, index=list(self.columns), columns=list(self.columns))

    def to_parquet(self, path) -> None:
        """Write the tidy table to a Parquet file, its file metadata holding the
        ledger's charge id (``dpmic.charge_id``) and the report (``dpmic.report``:
        the budget, the bounds each value was computed at, the guarantee)."""
        table = pa.Table.from_pandas(self.to_pandas(), preserve_index=False)
        extra = {b"dpmic.charge_id": str(self.privacy.charge_id).encode(),
                 b"dpmic.report": self.report().encode()}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
        if isinstance(path, str) and "://" in path:  # fsspec URLs, as pandas takes them
            with fsspec.open(path, "wb") as handle:
                pq.write_table(table, handle)
        else:
            pq.write_table(table, path)

    def plot(self, ax=None, *, path=None, statistic: str = "mic"):
        """Heatmap of the released matrix (needs matplotlib: ``pip install dpmic_dask[plot]``).

        The noise is shown, not hidden: the title gives the 95% interval of the noise
        alone, and cells whose value lies within it (indistinguishable from no
        relationship at this budget) are hatched and their text greyed. Returns the
        matplotlib Axes; with ``path``, also saves the figure there.
        ``statistic="tau_a"`` draws the signed Kendall's tau-a (blue negative, red
        positive, on ``[-1, 1]``; within the noise means ``|tau|`` below it).
        """
        try:
            from matplotlib.figure import Figure
            from matplotlib.patches import Rectangle
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "plotting needs matplotlib: pip install 'dpmic_dask[plot]'"
            ) from exc
        signed = statistic != "mic"
        m = self.matrix(statistic)
        many = len(self.columns) > TEXT_LIMIT
        if many:  # group related columns: post-processing of released values only
            order = spectral_order(np.abs(m.to_numpy(dtype=float)))
            m = m.iloc[order, order]
        if ax is None:
            size = min(max(4.0, 0.6 * len(self.columns) + 2), 16.0)
            if path is None:  # interactive: a pyplot figure the notebook displays
                import matplotlib.pyplot as plt

                _, ax = plt.subplots(figsize=(size + 1, size))
            else:  # off-screen: no pyplot, no change to the session's backend
                ax = Figure(figsize=(size + 1, size)).subplots()
        values = m.to_numpy(dtype=float)
        image = ax.imshow(values, vmin=-1.0 if signed else 0.0, vmax=1.0,
                          cmap="RdBu_r" if signed else "viridis")
        tick_size = 8 if not many else max(2.0, 8 - len(self.columns) / 25)
        ax.set_xticks(range(len(m.columns)), list(m.columns), rotation=90 if many else 45,
                      ha="center" if many else "right", fontsize=tick_size)
        ax.set_yticks(range(len(m.index)), list(m.index), fontsize=tick_size)
        ci95 = self.companion(statistic).ci95 if signed else self.ci95
        noise = ci95 if ci95 == ci95 else None  # NaN for micr-geom
        if many:
            if noise is not None:  # one pale veil over every cell within the noise
                from matplotlib.colors import ListedColormap

                veil = np.where(np.abs(values) <= noise, 1.0, np.nan)
                ax.imshow(veil, vmin=0, vmax=1, cmap=ListedColormap(["white"]), alpha=0.65)
        else:
            for i in range(len(m.index)):
                for j in range(len(m.columns)):
                    v = m.iat[i, j]
                    if v != v:
                        continue
                    within_noise = noise is not None and abs(v) <= noise
                    if within_noise:
                        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                               hatch="///", edgecolor="0.6", linewidth=0))
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                            color="0.6" if within_noise else (
                                "black" if signed or v >= 0.6 else "white"),
                            style="italic" if within_noise else "normal")
        ax.figure.colorbar(image, ax=ax, label="private Kendall's tau" if signed
                           else "private MIC")
        mechanism = self.companion(statistic).mechanism if signed else self.mechanism
        title = f"{mechanism}, eps={self.epsilon:g} in total, n={self.n}" if signed else \
            f"{self.mechanism}, eps={self.epsilon:g}, n={self.n}"
        if noise is not None:
            marked = "paled" if many else "hatched"
            title += f"\nnoise alone: +/-{noise:.2g} (95%); {marked} cells lie within it"
        else:
            title += "\nnoise on every grid count (no interval for the value)"
        ax.set_title(title, fontsize=9)
        ax.figure.tight_layout()
        if path is not None:
            ax.figure.savefig(path, dpi=120)
        return ax

    def report(self) -> str:
        """Plain text: what was released and what it guarantees."""
        p = self.privacy
        pairs = len(self.pairs)
        lines = []
        if p.seeded:
            lines.append("NOT PRIVATE: these values used seeded test noise.")
        lines += [
            f"Released: private MIC for {pairs} pair{'s' if pairs != 1 else ''} of "
            f"{len(self.columns)} columns ({named(self.columns)}), n = {p.n} rows.",
            f"Mechanism: {p.mechanism} (B = {p.B}, c = {p.c}{_capped_B(p)}).",
        ]
        if p.selection != "all pairs":
            lines.append(f"Selection: {p.selection} ({pairs} of {p.candidates} pairs).")
        if self.public_bounds:
            lines.append("Public bounds and lists used: " + "; ".join(
                f"{c} {said_bounds(b)}" for c, b in self.public_bounds.items()) + ".")
        if self.private_bounds is not None:
            used = ", ".join(f"{c} {self.private_bounds.formatted(c)}"
                             f"{self.private_bounds.settings(c)}"
                             for c in self.private_bounds.bounds)
            lines.append(f"Private bounds used: {used}.")
            found = self.private_bounds
            wide = found.wide_columns()
            if wide:
                lines.append(f"The public domain of {wide} is far wider than the data (the "
                             f"released bounds use less than {WIDE_DOMAIN:.0%} of it).")
            if found.unseen:
                lines.append(found.tail_note())
            if found.infinite:
                lines.append(found.infinite_note())
            if found.piled:
                lines.append(found.piled_note())
            if found.one_bin:
                lines.append(found.one_bin_note())
            if found.clamped_fills:
                lines.append(found.fill_note())
            if found.unresolved:
                lines.append(f"Unresolved bounds (fallback used): {list(found.unresolved)}.")
        if self.private_categories:
            chosen = "; ".join(f"{c}: {', '.join(map(str, kept)) or '(none)'}"
                               for c, kept in self.private_categories.items())
            lines.append(f"Categories chosen privately (public from now on; other values in "
                         f"'other'): {chosen}.")
            none = [c for c, kept in self.private_categories.items() if not kept]
            if none:
                lines.append(f"Categories chosen privately, none kept for {none}: no "
                             "category passed its threshold, every value fell in 'other' "
                             "(or the nulls' own category), so a pair with such a column "
                             "without nulls was released as for a constant column (noise "
                             "around 0).")

        lines += report_lines(self)
        for item in self.companions:
            name = output_name(item.statistic)
            what = " (binned Kendall tau-a)" if name == "tau_a" else ""
            lines.append(f"Also released: {name}{what} ({item.mechanism}); noise scale "
                         f"{item.noise_scale:.4g} per value, 95% of the noise alone within "
                         f"+/-{item.ci95:.4g}.")
            undefined = sum(v != v for v in item.values)  # NaN: a categorical axis
            if undefined:
                lines.append(f"  {name} is undefined (NaN) for the {undefined} pair(s) with a "
                             "categorical column: unordered categories have no rank order.")
        lines += p.lines()
        return "\n".join(lines)

    def to_html(self, path):
        """Write one self-contained HTML page of this release to ``path``: the
        heatmap (pairs within their noise hatched; hover or click a cell for its
        values), the privacy statement, the plan's steps and their parts of the
        budget, and a sortable, filterable table of the pairs. Styles, script and
        pictures are inside the file; it loads nothing. Returns the path."""
        return write_page(pairwise_view(self), path)
