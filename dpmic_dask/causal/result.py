"""The result of a causal-discovery release: a CPDAG with its report.

Plain numbers only: nothing here can read the data again or redraw noise.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpmic_dask.errors import BoundsWarning, NoiseWarning, counted
from dpmic_dask.release.htmlreport import causal_view, write_page
from dpmic_dask.release.report import NO_UNIT_ROWS


def flat_note(columns, test: str, separated: bool = False) -> str:
    """What a release says of columns whose released statistics put (nearly) every
    row in one category or on one side of the cut, and what the search did
    (``separated``: released tables whose noise hides no row, read as the exact
    tables are)."""
    if test in ("copula", "fisherz"):
        return (f"columns {list(columns)}: (nearly) every row is in one released bin or "
                "on one side of the released cut, so their correlations are read as about "
                "0 and their edges go: values piled at a bound (public bounds that miss "
                "the data?), bounds far wider than the data, a column that is (almost) "
                "constant, or, with few rows for the budget, a released cut that its "
                "noise put far from the median")
    if separated:
        return (f"columns {list(columns)}: one category or bin in their level-0 tables "
                "(the noise is too small to hide a row), so, as without noise, they are "
                "independent of every column and their edges go: a column that is "
                "constant, or whose listed categories do not occur")
    return (f"columns {list(columns)}: at most one category or bin above the noise in "
            "their level-0 tables, so no level-0 test can separate them and their edges "
            "stay (a later level rarely removes one): a column that is (almost) constant, "
            "or whose listed categories do not occur")


def said_flat(names, flags, test: str, separated: bool = False) -> tuple:
    """The ``names`` whose flag is set (columns whose released statistics show
    one category, bin or side of the cut), said in a warning when there are any
    (after the charge: shown, never raised): a ``BoundsWarning`` on the copula
    test, a ``NoiseWarning`` on released tables; :func:`flat_note`'s words."""
    flat = tuple(name for name, flag in zip(names, flags) if flag)
    if flat:
        category = BoundsWarning if test in ("copula", "fisherz") else NoiseWarning
        warnings.warn(flat_note(flat, test, separated), category, stacklevel=3)
    return flat


def piled_note(piled) -> str:
    """The words for columns whose released histogram piles rows at a bound."""
    said = ", ".join(f"{name} {min(share, 1.0):.0%} at its {side} bound"
                     for name, side, share in piled)
    return (f"rows piled at a public bound ({said}): values beyond a bound are clamped to "
            "it and tie there, and a pile of ties can give the copula test dependences "
            "that are not in the data (or the values sit at the bound); give bounds that "
            "hold the values")


#: A pair whose released correlation is at least this in absolute value is said
#: to be near copies (``CausalReport.copies``).
NEAR_COPY = 0.99


@dataclass(frozen=True)
class CausalReport:
    """What a causal graph release spent and how (all public)."""

    private: bool
    test: str
    alpha: float
    rows: int
    bins: int
    max_condition_size: int
    epsilon: float = math.nan
    delta: float = 0.0
    statement: str = ""
    parts: tuple = ()  # (name, amount in words, noise scale) per part
    levels: tuple = ()  # LevelRecord per level run
    passes: int = 0
    sensitivities: tuple = ()
    #: correlation tests: noise scale of each released tau (0 when exact) and
    #: the smallest absolute correlation a level-0 test detects; released tables:
    #: level 0's noise scale per count and the smallest Cohen's w its tests detect;
    #: per-decision tests: level 0's decision noise scale and the smallest ``|tau|``
    #: ("tau") or Cohen's w ("g") detected with probability 0.9
    noise_scale: float = math.nan
    smallest_visible: float = math.nan
    #: the copula test's released statistic: "tau" (Kendall tau values) or "signs"
    #: (sums of signs at released medians, per row: concordances)
    statistic: str = "tau"
    #: per privacy unit: the unit, ``k``, and the noisy bounded row count (``rows``
    #: is then that count for the copula test's signs, a released table's total for
    #: the released tables)
    unit: str | None = None
    max_rows_per_unit: int | None = None
    rows_noisy: int | None = None
    #: why the search ended before ``max_condition_size`` ("" when it did not)
    ended: str = ""
    #: columns whose released statistics show (nearly) every row in one category
    #: or on one side of the cut (:func:`flat_note`)
    flat: tuple = ()
    #: released tables whose noise hides no row: the flat columns were separated
    flat_separated: bool = False
    #: pairs whose released correlation is about +-1 (near copies)
    copies: tuple = ()
    #: ``(column, "lower" | "upper", share)``: columns whose released histogram
    #: piles rows in its end bin at a public bound (:func:`piled_note`)
    piled: tuple = ()

    @property
    def tests(self) -> int:
        return sum(r.tests for r in self.levels)

    def __str__(self) -> str:
        lines = [f"causal graph ({'private' if self.private else 'NOT PRIVATE: exact'}), "
                 f"test {self.test!r}, alpha {self.alpha:g}, {self.rows} rows, "
                 f"{self.bins} bins per bounded column, conditioning on at most "
                 f"{self.max_condition_size} columns"]
        if self.unit is not None:
            said = ("the rows above are that noisy count (at least 4)"
                    if self.statistic == "signs" else
                    f"the {self.rows} rows above are its public lower bound n0"
                    if self.test == "copula" else
                    "the rows above are that count, read off the released tables")
            lines.append(f"per {self.unit}: at most {counted(self.max_rows_per_unit, 'row')} "
                         "each; the "
                         f"bounded row count is private (noisy {self.rows_noisy}); {said}; "
                         f"{NO_UNIT_ROWS}")
        if self.private:
            lines.append(self.statement)
            lines.append("budget split from public quantities, charged once before any noise:")
            for name, amount, scale in self.parts:
                noise = f", noise scale {scale:.4g}" if scale == scale else ""
                lines.append(f"  {name}: {amount}{noise}")
            if self.test in ("copula", "fisherz"):
                lines.append(f"the search reads only the released {self._released}: every "
                             "test is post-processing, whatever the number of tests and levels")
            elif self.test == "chisq":
                lines.append("each level releases the joint tables its tests read, once: "
                             "every test is post-processing, whatever the number of tests")
            else:
                lines.append("sparse vector: not used (every level is paid for its worst "
                             "case, one decision per possible edge)")
        if self.test in ("copula", "fisherz"):
            what = ("tau" if self.statistic == "tau" else
                    "sign concordance (a sum of signs over the rows, divided by n)")
            lines.append(f"  noise scale of each released {what} {self.noise_scale:.4g}; smallest "
                         f"|correlation| a test without conditioning detects "
                         f"{self.smallest_visible:.4g}")
        seen = self.smallest_visible
        if self.private and seen == seen and self.test in ("chisq", "tau", "g"):  # not NaN
            what = {"chisq": "Cohen's w =", "tau": "|Kendall tau| (untied columns)",
                    "g": "Cohen's w (the largest pair table)"}[self.test]
            scale = " (0.1 is a small dependence, 0.3 a medium one)" * (self.test == "chisq")
            found = (f"{what} {seen:.3g}{scale}" if math.isfinite(seen) else
                     "none: the noise hides every dependence")
            if self.test == "chisq":
                lines.append(f"  level 0 noise scale of each count {self.noise_scale:.4g}; "
                             "smallest dependence a test without conditioning detects (power "
                             f"about 1/2, the largest pair table, its rows spread evenly): {found}")
            else:
                units = "|Z|" if self.test == "tau" else "G"
                lines.append(f"  level 0 noise scale of each decision {self.noise_scale:.4g} "
                             f"({units} units); smallest dependence a test without "
                             f"conditioning detects with probability 0.9: {found}")
        for r in self.levels:
            blind = (f" ({r.blind} tests blind to a small dependence through the noise: "
                     "they separate nothing)") if getattr(r, "blind", 0) else ""
            lines.append(f"  level {r.level}: {r.edges_tested} edges tested with {r.tests} "
                         f"tests, {r.removed} removed{blind}")
        if self.flat:
            lines.append(f"  {flat_note(self.flat, self.test, self.flat_separated)}")
        if self.piled:
            lines.append(f"  {piled_note(self.piled)}")
        if self.private and self.test in ("tau", "g"):
            lines.append(f"  public bounds and category lists: used as given, not checked (the "
                         f"'{self.test}' test releases no histogram of a column to read them "
                         "from; a list written otherwise than the values, or bounds that "
                         "clamp many rows, change the graph without a word: a pairwise "
                         "release's check of public bounds reads them)")
        if self.copies:
            said = ", ".join(f"{a} and {b}" for a, b in self.copies)
            lines.append(f"  near copies (released |correlation| >= {NEAR_COPY:g}): {said}; PC "
                         "separates the other columns' edges through either, as it does "
                         "without noise, so one of each pair often stands alone for both")
        if self.ended:
            lines.append(f"  {self.ended}")
        lines.append(f"{self.tests} test{'s' if self.tests != 1 else ''} in {self.passes} "
                     f"pass{'es' if self.passes != 1 else ''} over the data")
        return "\n".join(lines)

    @property
    def _released(self) -> str:
        return ("tau matrix" if self.statistic == "tau" else
                "sums of signs at the released medians")

    def _repr_pretty_(self, printer, cycle):  # pragma: no cover - IPython display
        printer.text(str(self))


@dataclass(frozen=True)
class CausalGraph:
    """A CPDAG over ``columns``.

    ``graph[i, j] and graph[j, i]``: undirected edge; ``graph[i, j]`` alone:
    ``columns[i] -> columns[j]``. ``statistic`` holds, per edge ``(i, j)`` with
    ``i < j``, the statistic of its last level's weakest test: exact in
    ``causal_graph_exact``; in a private release the noisy value its last
    decision used (``|Z|`` for tau; for the G-test, ``G`` minus its threshold).
    """

    columns: tuple
    graph: np.ndarray
    separating_pairs: dict
    statistic: dict
    privacy: CausalReport
    _extra: dict = field(default_factory=dict, repr=False)

    @property
    def edges(self) -> pd.DataFrame:
        """One row per edge: ``source``, ``target``, ``directed`` (an undirected edge
        lists its columns in the frame's order) and ``statistic``."""
        rows = []
        p = len(self.columns)
        for i in range(p):
            for j in range(i + 1, p):
                if not (self.graph[i, j] or self.graph[j, i]):
                    continue
                directed = not (self.graph[i, j] and self.graph[j, i])
                a, b = (i, j) if self.graph[i, j] else (j, i)
                rows.append((self.columns[a], self.columns[b], directed,
                             self.statistic.get((i, j), math.nan)))
        return pd.DataFrame(rows, columns=["source", "target", "directed", "statistic"])

    @property
    def separating_sets(self) -> dict:
        """``{(a, b): (columns...)}`` for every pair the search separated."""
        c = self.columns
        return {(c[i], c[j]): tuple(c[k] for k in s)
                for (i, j), s in sorted(self.separating_pairs.items())}

    @property
    def skeleton(self) -> set:
        """The undirected edges as frozensets of two column names."""
        return {frozenset((a, b)) for a, b in zip(self.edges.source, self.edges.target)}

    def adjacency(self) -> pd.DataFrame:
        """The CPDAG as a 0/1 matrix (row -> column marks)."""
        return pd.DataFrame(self.graph.astype(int), index=list(self.columns),
                            columns=list(self.columns))

    @property
    def released_tau(self) -> pd.DataFrame | None:
        """Correlation tests: the released Kendall tau matrix (noisy, before any
        clamping; exact in ``causal_graph_exact``), else ``None``."""
        tau = self._extra.get("tau")
        return None if tau is None else self._frame(tau)

    @property
    def released_bins(self) -> dict | None:
        """Copula test with bins at the released quantiles: per column the bin
        of each of its equal-width fine bins (``docs/causal.md``), else ``None``."""
        bins = self._extra.get("bins")
        return None if bins is None else {c: tuple(b) for c, b in bins.items()}

    @property
    def released_margins(self) -> dict | None:
        """Copula test with bins at released quantiles: per column the noisy counts
        of its equal-width fine bins, the histograms the bins were placed from."""
        return self._extra.get("margins")

    @property
    def released_signs(self) -> pd.DataFrame | None:
        """Copula test with signs at released medians: the released (noisy) sums,
        each column's ``sum s`` on the diagonal and each pair's ``sum s_a s_b`` off it
        (``s = +1`` at or above the column's cut, ``-1`` below), else ``None``."""
        signs = self._extra.get("signs")
        if signs is None:
            return None
        p = len(self.columns)
        out = np.zeros((p, p), dtype=np.int64)
        out[np.diag_indices(p)] = signs[:p]
        iu = np.triu_indices(p, 1)
        out[iu] = signs[p:]
        out.T[iu] = signs[p:]
        return self._frame(out)

    @property
    def released_cuts(self) -> dict | None:
        """Copula test with signs at released medians: per column its cut, an index
        of its 2048 equal-width fine bins (rows in fine bins at or above it count
        ``+1``), else ``None``."""
        return self._extra.get("cuts")

    @property
    def released_tables(self) -> list | None:
        """``test="chisq"``: per level, the released noisy joint tables, as ``{(column
        names...): counts}`` with one axis per column in that order (each
        categorical column's last entry is its "other" bin), else ``None``."""
        return self._extra.get("tables")

    @property
    def correlation(self) -> pd.DataFrame | None:
        """Correlation tests: the correlation matrix the tests read
        (``sin(pi tau / 2)`` projected to a correlation matrix, or Pearson's for
        ``fisherz``), else ``None``."""
        r = self._extra.get("correlation")
        return None if r is None else self._frame(r)

    @property
    def separation_statistic(self) -> dict:
        """``{(a, b): value}``: for every pair the search separated, the statistic
        of the test that removed it (given its separating set), on the scale of
        :attr:`statistic`: ``|z|`` for the correlation tests, the noise-aware
        chi-square of the released table for ``"chisq"``, and for the per-test
        decisions the noisy value the decision used: the noisy smallest value over
        the pair's candidate sets (``|Z|`` for tau, which the noise can take below
        0; ``G`` minus its threshold for the G-test), which the separating set's
        noisy choice need not have read; exact in ``causal_graph_exact``."""
        c = self.columns
        return {(c[i], c[j]): v for (i, j), v in sorted(self._extra.get("removed", {}).items())}

    def _frame(self, values) -> pd.DataFrame:
        return pd.DataFrame(values, index=list(self.columns), columns=list(self.columns))

    def report(self) -> CausalReport:
        """The privacy report: budget, split per level, noise, tests and passes."""
        return self.privacy

    def to_dot(self) -> str:
        """The CPDAG in Graphviz DOT (``--`` lines carry ``dir=none``)."""
        lines = ["digraph cpdag {"]
        for name in self.columns:
            lines.append(f'  "{_dot(name)}";')
        for row in self.edges.itertuples(index=False):
            style = "" if row.directed else " [dir=none]"
            lines.append(f'  "{_dot(row.source)}" -> "{_dot(row.target)}"{style};')
        lines.append("}")
        return "\n".join(lines)

    def to_html(self, path, *, report: str | None = None):
        """Write one self-contained HTML page of this graph to ``path``: the CPDAG
        drawn on a circle (hover an edge for its statistic, a dashed pair for its
        separating set), the privacy statement, the budget's parts and the tables
        of edges and separating sets. ``report``: the report text to show instead
        of :meth:`report`'s (a graph read back from a run's journal). Returns the
        path."""
        return write_page(causal_view(self, report), path)

    def plot(self, ax=None, *, title: str | None = None):
        """Draw the CPDAG on a circle (matplotlib; arrows for directed edges)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 6))
        p = len(self.columns)
        angles = np.pi / 2 - 2 * np.pi * np.arange(p) / max(p, 1)
        pos = {c: (math.cos(a), math.sin(a)) for c, a in zip(self.columns, angles)}
        for row in self.edges.itertuples(index=False):
            (x0, y0), (x1, y1) = pos[row.source], pos[row.target]
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops=dict(arrowstyle="-|>" if row.directed else "-",
                                        color="0.25", lw=1.4, shrinkA=14, shrinkB=14,
                                        mutation_scale=14))
        for name, (x, y) in pos.items():
            ax.text(x, y, str(name), ha="center", va="center", fontsize=9,
                    bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.4"))
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title or ("private CPDAG" if self.privacy.private else "CPDAG (exact)"))
        return ax


def _dot(name) -> str:
    """A name as a DOT quoted string's content: backslash, quote and line breaks
    escaped (``\\n``, ``\\r``), so that every node stays on one line of the file."""
    return (str(name).replace("\\", "\\\\").replace('"', '\\"')
            .replace("\n", "\\n").replace("\r", "\\r"))
